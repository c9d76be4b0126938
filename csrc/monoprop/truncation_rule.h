// The truncation rule of a gate layer: which anticommuting terms rotate.
//
// For a layer exp(+i theta h G) at phi = 2 h theta (sin phi = sn), a held
// term a anticommuting with G is
//   untouched  when it is longer than only_rotate_len_k (k): it stays as it
//              is, and no entry records it;
//   active     when |sn * c_a| > lower_atol (strict), c_a its coefficient
//              before the layer; every term is active without lower_atol or
//              in a structural build (no coefficients to compare);
// and an active term's partner b = a xor G is kept when
//     measure(b) <= cutoff, or b is fully paired, or (coefficient-informed,
//     with upper_atol set) |sn * c_a| > upper_atol,
// measure being the length (slots set) or the support (modes touched), of
// the term b stands for (in a Clifford frame, its image). An active term
// with a kept partner asks the partner's owner to look it up; every other
// anticommuting term is quiet (layer_scan.h says what each becomes).
//
// A memory truncation raises lower_atol for the rest of its operation
// (layer_fit.h): the rule takes the larger of the two.
//
// The scan asks the rule three questions and nothing else, so a rule with
// other thresholds is another type with the same three members; it is
// copied into registers for the scan's hot loop, hence plain values only.
#pragma once

#include <cstdint>
#include <optional>

#include "monomial.h"
#include "monomial_propagator.h"

namespace monoprop {

struct TruncationRule {
  // The rule of `truncation` for one layer: `informed` when the layer has
  // coefficients to compare, `raised` a lower_atol a memory truncation set,
  // `k` the layer's only_rotate_len_k.
  static TruncationRule of(const Truncation& truncation, bool informed, std::optional<double> raised,
                           std::optional<int> k) {
    std::optional<double> atol = truncation.lower_atol;
    if (raised && (!atol || *raised > *atol)) atol = raised;
    TruncationRule r;
    r.lower = informed && atol;
    r.lower_atol = r.lower ? *atol : 0.0;
    r.upper = informed && truncation.upper_atol;
    r.upper_atol = r.upper ? *truncation.upper_atol : 0.0;
    r.cutoff = truncation.cutoff;
    r.support = truncation.type == CutoffType::Support;
    r.capped = k.has_value();
    r.k = k.value_or(0);
    return r;
  }

  // Whether a term of length() is left untouched; length is called only
  // where there is a cap (in a frame it is the length of an image).
  template <typename Length>
  [[gnu::always_inline]] bool untouched(Length&& length) const {
    return capped && length() > k;
  }
  // Whether a term whose sine branch is `moved` = |sn * c_a| is active.
  [[gnu::always_inline]] bool active(double moved) const { return !lower || moved > lower_atol; }
  // Whether an active term keeps its partner, `seen` the term the partner
  // stands for and `moved` the term's sine branch.
  template <int W>
  bool keeps_partner(const Monomial<W>& seen, double moved) const {
    const int measure = support ? seen.support() : seen.length();
    return measure <= cutoff || seen.fully_paired() || (upper && moved > upper_atol);
  }

  bool lower = false;  // lower_atol applies
  double lower_atol = 0.0;
  bool upper = false;  // upper_atol applies
  double upper_atol = 0.0;
  std::int64_t cutoff = 0;
  bool support = false;  // the cutoff measures support, not length
  bool capped = false;   // only_rotate_len_k is set
  int k = 0;
};

}  // namespace monoprop
