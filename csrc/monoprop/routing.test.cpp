// Routing (routing.h): the span of a set of xor shifts, and the strict
// parsing of the routing variables.
#include "monoprop/routing.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cpp/check.h"
#include "monoprop/comm.h"
#include "monoprop/errors.h"

using namespace monoprop;
using namespace monoprop_test;

// Routing::span against the size of the set of all xor combinations (2^span);
// then the strict parsing of the routing variables, which a serial run checks too.
static void test_routing(std::mt19937& rng) {
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::uint64_t> shifts(rng() % 6);
    for (auto& s : shifts) s = rng() & 0x3F;  // few bits: dependent sets are common
    std::vector<std::uint64_t> reach{0};
    for (const std::uint64_t s : shifts) {
      const std::size_t n = reach.size();
      for (std::size_t i = 0; i < n; ++i) reach.push_back(reach[i] ^ s);
    }
    std::sort(reach.begin(), reach.end());
    reach.erase(std::unique(reach.begin(), reach.end()), reach.end());
    CHECK(std::size_t{1} << Routing::span(shifts) == reach.size());
  }
  const mpi::Comm serial;
  auto refused = [&](const char* variable, const char* value) {
    setenv(variable, value, 1);
    bool threw = false;
    try {
      Routing(serial, 2, 8);
    } catch (const UsageError& e) {
      threw = std::string(e.what()).find(variable) != std::string::npos;
    }
    unsetenv(variable);
    return threw;
  };
  CHECK(refused("monoprop_ROUTING", "Linear"));
  CHECK(refused("monoprop_ROUTING", ""));
  CHECK(refused("monoprop_ROUTING_SEED", "-1"));
  CHECK(refused("monoprop_ROUTING_SEED", "18446744073709551616"));  // 2^64
  CHECK(!refused("monoprop_ROUTING", "splitmix"));
  CHECK(!refused("monoprop_ROUTING_SEED", "18446744073709551615"));
  const Routing one(serial, 3, 8);
  CHECK(one.ranks() == 1 && one.bits() == 0);
  for (std::uint64_t q = 0; q < 1000; ++q) CHECK(one.shard_of(q * 0x9E3779B97F4A7C15ULL) < 3);
}

TEST(test_routing_span_and_variables) {
  std::mt19937 rng(41);
  test_routing(rng);
}
