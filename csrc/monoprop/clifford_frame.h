// The Clifford frame: Clifford layers applied without touching the terms.
//
// A quarter turn exp(+i k pi/4 C) of a monomial C sends every term P that
// anticommutes with C to +-P xor C (k odd; the sign s of i P C = s (P xor C)
// and sin(k pi/2)) or to -P (k = 2), and fixes the others. That is an
// automorphism of the algebra: it maps products to products. Instead of
// relabelling the held terms, the engine keeps the composition F of every
// such map applied so far, and holds the operand in F's frame: a held key Y
// with coefficient c stands for the term c F(Y). Since F(e^{i theta h G'} Y
// e^{-i theta h G'}) is the rotation of F(Y) by F(G'), a later rotation
// exp(+i theta h G) of the operand is applied to the held terms as the
// rotation by F^-1(G) = sigma G' with coefficient sigma h. So a Clifford layer
// costs no pass over the terms, no graph entry and no replay work; nothing
// moves between shards or ranks. The frame is read where a held key meets
// the outside: truncation measures F(Y), the value weighs F(Y) against the
// reference state or the observable, and the read-outs report F(Y).
//
// F is a table: the image of each single-slot element e_s (Majorana m_s; for
// Pauli e_{2q} = X_q and e_{2q+1} = Y_q) as a signed monomial. A key is
// i^c e_{s1} ... e_{sw} over its slots ascending (algebra basis_power), so
// F(Y) is the ordered product of the images; its key alone is their xor. The
// inverse table is kept beside, for F^-1(G).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "monomial.h"

namespace monoprop {

template <typename Algebra, int W>
class CliffordFrame {
 public:
  using Key = Monomial<W>;
  using Gen = typename Algebra::template Generator<W>;
  struct Signed {
    Key key;
    int sign = 1;
  };

  CliffordFrame() = default;
  explicit CliffordFrame(int slots) : slots_(slots) {}

  bool identity() const { return forward_.empty(); }

  // The operand's terms pass through exp(+i k pi/4 c) with k in 1..3 (the
  // picture's sign already applied): F <- Q o F, F^-1 <- F^-1 o Q^-1.
  void apply(const Key& c, int k) {
    if (identity()) start();
    const Gen g(c);
    for (Signed& image : forward_) image = turn(image, g, k);
    std::vector<Signed> backward(backward_.size());
    for (std::size_t s = 0; s < backward_.size(); ++s) backward[s] = map(turn({unit(s), 1}, g, (4 - k) & 3), backward_);
    backward_ = std::move(backward);
    reshift();
  }

  // The tables F and F^-1, one signed image a slot (empty: the identity).
  const std::vector<Signed>& forward_table() const { return forward_; }
  const std::vector<Signed>& backward_table() const { return backward_; }
  // Takes saved tables; false (and the frame unchanged) unless they are both
  // empty, or one image a slot each with F^-1(F(s)) = s for every slot.
  bool restore(std::vector<Signed> forward, std::vector<Signed> backward) {
    const auto n = static_cast<std::size_t>(slots_);
    if (forward.size() != backward.size() || (!forward.empty() && forward.size() != n)) return false;
    for (std::size_t s = 0; s < forward.size(); ++s)
      for (const Signed* image : {&forward[s], &backward[s]}) {
        if (image->key.is_identity()) return false;
        for (std::size_t past = n; past < 64 * std::size_t{W}; ++past)
          if (image->key.test(static_cast<std::uint32_t>(past))) return false;
      }
    try {
      for (std::size_t s = 0; s < forward.size(); ++s) {
        const Signed back = map(forward[s], backward);
        if (!(back.key == unit(s)) || back.sign != 1) return false;
      }
    } catch (const std::logic_error&) {
      return false;
    }
    forward_ = std::move(forward);
    backward_ = std::move(backward);
    if (!forward_.empty()) reshift();
    return true;
  }

  // Whether F(y) is fully paired (a product of Z's, or of complete Majorana
  // pairs; only those weigh anything in a product state). Its unpaired slots
  // are y's, xor the shifts of y's slots whose images are unpaired otherwise
  // than the slot itself: none at all under turns of Z-type monomials.
  bool paired(const Key& y) const { return unpaired_slots(y).is_identity(); }
  // The modes of F(y) with one slot only (truncation_error weighs a dropped
  // branch by their number, reach.h).
  int unpaired_modes(const Key& y) const {
    int n = 0;
    for (const std::uint64_t w : unpaired_slots(y).words) n += std::popcount(w & kEvenSlots);
    return n;
  }

  // F(y) up to its sign: the xor of the images of y's slots.
  Key image(const Key& y) const {
    if (identity()) return y;
    Key out;
    for_slots(y, [&](std::size_t s) { out = out ^ forward_[s].key; });
    return out;
  }
  // F(y) with its sign.
  Signed forward(const Key& y) const { return identity() ? Signed{y, 1} : map({y, 1}, forward_); }
  // F^-1(x) with its sign.
  Signed backward(const Key& x) const { return identity() ? Signed{x, 1} : map({x, 1}, backward_); }

  std::size_t bytes() const {
    return (forward_.capacity() + backward_.capacity()) * sizeof(Signed) + shift_.capacity() * sizeof(Key);
  }

 private:
  // Both slots of every mode of F(y) that holds one only.
  Key unpaired_slots(const Key& y) const {
    Key odd = unpaired(y), moved;
    for (int w = 0; w < W; ++w) moved.words[w] = y.words[w] & shifted_.words[w];
    for_slots(moved, [&](std::size_t s) { odd = odd ^ shift_[s]; });
    return odd;
  }
  // The slots of x whose partner slot (2q, 2q + 1) is not set with it.
  static Key unpaired(const Key& x) {
    Key out;
    for (int w = 0; w < W; ++w) {
      const std::uint64_t odd = (x.words[w] ^ (x.words[w] >> 1)) & kEvenSlots;
      out.words[w] = odd | (odd << 1);
    }
    return out;
  }
  // The per-slot shifts paired() reads, from the forward table.
  void reshift() {
    shift_.assign(static_cast<std::size_t>(slots_), Key{});
    shifted_ = Key{};
    for (std::size_t s = 0; s < forward_.size(); ++s) {
      shift_[s] = unpaired(forward_[s].key) ^ unpaired(unit(s));
      if (!shift_[s].is_identity()) shifted_.set(static_cast<std::uint32_t>(s));
    }
  }
  void start() {
    shift_.assign(static_cast<std::size_t>(slots_), Key{});
    for (int s = 0; s < slots_; ++s) {
      forward_.push_back({unit(static_cast<std::size_t>(s)), 1});
      backward_.push_back({unit(static_cast<std::size_t>(s)), 1});
    }
  }
  static Key unit(std::size_t s) {
    Key k;
    k.set(static_cast<std::uint32_t>(s));
    return k;
  }
  template <typename Visit>
  static void for_slots(const Key& y, Visit&& visit) {
    for (int w = 0; w < W; ++w)
      for (std::uint64_t bits = y.words[w]; bits; bits &= bits - 1)
        visit(static_cast<std::size_t>(64 * w + std::countr_zero(bits)));
  }

  // A signed monomial through one quarter-turn map exp(+i k pi/4 C).
  static Signed turn(const Signed& p, const Gen& g, int k) {
    if (k == 0 || !Algebra::anticommutes(p.key, g)) return p;
    if (k == 2) return {p.key, -p.sign};
    const int s = Algebra::anticommuting_sign(p.key, g);  // i P C = s (P xor C)
    return {p.key ^ g.bits, (k == 1 ? 1 : -1) * s * p.sign};
  }
  // The ordered product of the table's images of p's slots, times p's basis
  // phase and sign; a Hermitian image has a real phase, so the power is even.
  static Signed map(const Signed& p, const std::vector<Signed>& table) {
    Key acc;
    int power = Algebra::basis_power(p.key) + (p.sign < 0 ? 2 : 0);
    for_slots(p.key, [&](std::size_t s) {
      const Signed& e = table[s];
      power += Algebra::product_power(acc, e.key) + (e.sign < 0 ? 2 : 0);
      acc = acc ^ e.key;
    });
    if (power & 1) throw std::logic_error("Clifford frame: a Hermitian monomial mapped to a non-Hermitian one.");
    return {acc, (power & 3) == 0 ? 1 : -1};
  }

  int slots_ = 0;
  std::vector<Signed> forward_, backward_;  // empty: the identity
  std::vector<Key> shift_;                  // per slot, for paired()
  Key shifted_;                             // the slots whose shift is not 0
};

}  // namespace monoprop
