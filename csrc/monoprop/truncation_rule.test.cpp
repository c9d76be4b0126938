// The truncation rule (truncation_rule.h), against the rule written out
// plainly over every combination of settings, and through a propagation
// where the rule alone decides the value.
#include "monoprop/truncation_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "cpp/check.h"
#include "monoprop/propagator.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

// A term as the plain rule sees it: each mode's two slots.
struct Modes {
  std::vector<int> lo, hi;
  int length() const {
    int n = 0;
    for (std::size_t m = 0; m < lo.size(); ++m) n += lo[m] + hi[m];
    return n;
  }
  int support() const {
    int n = 0;
    for (std::size_t m = 0; m < lo.size(); ++m) n += lo[m] | hi[m];
    return n;
  }
  bool paired() const {
    for (std::size_t m = 0; m < lo.size(); ++m)
      if (lo[m] != hi[m]) return false;
    return true;
  }
  Monomial<2> key() const {
    Monomial<2> k;
    for (std::size_t m = 0; m < lo.size(); ++m) {
      if (lo[m]) k.set(static_cast<std::uint32_t>(2 * m));
      if (hi[m]) k.set(static_cast<std::uint32_t>(2 * m + 1));
    }
    return k;
  }
};

}  // namespace

// Every combination of cutoff, measure, tolerances, a raised lower_atol,
// informed or structural, and a length cap, on random terms of 1..64 modes
// whose sine branches sit on, below and above each threshold.
TEST(test_truncation_rule_against_plain) {
  std::mt19937 rng(17);
  std::bernoulli_distribution coin(0.5), sparse(0.08);
  const std::vector<std::optional<double>> lowers = {std::nullopt, 1e-3};
  const std::vector<std::optional<double>> uppers = {std::nullopt, 1e-2};
  const std::vector<std::optional<double>> raises = {std::nullopt, 5e-4, 2e-3};
  const std::vector<std::optional<int>> caps = {std::nullopt, 0, 3};
  const std::vector<double> moves = {0.0, 4e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 0.5};
  std::vector<Modes> terms;
  for (int trial = 0; trial < 40; ++trial) {
    Modes t;
    const int modes = 1 + static_cast<int>(rng() % 64);
    const bool wide = coin(rng);
    for (int m = 0; m < modes; ++m) {
      const bool on = wide ? coin(rng) : sparse(rng);
      const int both = coin(rng);
      t.lo.push_back(on && (both || coin(rng)));
      t.hi.push_back(on && (both || !t.lo.back()));
    }
    terms.push_back(t);
  }
  int checked = 0;
  for (const std::int64_t cutoff : {0, 1, 2, 4, 8, 200})
    for (const CutoffType type : {CutoffType::Length, CutoffType::Support})
      for (const auto& lower : lowers)
        for (const auto& upper : uppers)
          for (const auto& raised : raises)
            for (const bool informed : {false, true})
              for (const auto& k : caps) {
                Truncation t;
                t.cutoff = cutoff;
                t.type = type;
                t.lower_atol = lower;
                t.upper_atol = upper;
                const TruncationRule rule = TruncationRule::of(t, informed, raised, k);
                // The lower_atol in force: the larger of the setting and the raise.
                std::optional<double> atol = lower;
                if (raised) atol = atol ? std::max(*atol, *raised) : *raised;
                for (const Modes& term : terms) {
                  int calls = 0;
                  const bool untouched = rule.untouched([&] {
                    ++calls;
                    return term.length();
                  });
                  CHECK(untouched == (k && term.length() > *k));
                  CHECK(calls == (k ? 1 : 0));  // the length only where there is a cap
                  const int measure = type == CutoffType::Support ? term.support() : term.length();
                  for (const double moved : moves) {
                    CHECK(rule.active(moved) == (!informed || !atol || moved > *atol));
                    const bool keeps = measure <= cutoff || term.paired() || (informed && upper && moved > *upper);
                    CHECK(rule.keeps_partner(term.key(), moved) == keeps);
                    ++checked;
                  }
                }
              }
  CHECK(checked == 6 * 2 * 2 * 2 * 3 * 2 * 3 * 40 * 8);
}

// Pauli Z0 = 1e-5 and Y0 = 2e-5 under exp(+i pi/4 X0), which swaps them: with
// lower_atol 1e-4 both are quiet, so both end near 0 and <Z0> with them;
// without it they swap, and <Z0> is Y0's 2e-5 up to sign. With lower_atol
// 2e-5 both stay quiet, Y0's branch (exactly 2e-5) too: the threshold is strict.
TEST(test_truncation_rule_decides_a_swap) {
  auto value_with = [](std::optional<double> lower_atol) {
    Config config;
    config.family = Family::Pauli;
    config.num_modes = 1;
    config.initial_operator = {Term{{0, 1}, 1e-5}, Term{{1}, 2e-5}};  // Z0, Y0
    config.truncation.cutoff = 2;
    config.truncation.lower_atol = lower_atol;
    Propagator<PauliAlgebra, 1> p(config, {}, 1, Family::Pauli);
    CircuitSpec x0;
    x0.layers.push_back({{0}, 0.5, 0, 0});  // exp(+i theta/2 X0): phi = theta
    x0.n_parameters = x0.n_gates = 1;
    p.propagate(x0, {M_PI / 2}, std::nullopt);
    return p.expectation_value({}, 0.0, nullptr);
  };
  CHECK(std::abs(value_with(1e-4)) < 1e-20);
  CHECK(std::abs(std::abs(value_with(std::nullopt)) - 2e-5) < 1e-20);
  CHECK(std::abs(value_with(2e-5)) < 1e-20);
  CHECK(std::abs(std::abs(value_with(1e-5)) - 2e-5) < 1e-20);  // Y0 rotates, and takes Z0 with it
}
