// Where a dropped branch can still matter: the reach of truncation_error.
//
// A branch sn c M' that a layer drops would have gone on through the layers
// after it (in application order) to the end of the propagation: the
// reference state (Heisenberg), where only fully paired monomials weigh
// anything, or the observable (Schrodinger). Its contribution to the error is
// sn c times the weight its exact later image finds there. Two things about
// that image are known from the circuit alone, at every parameter vector:
//
// *Dark branches.* A rotation by G maps P to cos P + sin (P xor G), a noise
// layer scales P or (a Transfer by K) also feeds P xor K, and a quarter turn
// by C maps P to +-(P xor C) where P anticommutes with C. So every term of
// the image of M' lies in the affine space M' + span(the later generators),
// pushed through the later quarter turns. Let V be the linear space of the
// monomials that can reach the end at all in this sense: at the end, the
// fully paired monomials (Heisenberg) or the span of the observable's terms
// (Schrodinger); before a rotation by G, V + span(G); before a quarter turn
// with map S (P -> P xor [P anticommutes C] C), S^-1(V). A branch outside V
// contributes exactly 0, and the bound leaves it out. V is held as its checks
// h (P is in V iff every parity <h, P> is even); a rotation removes one
// check, so after as many layers as there are checks none is left and every
// branch may reach: the test costs nothing in the layers far from the end.
//
// *Unpaired modes* (Heisenberg). A fully paired monomial carries both slots
// of every mode it touches (Z, or a pair m_2j m_2j+1). A branch with u modes
// of one slot only (Pauli: X or Y) reaches the state only if later gates
// turn each of them, each turn weighing by a sine. The estimate weighs a
// branch by beta^u (reach_weight). In the Schrodinger picture a branch must
// turn into a term of the observable: it is weighed by beta^d, d the fewest
// modes in which it differs from a term, times that term's share of the
// observable's norm.
//
// Checks and keys here are in true coordinates (the monomials the circuit
// names) unless said otherwise; the engine holds keys in a Clifford frame
// (clifford_frame.h), and held_checks() turns a check into one on held keys.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "monomial.h"

namespace monoprop {

// The estimate's weight of a dropped branch `distance` turns from the end:
// base^distance, with base kReachBase (Heisenberg: unpaired modes) or
// kStateBase (Schrodinger: modes that differ from an observable term). The
// estimate is kEstimateScale times the root of the sum of (w sn c)^2. The
// three constants were chosen by measurement on the workloads of
// benchmarks/truncation_error.py (the most cases within 3x of the actual error).
inline constexpr double kReachBase = 0.2;
inline constexpr double kStateBase = 0.1;
inline constexpr double kEstimateScale = 0.7;
// base^d for d = 0 .. 256 (the most slots a key has), as a product of d
// factors: a table, since the scan weighs every branch it drops.
struct ReachPowers {
  double of[257];
  explicit constexpr ReachPowers(double base) : of{} {
    of[0] = 1.0;
    for (int d = 1; d < 257; ++d) of[d] = of[d - 1] * base;
  }
};
inline constexpr ReachPowers kReachPowers{kReachBase}, kStatePowers{kStateBase};
inline double reach_weight(int distance, double base = kReachBase) {
  const ReachPowers& powers = base == kStateBase ? kStatePowers : kReachPowers;
  return distance <= 0 ? 1.0 : distance > 256 ? 0.0 : powers.of[distance];
}

// Schrodinger: a branch's distance is the fewest modes in which it differs
// from a term of the observable, for observables of at most this many terms;
// for larger ones, the modes it touches past the widest term's.
inline constexpr std::size_t kNearestTargets = 64;

// Modes (qubits) of a key with exactly one of their two slots set.
template <int W>
int unpaired_modes(const Monomial<W>& key) {
  int n = 0;
  for (int k = 0; k < W; ++k) n += std::popcount((key.words[k] ^ (key.words[k] >> 1)) & kEvenSlots);
  return n;
}

// <a, b> over GF(2): the parity of the slots both hold.
template <int W>
bool parity(const Monomial<W>& a, const Monomial<W>& b) {
  int n = 0;
  for (int k = 0; k < W; ++k) n += std::popcount(a.words[k] & b.words[k]);
  return n & 1;
}

// What a layer's lit dropped branches add up to (net of those a lookup finds
// after all): sum x (the bound), x^2 and x^2 w^2 (the estimate), for each
// branch's weight x = |sn c| (1 where no coefficients are known) and reach
// weight w.
struct ReachTally {
  double sum = 0.0, squares = 0.0, weighted = 0.0;
  double reached = 0.0;    // sum x sqrt(w): what the error budget spends (layer_budget.h)
  std::int64_t count = 0;  // branches: where 0, the sums are 0 but for rounding
  // Of the branches counted, before any was taken back (sign -1): where the
  // net sums cancel to a few bits, the mean weight reads these instead.
  double counted_squares = 0.0, counted_weighted = 0.0;
  void add(double x, double w, double sign = 1.0) {
    sum += sign * x;
    squares += sign * x * x;
    weighted += sign * x * x * w * w;
    reached += sign * x * std::sqrt(w);
    count += sign > 0 ? 1 : -1;
    if (sign > 0) {
      counted_squares += x * x;
      counted_weighted += x * x * w * w;
    }
  }
  ReachTally& operator+=(const ReachTally& other) {
    sum += other.sum;
    squares += other.squares;
    weighted += other.weighted;
    reached += other.reached;
    count += other.count;
    counted_squares += other.counted_squares;
    counted_weighted += other.counted_weighted;
    return *this;
  }
  // The mean w^2 of the branches dropped, weighed by x^2 (1 where none was),
  // to 16 significant bits: a build in pieces, which starts each piece from a
  // replay of the graph so far, sees coefficients a few ulps from those one
  // build evolves, and must record the same graph. Where taking branches back
  // cancelled all but 10 bits of the sums, the mean of those counted stands in.
  double reach() const {
    const bool cancelled = !(squares > 0x1p-10 * counted_squares);
    const double num = cancelled ? counted_weighted : weighted, den = cancelled ? counted_squares : squares;
    if (!(den > 0.0)) return 1.0;
    const double r = std::min(1.0, std::max(0.0, num / den));
    int e = 0;
    const double m = std::frexp(r, &e);
    return std::ldexp(std::round(m * 65536.0) / 65536.0, e);
  }
};

// A linear space V of monomials, as its checks: P is in V iff <h, P> is even
// for every check h. The checks stay linearly independent.
template <int W>
class ReachSpace {
 public:
  using Key = Monomial<W>;

  // The fully paired monomials of n modes: one check per mode, its two slots.
  static ReachSpace paired(int modes) {
    ReachSpace out;
    for (int q = 0; q < modes; ++q) {
      Key h;
      h.set(static_cast<std::uint32_t>(2 * q));
      h.set(static_cast<std::uint32_t>(2 * q + 1));
      out.checks_.push_back(h);
    }
    return out;
  }
  // The space {0} of `slots` slots: one check per slot (add() then spans terms).
  static ReachSpace zero(int slots) {
    ReachSpace out;
    for (int s = 0; s < slots; ++s) {
      Key h;
      h.set(static_cast<std::uint32_t>(s));
      out.checks_.push_back(h);
    }
    return out;
  }

  // V + span(g): the checks that g breaks are combined with one of them,
  // which then goes.
  void add(const Key& g) {
    std::size_t pivot = checks_.size();
    for (std::size_t i = 0; i < checks_.size(); ++i) {
      if (!parity(checks_[i], g)) continue;
      if (pivot == checks_.size())
        pivot = i;
      else
        checks_[i] = checks_[i] ^ checks_[pivot];
    }
    if (pivot == checks_.size()) return;
    checks_[pivot] = checks_.back();
    checks_.pop_back();
  }

  // S^-1(V) for the quarter turn S(P) = P xor [P anticommutes C] C, where
  // `omega` is the vector whose parity with P says whether P anticommutes with
  // C (anticommutation is linear in P): <h, S P> = <h, P> xor <omega, P> <h, C>,
  // so each check h with <h, C> odd becomes h xor omega.
  void turn(const Key& c, const Key& omega) {
    for (Key& h : checks_)
      if (parity(h, c)) h = h ^ omega;
  }

  bool contains(const Key& p) const {
    for (const Key& h : checks_)
      if (parity(h, p)) return false;
    return true;
  }
  bool everything() const { return checks_.empty(); }
  const std::vector<Key>& checks() const { return checks_; }

 private:
  std::vector<Key> checks_;
};

// The omega of ReachSpace::turn for a quarter turn by C. Pauli: P and C
// anticommute iff sum over qubits of x_P z_C + z_P x_C is odd; with a letter's
// slots (a, b) = (x ^ z, z) that is sum of a_P b_C + b_P a_C: C with the two
// slots of each qubit swapped. Majorana: iff |P||C| + |P and C| is odd: C,
// complemented on every slot when |C| is odd.
template <bool Majorana, int W>
Monomial<W> anticommutation_vector(const Monomial<W>& c, int slots) {
  Monomial<W> out;
  if constexpr (Majorana) {
    out = c;
    if (c.length() & 1)
      for (int s = 0; s < slots; ++s) out.words[s >> 6] ^= std::uint64_t{1} << (s & 63);
  } else {
    for (int k = 0; k < W; ++k) {
      const std::uint64_t w = c.words[k];
      out.words[k] = ((w & kEvenSlots) << 1) | ((w >> 1) & kEvenSlots);
    }
  }
  return out;
}

// A check h on true monomials as one on held keys y, which stand for F(y):
// <h, F(y)> is the xor over y's slots s of <h, F(e_s)>. `image(s)` gives the
// key of F(e_s).
template <int W, typename Image>
std::vector<Monomial<W>> held_checks(const std::vector<Monomial<W>>& checks, int slots, Image&& image) {
  std::vector<Monomial<W>> out(checks.size());
  for (int s = 0; s < slots; ++s) {
    const Monomial<W> e = image(s);
    for (std::size_t i = 0; i < checks.size(); ++i)
      if (parity(checks[i], e)) out[i].set(static_cast<std::uint32_t>(s));
  }
  return out;
}

}  // namespace monoprop
