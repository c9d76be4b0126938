#include "memory_budget.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace monoprop {
namespace {

// A whole file's text ("" where it cannot be read).
std::string read_text(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

// The cgroup (v2) limit, or 0 when there is none.
std::uint64_t cgroup_max() {
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string value;
  if (!(cgroup >> value) || value == "max") return 0;
  char* end = nullptr;
  const unsigned long long limit = std::strtoull(value.c_str(), &end, 10);
  return end && *end == '\0' ? limit : 0;
}

std::uint64_t physical_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  std::uint64_t bytes = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
  // A container's limit (cgroup v2) is what the kernel enforces first.
  const std::uint64_t limit = cgroup_max();
  if (limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;
  return bytes;
}

// The value of "name value" on its own line of `text` (0 when absent).
std::uint64_t field(const std::string& text, const std::string& name) {
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    std::istringstream rest(text.substr(at + name.size()));
    unsigned long long value = 0;
    if (rest >> value) return value;
  }
  return 0;
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
                     "18446744073709551615 (unset it for the default: 80% of the memory available when an "
                     "operation starts).");
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

std::uint64_t meminfo_available(const std::string& text) {
  return field(text, "MemAvailable:") * 1024;  // the kernel writes kB (KiB)
}

std::uint64_t available_bytes() {
  std::uint64_t available = meminfo_available(read_text("/proc/meminfo"));
  // In a container the cgroup's room is what counts: its limit less what it
  // charges, the inactive page cache (which the kernel reclaims first) aside.
  if (const std::uint64_t limit = cgroup_max()) {
    const std::uint64_t current = field(read_text("/sys/fs/cgroup/memory.current"), "");
    const std::uint64_t cache = field(read_text("/sys/fs/cgroup/memory.stat"), "inactive_file ");
    const std::uint64_t charged = current > cache ? current - cache : 0;
    const std::uint64_t room = limit > charged ? limit - charged : 0;
    if (available == 0 || room < available) available = room;
  }
  return available;
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

MemoryBudget::MemoryBudget(std::optional<std::uint64_t> given) : given_(given) {
  if (given_) {
    limit_ = *given_;
  } else if (const char* raw = std::getenv("monoprop_MEMORY_LIMIT")) {
    limit_ = parse_limit(raw);
    from_environment_ = true;
  } else {
    start();
  }
}

void MemoryBudget::set_default(std::uint64_t resident, std::uint64_t available, std::uint64_t physical) {
  held_ = resident;
  available_ = available;
  const std::uint64_t most = physical / 10 * 9;
  // Unknown available memory: 90% of the physical; unknown machine: no budget.
  std::uint64_t limit = most;
  from_available_ = false;
  if (available > 0) {
    const auto share = static_cast<std::uint64_t>(kAvailableShare * static_cast<double>(available));
    from_available_ = most == 0 || resident + share < most;
    if (from_available_) limit = resident + share;
  }
  limit_ = limit == 0 ? ~std::uint64_t{0} : limit;
}

void MemoryBudget::start() {
  if (!given_ && !from_environment_) set_default(resident_bytes(), available_bytes(), physical_bytes());
  refresh();
}

void MemoryBudget::refresh() {
  resident_.store(resident_bytes(), std::memory_order_relaxed);
  granted_.store(0, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(reclaiming_);
  reclaimed_ = false;
}

bool MemoryBudget::try_grant(std::uint64_t bytes) {
  const std::uint64_t before = granted_.fetch_add(bytes, std::memory_order_relaxed);
  if (resident_.load(std::memory_order_relaxed) + before + bytes <= limit_) return true;
  granted_.fetch_sub(bytes, std::memory_order_relaxed);
  return false;
}

bool MemoryBudget::grant(std::uint64_t bytes) {
  if (bytes == 0 || try_grant(bytes)) return true;
  {
    const std::lock_guard<std::mutex> lock(reclaiming_);
    if (!reclaimed_) {
      reclaimed_ = true;
      malloc_trim(0);
      // What was granted since the last reading and is allocated by now
      // counts twice: a refusal errs on the safe side.
      resident_.store(resident_bytes(), std::memory_order_relaxed);
    }
  }
  return try_grant(bytes);
}

std::string MemoryBudget::describe() const {
  std::string text = "memory budget of " + format_bytes(limit_) + " (";
  if (given_)
    text += "the memory_limit=" + std::to_string(*given_) + " the propagator was given";
  else if (from_environment_)
    text += "monoprop_MEMORY_LIMIT=" + std::to_string(limit_);
  else if (from_available_)
    text += "the default: the " + format_bytes(held_) +
            " this process held when the operation started plus 80% of the " + format_bytes(available_) +
            " then available; memory_limit= or monoprop_MEMORY_LIMIT sets it in bytes";
  else
    text += "the default: 90% of the physical memory; memory_limit= or monoprop_MEMORY_LIMIT sets it in bytes";
  return text + ")";
}

}  // namespace monoprop
