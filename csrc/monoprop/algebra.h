// The two operator algebras, as template parameters of the engine (no
// virtual call in the hot loop). Each answers, for a held monomial P and a
// gate generator G (both Hermitian basis monomials):
//   - do P and G anticommute, and if so
//   - the sign s in  i * P * G = s * (P xor G),
// which is all a rotation exp(+i theta h G) needs:
//   P -> cos(2 h theta) P + sin(2 h theta) * s * (P xor G).
// And the expectation of P in a computational-basis product state.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "majorana_phase.h"
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
    std::array<int, W> active{};  // words where the generator has factors
    int n_active = 0;

    explicit Generator(const Monomial<W>& g) : bits(g), length(g.length()) {
      for (int k = 0; k < W; ++k)
        if (g.words[k] != 0) active[n_active++] = k;
      below_parity = below_parities(g);
    }
  };

  // Bit a of the result: the parity of the number of g's factors below slot a.
  template <int W>
  static Monomial<W> below_parities(const Monomial<W>& g) {
    Monomial<W> out;
    std::uint64_t carry = 0;
    for (int k = 0; k < W; ++k) {
      std::uint64_t x = g.words[k];
      x ^= x << 1;
      x ^= x << 2;
      x ^= x << 4;
      x ^= x << 8;
      x ^= x << 16;
      x ^= x << 32;
      out.words[k] = (x << 1) ^ carry;
      if (std::popcount(g.words[k]) & 1) carry = ~carry;
    }
    return out;
  }

  // The power e of i in M_A M_B = i^e M_{A xor B}: the Hermitian phases of
  // both factors and of the result, and the parity of the swaps that sort
  // m_A m_B (each factor of B passes the factors of A above it).
  template <int W>
  static int product_power(const Monomial<W>& a, const Monomial<W>& b) {
    const Monomial<W> below = below_parities(b);
    int swaps = 0;
    for (int k = 0; k < W; ++k) swaps += std::popcount(a.words[k] & below.words[k]);
    return (pairs(a.length()) + pairs(b.length()) - pairs((a ^ b).length()) + 2 * swaps) & 3;
  }
  // The power c of i in M_S = i^c m_{s1} ... m_{sw}, the slots ascending.
  template <int W>
  static int basis_power(const Monomial<W>& p) {
    return pairs(p.length());
  }

  // Anticommuting iff |P||G| - |P and G| is odd: the parity of the shared
  // factors (odd_bits over the generator's active words) and of |P||G|.
  static constexpr bool kLengthMatters = true;
  template <int W>
  static std::uint64_t odd_bits(std::uint64_t word, int w, const Generator<W>& g) {
    return word & g.bits.words[g.active[w]];
  }
  template <int W>
  static bool length_parity(int length, const Generator<W>& g) {
    return length & g.length & 1;
  }

  // `p` is anything with word(k) and length(), such as a Monomial.
  template <int W, typename Term>
  static bool anticommutes(const Term& p, const Generator<W>& g) {
    std::uint64_t odd = 0;
    for (int w = 0; w < g.n_active; ++w) odd ^= odd_bits(p.word(g.active[w]), w, g);
    return (std::popcount(odd) & 1) ^ length_parity(p.length(), g);
  }

  // The bit columns (bit_columns.h) whose xor is 1 exactly for the terms that
  // anticommute with g: the slots of g, and the length-parity column (index
  // `slots`) when g has odd length.
  template <int W>
  static void scan_columns(const Monomial<W>& g, int slots, std::vector<int>& out) {
    out.clear();
    for (int s = 0; s < slots; ++s)
      if (g.test(static_cast<std::uint32_t>(s))) out.push_back(s);
    if (g.length() & 1) out.push_back(slots);
  }
  static constexpr bool kParityColumn = true;

  // The sign s of i M_P M_G = s M_{P xor G}, for P and G known to anticommute.
  template <int W>
  static int anticommuting_sign(const Monomial<W>& p, const Generator<W>& g) {
    int plen = 0, common = 0, swaps = 0;
    for (int k = 0; k < W; ++k) {
      plen += std::popcount(p.words[k]);
      common += std::popcount(p.words[k] & g.bits.words[k]);
      swaps += std::popcount(p.words[k] & g.below_parity.words[k]);
    }
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
  static int pairs(int w) { return hermitian_phase_power(static_cast<std::uint64_t>(w)); }
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
    std::array<std::uint64_t, W> x, z;  // symplectic form, at even slots
    std::array<int, W> active;
    int n_active = 0;
    explicit Generator(const Monomial<W>& g) : bits(g) {
      for (int k = 0; k < W; ++k) {
        if (g.words[k] == 0) continue;
        l[n_active] = letters(g.words[k]);
        const std::uint64_t a = g.words[k] & kEvenSlots, b = (g.words[k] >> 1) & kEvenSlots;
        x[n_active] = a ^ b;  // X = (1,0) and Y = (0,1) carry an x part
        z[n_active] = b;      // Y and Z carry a z part
        active[n_active++] = k;
      }
    }
  };

  // Anticommutation is the parity of the symplectic product x_P.z_G + z_P.x_G:
  // the popcount parity of the xor of odd_bits over the generator's active
  // words (w-th active word of P given); P's length plays no part.
  static constexpr bool kLengthMatters = false;
  template <int W>
  static std::uint64_t odd_bits(std::uint64_t word, int w, const Generator<W>& g) {
    const std::uint64_t b = (word >> 1) & kEvenSlots, x = (word & kEvenSlots) ^ b;
    return (x & g.z[w]) ^ (b & g.x[w]);
  }
  template <int W>
  static bool length_parity(int, const Generator<W>&) {
    return false;
  }

  // `p` is anything with word(k), such as a Monomial.
  template <int W, typename Term>
  static bool anticommutes(const Term& p, const Generator<W>& g) {
    std::uint64_t odd = 0;
    for (int w = 0; w < g.n_active; ++w) odd ^= odd_bits(p.word(g.active[w]), w, g);
    return std::popcount(odd) & 1;
  }

  // The bit columns whose xor is 1 exactly for the Pauli strings P that
  // anticommute with g: per qubit of g, the part of P's letter the symplectic
  // product x_P z_g + z_P x_g reads. With slots (a, b) = (2q, 2q+1) a letter
  // has x = a ^ b and z = b, so g = X reads b, g = Y reads a, g = Z reads a ^ b.
  template <int W>
  static void scan_columns(const Monomial<W>& g, int slots, std::vector<int>& out) {
    out.clear();
    for (int q = 0; 2 * q < slots; ++q) {
      const bool a = g.test(static_cast<std::uint32_t>(2 * q)), b = g.test(static_cast<std::uint32_t>(2 * q + 1));
      if (a) out.push_back(2 * q + 1);
      if (b) out.push_back(2 * q);
    }
  }
  static constexpr bool kParityColumn = false;

  // The sign s of i P G = s (P xor G), for P and G known to anticommute.
  template <int W>
  static int anticommuting_sign(const Monomial<W>& p, const Generator<W>& g) {
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

  // The power e of i in A B = i^e (A xor B), letter by letter: XY = iZ,
  // YZ = iX, ZX = iY, and the reverse orders give -i.
  template <int W>
  static int product_power(const Monomial<W>& a, const Monomial<W>& b) {
    int cyclic = 0, anticyclic = 0;
    for (int k = 0; k < W; ++k) {
      const Letters x = letters(a.words[k]), y = letters(b.words[k]);
      cyclic += std::popcount((x.x & y.y) | (x.y & y.z) | (x.z & y.x));
      anticyclic += std::popcount((x.y & y.x) | (x.z & y.y) | (x.x & y.z));
    }
    return (cyclic - anticyclic) & 3;
  }
  // The power c of i in P = i^c e_{s1} ... e_{sw}, slots ascending, with
  // e_{2q} = X_q and e_{2q+1} = Y_q: Z = -i X Y, so c = -(number of Z).
  template <int W>
  static int basis_power(const Monomial<W>& p) {
    int z = 0;
    for (int k = 0; k < W; ++k) z += std::popcount(p.words[k] & (p.words[k] >> 1) & kEvenSlots);
    return (-z) & 3;
  }
};

// 0 when P and G commute, otherwise the sign s of i P G = s (P xor G).
template <typename Algebra, int W>
int rotation_sign(const Monomial<W>& p, const typename Algebra::template Generator<W>& g) {
  return Algebra::anticommutes(p, g) ? Algebra::anticommuting_sign(p, g) : 0;
}

}  // namespace monoprop
