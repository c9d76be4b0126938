// A monomial is a fixed-width bit vector over 2n slots.
//
// Majorana front-end: slot j set <=> the factor m_j is present; the monomial
// stands for the Hermitian basis element M_S = i^{C(|S|,2)} m_{s1}...m_{sw}.
// Pauli front-end: qubit q owns slots 2q and 2q+1, and the pair of bits
// spells the letter: (1,0) = X, (0,1) = Y, (1,1) = Z, (0,0) = I. In both
// front-ends the product of two monomials is the xor of their bits (up to a
// phase that the algebra computes).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace monoprop {

// Bits at even positions: slot 2q of every qubit/mode inside one word.
inline constexpr std::uint64_t kEvenSlots = 0x5555555555555555ULL;

template <int W>
struct Monomial {
  std::array<std::uint64_t, W> words{};

  friend Monomial operator^(const Monomial& a, const Monomial& b) {
    Monomial r;
    for (int k = 0; k < W; ++k) r.words[k] = a.words[k] ^ b.words[k];
    return r;
  }
  friend bool operator==(const Monomial& a, const Monomial& b) {
    std::uint64_t diff = 0;  // branch-free: no memcmp call in the hot loop
    for (int k = 0; k < W; ++k) diff |= a.words[k] ^ b.words[k];
    return diff == 0;
  }

  std::uint64_t word(int k) const { return words[k]; }

  bool is_identity() const {
    std::uint64_t any = 0;
    for (int k = 0; k < W; ++k) any |= words[k];
    return any == 0;
  }
  void set(std::uint32_t slot) { words[slot >> 6] |= std::uint64_t{1} << (slot & 63); }
  bool test(std::uint32_t slot) const { return (words[slot >> 6] >> (slot & 63)) & 1U; }

  // Number of set slots: Majorana length, or the "slot length" that
  // only_rotate_len_k counts for both front-ends (X/Y one slot, Z two).
  int length() const {
    int n = 0;
    for (int k = 0; k < W; ++k) n += std::popcount(words[k]);
    return n;
  }
  // Number of modes (qubits) with at least one slot set.
  int support() const {
    int n = 0;
    for (int k = 0; k < W; ++k) n += std::popcount((words[k] | (words[k] >> 1)) & kEvenSlots);
    return n;
  }
  // Every touched mode has both of its slots: a product of Z's (or of
  // complete Majorana pairs), the only monomials with a non-zero expectation
  // in a computational-basis product state.
  bool fully_paired() const {
    std::uint64_t odd = 0;
    for (int k = 0; k < W; ++k) odd |= (words[k] ^ (words[k] >> 1)) & kEvenSlots;
    return odd == 0;
  }

  std::uint64_t hash() const {
    std::uint64_t h = words[0];
    for (int k = 1; k < W; ++k) h ^= std::rotl(words[k] * 0x9E3779B97F4A7C15ULL, 7 * k);
    return splitmix64(h);
  }

  static std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }
};

}  // namespace monoprop
