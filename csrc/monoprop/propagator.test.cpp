// The whole engine (propagator.h) where its own paths are the thing tested:
// the shard ceiling, interrupts, and the memory budget of many threads. Self
// contained: it needs no helper but the checks.
#include "monoprop/propagator.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cpp/check.h"

using namespace monoprop;
using namespace monoprop_test;

// The shard ceiling through the propagator's own path, with 8-bit shard
// indices (255 terms a shard) and two shards: a build or propagation that
// would cross it is refused, and the propagator is left as it was and usable.
TEST(test_propagator_ceiling) {
  setenv("monoprop_NUM_THREADS", "2", 1);
  Config config;
  config.family = Family::Pauli;
  config.num_modes = 6;
  config.initial_operator = {Term{{0, 1}, 1.0}};  // Z0
  config.truncation.cutoff = 12;
  using Small = Propagator<PauliAlgebra, 1, std::uint8_t>;
  // Every qubit rotated by X and Y, then ZZ and XX on neighbours, six times:
  // 4094 terms at the end, far past two shards of 255.
  CircuitSpec big;
  auto add = [&](std::vector<std::uint32_t> slots) {
    big.layers.push_back({std::move(slots), 0.5, big.n_parameters++, big.n_gates++});
  };
  for (int rep = 0; rep < 6; ++rep)
    for (std::uint32_t q = 0; q < 6; ++q) {
      add({2 * q});
      add({2 * q + 1});
      if (q + 1 < 6) {
        add({2 * q, 2 * q + 1, 2 * q + 2, 2 * q + 3});
        add({2 * q, 2 * q + 2});
      }
    }
  CircuitSpec small;
  small.layers.push_back({{0}, 0.5, 0, 0});
  small.n_parameters = small.n_gates = 1;

  Small p(config, {}, 6, Family::Pauli);
  CHECK(p.num_threads() == 2);
  p.build_graph(small, std::nullopt, std::nullopt);
  const std::vector<double> theta = {0.3};
  const double value = p.expectation_value(theta, 0.0, nullptr);
  const std::size_t size = p.size();
  const auto graph = p.graph_size();
  bool refused = false;
  try {
    p.build_graph(big, std::nullopt, std::nullopt);
  } catch (const ShardCeilingError& e) {
    refused = std::string(e.what()).find("at most 255") != std::string::npos;
  }
  CHECK(refused);
  CHECK(p.valid() && p.size() == size && p.graph_size() == graph && p.graph_layers() == 1);
  CHECK(p.expectation_value(theta, 0.0, nullptr) == value);

  Small q(config, {}, 6, Family::Pauli);
  const std::vector<double> angles(static_cast<std::size_t>(big.n_parameters), 0.4);
  refused = false;
  try {
    q.propagate(big, angles, std::nullopt);
  } catch (const ShardCeilingError&) {
    refused = true;
  }
  CHECK(refused);
  CHECK(q.valid() && q.size() == 1 && q.expectation_value({}, 0.0, nullptr) == 1.0);
  q.propagate(small, theta, std::nullopt);  // still usable: exp(+i 0.3 * 0.5 X0) takes <Z0> to cos 0.3
  CHECK(q.size() == 2 && std::abs(q.expectation_value({}, 0.0, nullptr) - std::cos(0.3)) < 1e-15);
  unsetenv("monoprop_NUM_THREADS");
}

// An interrupt check that says stop at its k-th question (asked at every poll:
// interval 0, stride 1): a build or propagation throws Interrupted and leaves
// the propagator as it was, a replay changes nothing; all stay usable.
TEST(test_interrupt) {
  setenv("monoprop_NUM_THREADS", "2", 1);
  Config config;
  config.family = Family::Pauli;
  config.num_modes = 4;
  config.initial_operator = {Term{{0, 1}, 1.0}};  // Z0
  config.truncation.cutoff = 8;
  CircuitSpec circuit;
  for (int rep = 0; rep < 3; ++rep)
    for (std::uint32_t q = 0; q < 4; ++q) {
      circuit.layers.push_back({{2 * q}, 0.5, circuit.n_parameters++, circuit.n_gates++});
      if (q + 1 < 4) circuit.layers.push_back({{2 * q, 2 * q + 3}, 0.5, circuit.n_parameters++, circuit.n_gates++});
    }
  const std::vector<double> theta(static_cast<std::size_t>(circuit.n_parameters), 0.4);
  int asked = 0, stop_at = 0;
  auto check = [&] { return ++asked == stop_at; };
  auto interrupted = [&](int k, auto&& call) {
    asked = 0;
    stop_at = k;
    try {
      call();
    } catch (const Interrupted&) {
      return true;
    }
    return false;
  };

  using P = Propagator<PauliAlgebra, 1>;
  P p(config, {}, 4, Family::Pauli), reference(config, {}, 4, Family::Pauli);
  p.set_interrupt_check(check, std::chrono::steady_clock::duration::zero(), 1);
  p.build_graph(circuit, theta, std::nullopt);  // never stopped: stop_at = 0
  reference.build_graph(circuit, theta, std::nullopt);
  const std::vector<double> both(2 * theta.size(), 0.3);
  const std::size_t size = p.size();
  const double value = p.expectation_value(theta, 0.0, nullptr);
  CHECK(interrupted(5, [&] { p.build_graph(circuit, both, std::nullopt); }));
  CHECK(p.valid() && p.size() == size && p.graph_layers() == circuit.layers.size());
  CHECK(p.expectation_value(theta, 0.0, nullptr) == value);
  std::vector<double> gradient, expected;
  CHECK(interrupted(3, [&] { p.expectation_value_and_gradient(theta, gradient, 0.0, nullptr); }));
  CHECK(p.valid() && p.expectation_value_and_gradient(theta, gradient, 0.0, nullptr) ==
                         reference.expectation_value_and_gradient(theta, expected, 0.0, nullptr));
  CHECK(gradient == expected);
  p.build_graph(circuit, both, std::nullopt);  // usable: as if never interrupted
  reference.build_graph(circuit, both, std::nullopt);
  CHECK(p.size() == reference.size() &&
        p.expectation_value(both, 0.0, nullptr) == reference.expectation_value(both, 0.0, nullptr));

  P q(config, {}, 4, Family::Pauli), fresh(config, {}, 4, Family::Pauli);
  q.set_interrupt_check(check, std::chrono::steady_clock::duration::zero(), 1);
  CHECK(interrupted(7, [&] { q.propagate(circuit, theta, std::nullopt); }));
  CHECK(q.valid() && q.size() == 1 && q.expectation_value({}, 0.0, nullptr) == 1.0);
  q.propagate(circuit, theta, std::nullopt);  // stop_at 7 passed: runs to the end
  fresh.propagate(circuit, theta, std::nullopt);
  CHECK(q.size() == fresh.size() && q.expectation_value({}, 0.0, nullptr) == fresh.expectation_value({}, 0.0, nullptr));
  unsetenv("monoprop_NUM_THREADS");
}

// A thread count whose empty shards would pass the memory budget is refused
// at construction with MemoryBudgetError, before the shards exist: the
// resident memory does not grow by their size. 999999 threads would take
// 48 TB (lists of lookups for every shard in every shard); 64 fit.
TEST(test_thread_count_past_budget) {
  const std::uint64_t held = resident_bytes();
  const std::string limit = std::to_string(held + (std::uint64_t{64} << 20));
  setenv("monoprop_MEMORY_LIMIT", limit.c_str(), 1);
  setenv("monoprop_NUM_THREADS", "999999", 1);
  Config config;
  config.family = Family::Pauli;
  config.num_modes = 4;
  config.initial_operator = {Term{{0, 1}, 1.0}};  // Z0
  config.truncation.cutoff = 8;
  using P = Propagator<PauliAlgebra, 1>;
  std::string message;
  try {
    P p(config, {}, 4, Family::Pauli);
  } catch (const MemoryBudgetError& e) {
    message = e.what();
  }
  auto has = [&](const char* part) { return message.find(part) != std::string::npos; };
  CHECK(has("monoprop_NUM_THREADS=999999") && has("999999 shards") && has("48.0 TB"));
  CHECK(has("monoprop_MEMORY_LIMIT") && has("fewer threads") && has("Nothing was allocated"));
  CHECK(resident_bytes() < held + (std::uint64_t{16} << 20));
  // The message names the largest count that fits (about 1160 in 64 MB); 64 constructs.
  const std::size_t at = message.find("at most ");
  const long long most = at == std::string::npos ? 0 : std::stoll(message.substr(at + 8));
  CHECK(most >= 64 && most < 999999);
  setenv("monoprop_NUM_THREADS", "64", 1);
  bool built = false;
  try {
    P p(config, {}, 4, Family::Pauli);
    built = p.num_threads() == 64 && p.size() == 1;
  } catch (const MemoryBudgetError&) {
  }
  CHECK(built);
  // The bound is T (b + 2T v): from the T = 1 and T = 2 values, T^2 grows it.
  const std::uint64_t one = P::empty_shards_bytes(1, 1, 8), two = P::empty_shards_bytes(2, 1, 8);
  CHECK(P::empty_shards_bytes(999999, 1, 8) > std::uint64_t{47} * 1000000000000);
  CHECK(two > 2 * one &&
        P::empty_shards_bytes(std::uint64_t{1} << 31, 1, 8) == std::numeric_limits<std::uint64_t>::max());
  unsetenv("monoprop_NUM_THREADS");
  unsetenv("monoprop_MEMORY_LIMIT");
}
