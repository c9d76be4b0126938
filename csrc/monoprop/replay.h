// Replaying one shard's part of a graph layer (graph.h), forward and back.
//
// c[s] (forward) or state[s] (backward) is the coefficient array of shard s
// of the rank; an entry reaches into the shard its part names. Forward sweeps
// run on plain arrays of coefficients, the reverse sweep on interleaved
// (c, lambda) states.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "column.h"
#include "graph.h"
#include "rotation.h"

namespace monoprop {

// What a forward sweep leaves for the reverse sweep of the same replay.
//
// A pared replay records a flag per rotating entry, in forward order:
// whether paring reduced it to its cos scaling; `cursor` is where the reverse
// sweep reads the current layer's flags from.
//
// The reverse sweep recovers a scaled entry's input by dividing its output by
// cos (rotation.h). The division is exact to an ulp, but the output it
// divides was rebuilt by rewinding every later entry that reached the slot,
// with an error of an ulp of their values; each division multiplies that
// error by 1 / |cos|. A term that a truncated graph only scales, layer after
// layer, shrinks by the product of those cosines, and the error of its
// rebuilt input grows by its inverse: near a quarter turn (cos = 6e-17 at a
// Clifford angle) at once, at cos = 0.7 within a hundred layers. So each slot
// keeps a debt, the shrink its scalings have added since its input was last
// kept, in sixteenths of a bit; a scaling that takes the debt to kBudget
// keeps its input in `inputs` (with the debt before it in `owed`) and clears
// the debt. The reverse sweep, which meets the debts as the forward sweep
// left them, takes a kept input where it finds a slot's debt cleared, and so
// divides through at most a factor 2^8 between kept inputs: an error of a
// few hundred ulps at most, while a budget of one bit kept inputs every few
// layers at generic angles, a cost on every truncated graph. A pared pair keeps
// both inputs in any layer that shrinks. `starts` holds where each shrinking
// layer's inputs begin.
struct ReplayTape {
  static constexpr unsigned kBudget = 8 * 16;  // 8 bits, in sixteenths; fits the uint8 debt with one more shrink

  // The shrink of a scaling by cs in sixteenths of a bit, rounded up, at most
  // the budget; 0 for |cs| >= 1, which no division makes worse.
  static unsigned shrink(double cs) {
    const double a = std::abs(cs);
    if (!(a < 1.0)) return 0;
    if (!(a > 1.0 / 256)) return kBudget;
    return std::min(kBudget, static_cast<unsigned>(std::ceil(-16.0 * std::log2(a))));
  }

  Column<std::uint8_t> flags;
  std::size_t cursor = 0;
  Column<double> inputs;
  Column<std::uint8_t> owed;
  std::vector<std::size_t> starts;
  Column<std::uint8_t> debt;  // per slot of the shard

  // Ready for a forward sweep over a shard of `slots` terms.
  void begin(std::size_t slots, bool reverse) {
    flags.clear();
    inputs.clear();
    owed.clear();
    starts.clear();
    if (reverse) debt.assign(slots, 0);
  }
  std::size_t bytes() const { return flags.bytes() + inputs.bytes() + owed.bytes() + debt.bytes(); }
};

// The branches a bounded forward sweep drops (truncation_error): each cos
// entry is a term c M whose sine branch sn * c M' the graph does not keep, and
// a pared entry drops the sine branches of both its inputs. `sum` adds |sn *
// c| over the branches that may reach the end of the propagation (the bound)
// and `squares` (sn * c)^2 times their weight (the estimate, squared;
// reach.h); `plain_sum` and `plain_squares` count every branch with weight 1,
// as is right once later layers follow (forget_reach). A shard's sums go into
// its own Dropped, which the caller folds in ascending shard order.
struct Dropped {
  double sum = 0.0, squares = 0.0;
  double plain_sum = 0.0, plain_squares = 0.0;
  Dropped& operator+=(const Dropped& other) {
    sum += other.sum;
    squares += other.squares;
    plain_sum += other.plain_sum;
    plain_squares += other.plain_squares;
    return *this;
  }
  // Later layers come between these branches and the end: their reach is no longer known.
  void forget_reach() {
    sum = plain_sum;
    squares = plain_squares;
  }
};

// How a bounded sweep counts a layer's cos entries (LayerInfo::reach): the
// squares of the lit ones times `weight`, and the dark ones (weight 1) only
// where `dark` is set.
struct DropRule {
  double weight = 1.0;
  bool dark = true;
};

// Sums |x| and x^2 of the dropped branches' inputs in four interleaved lanes,
// so that the adds do not wait on each other (one chain would cost an add's
// latency, about four cycles, per entry where the sweep itself takes one or
// two); the lanes fold in a fixed order, so the sums are bitwise reproducible.
class DropSum {
 public:
  void add(double x) { add(x, lane_[k_++ & 3]); }
  // Adds x into a lane of the caller's choice (an unrolled loop keeps its
  // lanes in registers, and hands them over with of_lanes).
  static void add(double x, rotation::V2& lane) {
    const rotation::V2 v = {std::abs(x), x * x};
    lane += v;
  }
  // The sums of four lanes an unrolled loop kept in registers.
  static DropSum of_lanes(const rotation::V2& l0, const rotation::V2& l1, const rotation::V2& l2,
                          const rotation::V2& l3) {
    DropSum out;
    out.lane_[0] = l0;
    out.lane_[1] = l1;
    out.lane_[2] = l2;
    out.lane_[3] = l3;
    return out;
  }
  // Adds n values whose sums (|x|, x^2) are `sums`, into lane w % 4.
  void add_sums(std::size_t w, const rotation::V2& sums, std::size_t n) {
    lane_[w & 3] += sums;
    k_ += n;
  }
  // How many values it took.
  std::size_t count() const { return k_; }
  // What the layer dropped at sin sn.
  Dropped at(double sn) const {
    const rotation::V2 s = (lane_[0] + lane_[1]) + (lane_[2] + lane_[3]);
    const double sum = std::abs(sn) * s[0], squares = sn * sn * s[1];
    return {sum, squares, sum, squares};
  }
  // The same for a layer's cos entries (rule: LayerInfo::reach): the lit ones
  // (this) and the dark ones.
  Dropped at(double sn, const DropSum& dark, const DropRule& rule) const {
    const Dropped lit = at(sn), out = dark.at(sn);
    return {lit.sum + (rule.dark ? out.sum : 0.0), rule.weight * lit.squares + (rule.dark ? out.squares : 0.0),
            lit.sum + out.sum, lit.squares + out.squares};
  }

 private:
  rotation::V2 lane_[4] = {};
  std::size_t k_ = 0;
};

// Forward at (cos, sin) = (cs, sn). With pare > 0 an entry whose moved weight
// |sn| * max|c| is below pare is reduced to its cos scaling (an approximation).
// With a tape (when a reverse sweep follows) the layer records its flags and
// the inputs its scalings keep. With `dropped` the sweep also adds what it
// drops there as `rule` says (a separate instantiation: a plain sweep's loop
// is unchanged). handover[o], where given and not null, is the buffer through
// which the entries of the parts toward shard o reach their partners
// (hand_over).
void forward_layer(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare,
                   ReplayTape* tape, Dropped* dropped = nullptr, double* const* handover = nullptr, DropRule rule = {});

// Backwards on interleaved states (c_0, lambda_0, c_1, ...): c enters as the
// layer's output and is rewound to its input; lambda enters as d f / d c_out
// and leaves as d f / d c_in. Returns d f along the layer's scalar (d f / d
// phi for a rotation, d f / d rate for a noise layer; see Turn). A pared
// layer reads its flags from tape->cursor; the scalings take the inputs they
// kept from the tape.
double adjoint_layer(const ShardLayer& layer, const Turn& turn, double* const* state, int self, double pare,
                     ReplayTape* tape, double* const* handover = nullptr);

// Flags a pared forward sweep of `layer` records.
std::size_t pare_flags(const ShardLayer& layer);

// Handover. In a team replay, thread s owns shard s's buffer, but an entry
// filed under shard s whose partner lives in shard o writes both, so two
// cores would write the same cache lines at random places, each write pulling
// a line from the other core's cache. Instead, for a layer, the owner of
// shard o copies the partners of shard s's part toward o into a buffer of
// their own, in entry order (hand_over); after a barrier shard s rotates
// against that buffer, reading and writing it in order, a line at a time;
// after the next barrier shard o copies the results back (take_back). Every
// entry does the same arithmetic on the same values, so the results are
// bitwise those of the direct replay.
//
// Copies the partners (stride doubles each, from the buffer c of shard
// `shard`) of the entries of `layer` that reach into that shard into `via`,
// part after part, in the order the sweeps walk them.
void hand_over(const ShardLayer& layer, int shard, const double* c, std::size_t stride, double* via);
// Copies them back from `via` into c.
void take_back(const ShardLayer& layer, int shard, double* c, std::size_t stride, const double* via);
// Partners a part hands over, and those of all parts of `layer` toward `shard`.
inline std::size_t handover_size(const Part& part) {
  return std::size_t{part.births.count} + part.pairs.count + part.halves.count;
}
std::size_t handover_size(const ShardLayer& layer, int shard);

// A small graph spelled out once for replays on the calling thread alone.
// Inside an optimiser a small graph is replayed thousands of times, and with
// T shards its layers hold a few entries a shard: opening each shard's
// sections, layer after layer, then costs more than the arithmetic. The
// entries here are the sections' own, in the order the sweeps walk them, and
// each is applied with the same kernel, so the results are bitwise those of
// forward_layer and adjoint_layer (unpared).
class FlatGraph {
 public:
  // Spells out graphs[s], the layers of shard s, for every shard.
  void assign(const std::vector<const Graph*>& graphs);
  void clear();
  bool empty() const { return spans_.empty(); }
  std::size_t memory() const;

  // forward_layer and adjoint_layer of layer l for every shard, in ascending
  // order; adjoint writes shard s's d f / d phi_l to d[s].
  // tapes[s] as in forward_layer, for every shard (null: no reverse sweep);
  // dropped[s], when given, receives shard s's dropped branches.
  void forward(std::size_t l, double cs, double sn, double* const* c, ReplayTape* const* tapes,
               Dropped* dropped = nullptr, DropRule rule = {}) const;
  void adjoint(std::size_t l, const Turn& turn, double* const* state, double* d, ReplayTape* const* tapes) const;

 private:
  struct Entry {
    std::uint32_t a, other, b;  // a of this shard, b of shard `other`
    std::int8_t sign;
    bool half;  // a half (x rotated, y received), else a pair or a birth
  };
  struct Span {
    std::uint32_t cos_end, rotations_end;  // where shard s's entries of layer l end in cos_ and rotations_
    std::uint32_t dark;                    // how many of its cos entries, the last, are dark
  };

  template <bool Bound>
  void sweep(std::size_t l, double cs, double sn, double* const* c, ReplayTape* const* tapes, Dropped* dropped,
             DropRule rule) const;

  std::size_t shards_ = 0;
  std::vector<std::uint32_t> cos_;
  std::vector<Entry> rotations_;
  std::vector<Span> spans_;  // [l * shards + s]
};

}  // namespace monoprop
