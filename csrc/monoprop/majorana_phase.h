// The phase that makes a product of Majoranas Hermitian.
//
// For w distinct Majoranas, reversing the product m_1 ... m_w takes C(w, 2)
// swaps of anticommuting factors, so (m_1 ... m_w)^dagger = (-1)^{C(w,2)}
// m_1 ... m_w. The monomial M_S = i^{C(w,2)} m_S is therefore Hermitian, and
// the bare product is anti-Hermitian exactly when C(w, 2) is odd, that is when
// w mod 4 is 2 or 3.
#pragma once

#include <complex>
#include <cstdint>

namespace monoprop {

// C(w, 2) mod 4: M_S = i^{that} m_S for a product of w Majoranas.
constexpr int hermitian_phase_power(std::uint64_t w) { return static_cast<int>((w * (w - 1) / 2) % 4); }

// True iff the bare product of w Majoranas is anti-Hermitian (C(w, 2) odd).
constexpr bool is_antihermitian_product(std::uint64_t w) { return (w % 4) >= 2; }

// i^{C(w,2) + 1}: the factor that turns the bare product of w Majoranas into
// i M_S, the anti-Hermitian generator of exp(theta i M_S).
inline std::complex<double> antihermitian_generator_correction(std::uint64_t w) {
  static constexpr std::complex<double> kPowersOfI[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  return kPowersOfI[(hermitian_phase_power(w) + 1) % 4];
}

}  // namespace monoprop
