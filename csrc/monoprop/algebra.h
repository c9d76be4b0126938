// The two operator algebras, as template parameters of the engine (no
// virtual call in the hot loop). Each answers, for a held monomial P and a
// gate generator G (both Hermitian basis monomials):
//   - do P and G anticommute, and if so
//   - the sign s in  i * P * G = s * (P xor G),
// which is all a rotation exp(+i theta h G) needs:
//   P -> cos(2 h theta) P + sin(2 h theta) * s * (P xor G).
// And the expectation of P in a computational-basis product state.
#pragma once

#include <bit>
#include <cstdint>

#include "monomial.h"

namespace monoprop {

enum class Family : std::uint8_t { Pauli, Majorana };

// Majorana monomials M_S = i^{C(w,2)} m_{s1}...m_{sw}.
struct MajoranaAlgebra {
  static constexpr Family family = Family::Majorana;

  template <int W>
  struct Generator {
    Monomial<W> bits;
    // Bit a is the parity of the number of generator factors below slot a:
    // the parity of the swaps needed to sort m_P m_G.
    Monomial<W> below_parity;
    int length;

    explicit Generator(const Monomial<W>& g) : bits(g), length(g.length()) {
      std::uint64_t carry = 0;
      for (int k = 0; k < W; ++k) {
        std::uint64_t x = g.words[k];
        x ^= x << 1;
        x ^= x << 2;
        x ^= x << 4;
        x ^= x << 8;
        x ^= x << 16;
        x ^= x << 32;
        below_parity.words[k] = (x << 1) ^ carry;
        if (std::popcount(g.words[k]) & 1) carry = ~carry;
      }
    }
  };

  // Returns 0 when P and G commute, otherwise the sign s = +-1.
  template <int W>
  static int rotation_sign(const Monomial<W>& p, const Generator<W>& g) {
    int plen = 0, common = 0, swaps = 0;
    for (int k = 0; k < W; ++k) {
      plen += std::popcount(p.words[k]);
      common += std::popcount(p.words[k] & g.bits.words[k]);
      swaps += std::popcount(p.words[k] & g.below_parity.words[k]);
    }
    if (((plen * g.length - common) & 1) == 0) return 0;
    const int rlen = plen + g.length - 2 * common;
    // i * i^{C(p,2)} * i^{C(g,2)} * (-1)^swaps * i^{-C(r,2)}: a power of i,
    // real because P and G anticommute.
    const int e = 1 + pairs(plen) + pairs(g.length) - pairs(rlen) + 2 * swaps;
    return (e & 3) == 0 ? 1 : -1;
  }

  // <ref| M_S |ref> for the product state with occupied modes marked at
  // their even slot: M_S of k complete pairs is (-1)^k prod Z_j.
  template <int W>
  static double reference_overlap(const Monomial<W>& p, const Monomial<W>& occupied) {
    if (!p.fully_paired()) return 0.0;
    int parity = 0;
    for (int k = 0; k < W; ++k)
      parity += std::popcount(p.words[k] & kEvenSlots) + std::popcount(p.words[k] & occupied.words[k]);
    return (parity & 1) ? -1.0 : 1.0;
  }

 private:
  static int pairs(int w) { return (w * (w - 1) / 2) & 3; }
};

// Pauli strings in the slot encoding of monomial.h.
struct PauliAlgebra {
  static constexpr Family family = Family::Pauli;

  struct Letters {
    std::uint64_t x, y, z;  // one bit per qubit, at the qubit's even slot
  };
  static Letters letters(std::uint64_t w) {
    const std::uint64_t a = w & kEvenSlots, b = (w >> 1) & kEvenSlots;
    return {a & ~b, b & ~a, a & b};
  }

  template <int W>
  struct Generator {
    Monomial<W> bits;
    // Only the words the generator touches matter: elsewhere one side is I.
    std::array<Letters, W> l;
    std::array<int, W> active;
    int n_active = 0;
    explicit Generator(const Monomial<W>& g) : bits(g) {
      for (int k = 0; k < W; ++k) {
        if (g.words[k] == 0) continue;
        l[n_active] = letters(g.words[k]);
        active[n_active++] = k;
      }
    }
  };

  template <int W>
  static int rotation_sign(const Monomial<W>& p, const Generator<W>& g) {
    // Symplectic test first (most terms commute with a given gate): letters
    // differ on a qubit iff exactly one of the slot pairs' bits disagree in
    // the pattern below; an odd count of such qubits means anticommuting.
    std::uint64_t odd = 0;
    for (int w = 0; w < g.n_active; ++w) {
      const Letters a = letters(p.words[g.active[w]]);
      const Letters& b = g.l[w];
      odd ^= (a.x & (b.y | b.z)) ^ (a.y & (b.x | b.z)) ^ (a.z & (b.x | b.y));
    }
    if ((std::popcount(odd) & 1) == 0) return 0;
    int cyclic = 0, anticyclic = 0;
    for (int w = 0; w < g.n_active; ++w) {
      const Letters a = letters(p.words[g.active[w]]);
      const Letters& b = g.l[w];
      // XY = iZ, YZ = iX, ZX = iY; the reverse orders give -i.
      cyclic += std::popcount((a.x & b.y) | (a.y & b.z) | (a.z & b.x));
      anticyclic += std::popcount((a.y & b.x) | (a.z & b.y) | (a.x & b.z));
    }
    return ((1 + cyclic - anticyclic) & 3) == 0 ? 1 : -1;
  }

  template <int W>
  static double reference_overlap(const Monomial<W>& p, const Monomial<W>& occupied) {
    if (!p.fully_paired()) return 0.0;
    int parity = 0;
    for (int k = 0; k < W; ++k) parity += std::popcount(p.words[k] & occupied.words[k]);
    return (parity & 1) ? -1.0 : 1.0;
  }
};

}  // namespace monoprop
