// The memory budget (memory_budget.h): its default from /proc/meminfo and
// the message that names where the limit comes from.
#include "monoprop/memory_budget.h"

#include <cstdint>
#include <cstdlib>
#include <string>

#include "cpp/check.h"

using namespace monoprop;
using namespace monoprop_test;

// The default memory budget: MemAvailable parsed from /proc/meminfo's text
// (kB, on its own line), then resident + 80% of it, at most 90% of the
// physical memory; the message names where the limit comes from.
TEST(test_memory_budget_default) {
  const std::string meminfo =
      "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   12000000 kB\n"
      "Buffers:          100 kB\nSwapCached:   5 kB\n";
  CHECK(meminfo_available(meminfo) == std::uint64_t{12000000} * 1024);
  CHECK(meminfo_available("MemTotal: 5 kB\n") == 0);
  CHECK(meminfo_available("XMemAvailable: 7 kB\n") == 0);  // a line of its own only
  CHECK(meminfo_available("A: 1 kB\nMemAvailable: 7 kB\n") == 7 * 1024);
  MemoryBudget budget(std::uint64_t{1} << 40);  // a given limit: the default is not read
  CHECK(budget.limit() == std::uint64_t{1} << 40 && budget.given());
  CHECK(budget.describe().find("memory_limit=1099511627776") != std::string::npos);
  const std::uint64_t GB = 1000000000;
  unsetenv("monoprop_MEMORY_LIMIT");
  budget = MemoryBudget();  // the default, whose readings the test sets
  budget.set_default(GB, 10 * GB, 24 * GB);
  CHECK(budget.limit() == 9 * GB);  // 1 GB held + 80% of 10 GB
  const std::string text = budget.describe();
  CHECK(text.find("memory budget of 9.0 GB") == 0 && text.find("1.0 GB this process held") != std::string::npos &&
        text.find("80% of the 10.0 GB then available") != std::string::npos &&
        text.find("monoprop_MEMORY_LIMIT") != std::string::npos);
  budget.set_default(GB, 30 * GB, 24 * GB);  // capped at 90% of the physical memory
  CHECK(budget.limit() == 24 * GB / 10 * 9 && budget.describe().find("90% of the physical") != std::string::npos);
  budget.set_default(GB, 0, 24 * GB);  // available unknown
  CHECK(budget.limit() == 24 * GB / 10 * 9);
  budget.set_default(0, 0, 0);  // nothing known: no budget
  CHECK(budget.limit() == ~std::uint64_t{0});
  // This machine: the process fits now.
  MemoryBudget here;
  CHECK(available_bytes() > 0 && here.limit() > resident_bytes());
}
