#include "memory_budget.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace monoprop {
namespace {

std::uint64_t physical_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  std::uint64_t bytes = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
  // A container's limit (cgroup v2) is what the kernel enforces first.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string value;
  if (cgroup >> value && value != "max") {
    char* end = nullptr;
    const unsigned long long limit = std::strtoull(value.c_str(), &end, 10);
    if (end && *end == '\0' && limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;
  }
  return bytes;
}

std::uint64_t parse_limit(const char* raw) {
  const std::string value(raw);
  std::uint64_t n = 0;
  bool ok = !value.empty();
  for (const char ch : value) {
    if (ch < '0' || ch > '9' || n > (~std::uint64_t{0} - 9) / 10) {
      ok = false;
      break;
    }
    n = n * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  if (!ok || n == 0)
    throw UsageError("monoprop_MEMORY_LIMIT='" + value +
                     "' is not a byte count: it must be decimal digits for a number of bytes from 1 to "
                     "18446744073709551615 (unset it to allow 90% of the physical memory).");
  return n;
}

}  // namespace

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return read == 2 ? resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

std::string format_bytes(std::uint64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e12)
    std::snprintf(text, sizeof text, "%.1f TB", b / 1e12);
  else if (b >= 1e9)
    std::snprintf(text, sizeof text, "%.1f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(text, sizeof text, "%.1f MB", b / 1e6);
  else
    std::snprintf(text, sizeof text, "%.0f kB", b / 1e3);
  return text;
}

MemoryBudget::MemoryBudget() {
  const char* raw = std::getenv("monoprop_MEMORY_LIMIT");
  limit_ = raw ? parse_limit(raw) : physical_bytes() / 10 * 9;
  if (limit_ == 0) limit_ = ~std::uint64_t{0};  // unknown machine: no budget
}

void MemoryBudget::refresh() {
  resident_ = resident_bytes();
  granted_.store(0, std::memory_order_relaxed);
}

bool MemoryBudget::grant(std::uint64_t bytes) {
  if (bytes == 0) return true;
  const std::uint64_t before = granted_.fetch_add(bytes, std::memory_order_relaxed);
  if (resident_ + before + bytes <= limit_) return true;
  granted_.fetch_sub(bytes, std::memory_order_relaxed);
  return false;
}

}  // namespace monoprop
