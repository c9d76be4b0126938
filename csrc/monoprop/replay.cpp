#include "replay.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "rotation.h"

namespace monoprop {
namespace {
using namespace rotation;

// Walks a births, pairs or halves section: apply(a, b, s) for each entry in
// order, with s = +-1. Counted: b is first + k for the k-th entry (a birth's
// slot, or a place in a handover buffer); else b comes from the partner
// stream, and prefetch(b) is called kAhead entries before the entry (the
// partners are scattered; a ascends, which the hardware follows). Where
// apply returns a value (the reverse sweep's d f along the layer), adds them
// to `sum` in entry order and returns it: a local here stays in a register,
// where a sum that the lambda added to by reference would take a store and a
// load per entry (the entries' double stores may alias it).
template <bool Counted, typename Prefetch, typename Apply>
double for_each_entry(const ShardLayer& layer, const Section& section, std::uint32_t first, Prefetch&& prefetch,
                      Apply&& apply, double sum = 0.0) {
  constexpr std::uint32_t kAhead = 16;
  static constexpr double kSign[2] = {1.0, -1.0};
  const std::uint32_t n = section.count;
  SectionReader reader(layer, section);
  auto partner = [&](std::uint32_t k) { return Counted ? first + k : reader.partner(k); };
  if (!Counted)
    for (std::uint32_t k = 0; k < std::min(kAhead, n); ++k) prefetch(partner(k));
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!Counted && k + kAhead < n) prefetch(partner(k + kAhead));
    bool negative;
    const std::uint32_t a = reader.next(negative);
    if constexpr (std::is_void_v<std::invoke_result_t<Apply&, std::uint32_t, std::uint32_t, double>>)
      apply(a, partner(k), kSign[negative]);
    else
      sum += apply(a, partner(k), kSign[negative]);
  }
  return sum;
}

// Calls pair(a, b, s) for a part's births and pairs and half(a, b, s) for
// its halves, in that order, adding what they return to `sum` as
// for_each_entry does. With `handed`, b is the entry's place in the part's
// handover buffer (hand_over) instead of its slot.
template <typename Prefetch, typename Pair, typename Half>
double for_each_part_entry(const ShardLayer& layer, const Part& part, bool handed, Prefetch&& prefetch, Pair&& pair,
                           Half&& half, double sum = 0.0) {
  if (handed) {
    auto none = [](std::uint32_t) {};
    const std::uint32_t births = part.births.count, pairs = part.pairs.count;
    sum = for_each_entry<true>(layer, part.births, 0, none, pair, sum);
    sum = for_each_entry<true>(layer, part.pairs, births, none, pair, sum);
    return for_each_entry<true>(layer, part.halves, births + pairs, none, half, sum);
  }
  sum = for_each_entry<true>(layer, part.births, part.births.base, prefetch, pair, sum);
  sum = for_each_entry<false>(layer, part.pairs, 0, prefetch, pair, sum);
  return for_each_entry<false>(layer, part.halves, 0, prefetch, half, sum);
}

// The partner slots of a part's entries, in the order for_each_part_entry
// walks them: f(b) for each. The pairs' and halves' partners are
// scattered: prefetch(b) is called kAhead entries before f.
template <typename Prefetch, typename F>
void for_each_partner(const ShardLayer& layer, const Part& part, Prefetch&& prefetch, F&& f) {
  constexpr std::uint32_t kAhead = 16;
  for (std::uint32_t i = 0; i < part.births.count; ++i) f(part.births.base + i);
  for (const Section* section : {&part.pairs, &part.halves}) {
    const SectionReader reader(layer, *section);
    const std::uint32_t n = section->count;
    for (std::uint32_t i = 0; i < std::min(kAhead, n); ++i) prefetch(reader.partner(i));
    for (std::uint32_t i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch(reader.partner(i + kAhead));
      f(reader.partner(i));
    }
  }
}

// Calls apply(part, a, b, s, half) for every rotating entry of a layer, in
// the order the sweeps walk them: part by part, births, pairs, then halves.
template <typename Apply>
void for_each_rotation(const ShardLayer& layer, Apply&& apply) {
  auto none = [](std::uint32_t) {};
  for (const Part& part : layer.parts) {
    auto as = [&](bool half) {
      return [&, half](std::uint32_t a, std::uint32_t b, double s) { apply(part, a, b, s, half); };
    };
    for_each_part_entry(layer, part, false, none, as(false), as(true));
  }
}

// Walks the cos section: apply(a) for each entry in order.
template <typename Apply>
void for_each_cos(const ShardLayer& layer, Apply&& apply) {
  SectionReader reader(layer, layer.cos);
  for (std::uint32_t k = 0; k < layer.cos.count; ++k) apply(reader.cos());
}

// A layer's side of the tape (ReplayTape) on one shard: the forward sweep
// keeps the inputs of the scalings that clear a slot's debt, and the reverse
// sweep takes them back in the same order.
class Keeper {
 public:
  // The debts' address is held apart from the tape: a store through a byte
  // pointer may alias anything, so the compiler would reload it from the tape
  // after every debt it writes.
  Keeper(ReplayTape* tape, unsigned shrink) : tape_(tape), debt_(tape ? tape->debt.data() : nullptr), shrink_(shrink) {}

  // Before a layer that keeps at most `most` inputs: room for them, so that
  // keep() is two plain stores (a call that grows the tape would make the
  // sweep reload what it holds in registers after every scaling).
  void begin_forward(std::size_t most) {
    tape_->starts.push_back(tape_->inputs.size());
    tape_->inputs.reserve(tape_->inputs.size() + most);
    tape_->owed.reserve(tape_->owed.size() + most);
  }
  // Slot a, holding x, is about to be scaled.
  [[gnu::always_inline]] void scaled(std::uint32_t a, double x) {
    std::uint8_t& debt = debt_[a];
    const unsigned after = debt + shrink_;
    if (after < ReplayTape::kBudget) {
      debt = static_cast<std::uint8_t>(after);
      return;
    }
    keep(x, debt);
    debt = 0;
  }
  void keep(double x, std::uint8_t owed = 0) {
    tape_->inputs.push_reserved(x);
    tape_->owed.push_reserved(owed);
  }

  void begin_reverse() {
    next_ = tape_->starts.back();
    tape_->starts.pop_back();
  }
  // The input of slot a's scaling, whose output is x0: kept, where the
  // forward sweep cleared the debt, else x0 / cos.
  [[gnu::always_inline]] double input(std::uint32_t a, double x0, double inverse_cs) {
    std::uint8_t& debt = debt_[a];
    if (debt != 0) {
      debt = static_cast<std::uint8_t>(debt - shrink_);
      return x0 * inverse_cs;
    }
    debt = tape_->owed[next_];
    return kept();
  }
  double kept() { return tape_->inputs[next_++]; }

 private:
  ReplayTape* tape_;
  std::uint8_t* debt_;
  unsigned shrink_;
  std::size_t next_ = 0;
};

// The next n cos entries of `reader` with a lane for each entry, four entries
// at a time, each into its own lane, which the unrolled loop keeps in
// registers; returns the lanes.
template <typename Apply>
DropSum for_each_cos_lanes(SectionReader& reader, std::uint32_t n, Apply&& apply) {
  V2 l0 = {}, l1 = {}, l2 = {}, l3 = {};
  std::uint32_t k = 0;
  for (; k + 4 <= n; k += 4) {
    apply(reader.cos(), l0);
    apply(reader.cos(), l1);
    apply(reader.cos(), l2);
    apply(reader.cos(), l3);
  }
  for (; k < n; ++k) apply(reader.cos(), l0);
  return DropSum::of_lanes(l0, l1, l2, l3);
}

// Where `part` of `layer` finds its partners in the handover buffers (null:
// in their shard): the buffer toward the part's shard, after the parts
// before it toward the same shard (a layer's lookups can take several rounds,
// each a part).
double* handed_part(const ShardLayer& layer, const Part& part, double* const* handover, std::size_t stride) {
  double* via = handover[part.shard];
  if (!via) return nullptr;
  for (const Part* before = layer.parts.data(); before != &part; ++before)
    if (before->shard == part.shard) via += stride * handover_size(*before);
  return via;
}

template <bool Pared, bool Kept, bool Bound = false>
void forward(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare, ReplayTape* tape,
             Dropped* dropped, double* const* handover, DropRule rule = {}) {
  double* own = c[self];
  Keeper keeper(tape, ReplayTape::shrink(cs));
  // Every scaling (cos entries, halves) may keep its input, a pared pair both of its own.
  if constexpr (Kept) keeper.begin_forward(layer.cos.count + 2 * layer.n_rotations());
  DropSum lit, dark, cut;  // the inputs of the dropped branches, scaled by sn once the layer is done
  auto drop = [&](double x) {
    if constexpr (Bound) cut.add(x);
  };
  if constexpr (Bound) {
    SectionReader reader(layer, layer.cos);
    auto counted = [&](std::uint32_t a, V2& lane) {
      if constexpr (Kept) keeper.scaled(a, own[a]);
      DropSum::add(own[a], lane);
      own[a] *= cs;
    };
    lit = for_each_cos_lanes(reader, layer.cos.count - layer.cos.base, counted);
    dark = for_each_cos_lanes(reader, layer.cos.base, counted);
  } else {
    // Locals no lambda refers to stay in registers across the debts' byte
    // stores (which may alias anything addressable).
    SectionReader reader(layer, layer.cos);
    double* const x = own;
    const double scale = cs;
    for (std::uint32_t k = 0; k < layer.cos.count; ++k) {
      const std::uint32_t a = reader.cos();
      if constexpr (Kept) keeper.scaled(a, x[a]);
      x[a] *= scale;
    }
  }
  for (const Part& part : layer.parts) {
    double* const via = handover ? handed_part(layer, part, handover, 1) : nullptr;
    double* other = via ? via : c[part.shard];
    auto prefetch = [&](std::uint32_t b) { __builtin_prefetch(&other[b]); };
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) {
      double& x = own[a];
      double& y = other[b];
      if constexpr (Pared) {
        const bool cut = pared(pare, sn, x, y);
        if (tape) tape->flags.push_back(cut);
        if (cut) {
          if constexpr (Kept) {
            keeper.keep(x);
            keeper.keep(y);
          }
          drop(x);
          drop(y);
          x *= cs;
          y *= cs;
          return;
        }
      }
      rotate(x, y, cs, sn, s);
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) {
      double& x = own[a];
      double& y = other[b];
      if constexpr (Kept) keeper.scaled(a, x);
      if constexpr (Pared) {
        const bool cut = pared(pare, sn, x, 0.0);
        if (tape) tape->flags.push_back(cut);
        if (cut) {
          drop(x);
          x *= cs;
          return;
        }
      }
      receive(x, y, cs, sn, s);
    };
    for_each_part_entry(layer, part, via != nullptr, prefetch, pair, half);
  }
  if constexpr (Bound) {
    *dropped += lit.at(sn, dark, rule);
    *dropped += cut.at(sn);
  }
}

template <bool Pared, bool Kept>
double adjoint(const ShardLayer& layer, const Turn& turn, double* const* state, int self, ReplayTape* tape,
               double* const* handover) {
  const double cs = turn.cs, sn = turn.sn, dcs = turn.dcs, dsn = turn.dsn;
  double* own = state[self];
  const double inverse_cs = 1.0 / cs;
  Keeper keeper(tape, ReplayTape::shrink(cs));
  if constexpr (Kept) keeper.begin_reverse();
  auto input = [&](std::uint32_t a, const double* x) {
    if constexpr (Kept)
      return keeper.input(a, x[0], inverse_cs);
    else
      return x[0] * inverse_cs;
  };
  // The cos entries' sum runs in four lanes (one chain of adds would cost an
  // add's latency per entry), folded in a fixed order, in variables no lambda
  // refers to, so that they stay in registers: the debts' byte stores could
  // otherwise alias them.
  double d = 0.0, d_parts = 0.0;
  {
    SectionReader reader(layer, layer.cos);
    auto unscaled = [&] {
      const std::uint32_t a = reader.cos();
      double* x = own + 2 * std::size_t{a};
      return unscale(x, input(a, x), cs, dcs);
    };
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    std::uint32_t k = 0;
    for (; k + 4 <= layer.cos.count; k += 4) {
      s0 += unscaled();
      s1 += unscaled();
      s2 += unscaled();
      s3 += unscaled();
    }
    for (; k < layer.cos.count; ++k) s0 += unscaled();
    d = (s0 + s1) + (s2 + s3);
  }
  std::size_t cursor = Pared ? tape->cursor : 0;
  for (const Part& part : layer.parts) {
    double* const via = handover ? handed_part(layer, part, handover, 2) : nullptr;
    double* other = via ? via : state[part.shard];
    auto prefetch = [&](std::uint32_t b) { __builtin_prefetch(other + 2 * std::size_t{b}); };
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) {
      double* x = own + 2 * std::size_t{a};
      double* y = other + 2 * std::size_t{b};
      if (Pared && tape->flags[cursor++]) {
        const double cx = Kept ? keeper.kept() : x[0] * inverse_cs;
        const double cy = Kept ? keeper.kept() : y[0] * inverse_cs;
        return unscale(x, cx, cs, dcs) + unscale(y, cy, cs, dcs);
      }
      return rewind(x, y, cs, sn, s);
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) {
      double* x = own + 2 * std::size_t{a};
      const double ca = input(a, x);
      if (Pared && tape->flags[cursor++]) return unscale(x, ca, cs, dcs);
      return rewind_half(x, other + 2 * std::size_t{b}, ca, cs, sn, s, dcs, dsn);
    };
    d_parts = for_each_part_entry(layer, part, via != nullptr, prefetch, pair, half, d_parts);
  }
  return d + d_parts;
}

}  // namespace

void forward_layer(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare,
                   ReplayTape* tape, Dropped* dropped, double* const* handover, DropRule rule) {
  const bool kept = tape && ReplayTape::shrink(cs) > 0;
  if (dropped) {
    if (pare > 0.0)
      kept ? forward<true, true, true>(layer, cs, sn, c, self, pare, tape, dropped, handover, rule)
           : forward<true, false, true>(layer, cs, sn, c, self, pare, tape, dropped, handover, rule);
    else
      kept ? forward<false, true, true>(layer, cs, sn, c, self, 0.0, tape, dropped, handover, rule)
           : forward<false, false, true>(layer, cs, sn, c, self, 0.0, nullptr, dropped, handover, rule);
    return;
  }
  if (pare > 0.0)
    kept ? forward<true, true>(layer, cs, sn, c, self, pare, tape, nullptr, handover)
         : forward<true, false>(layer, cs, sn, c, self, pare, tape, nullptr, handover);
  else
    kept ? forward<false, true>(layer, cs, sn, c, self, 0.0, tape, nullptr, handover)
         : forward<false, false>(layer, cs, sn, c, self, 0.0, nullptr, nullptr, handover);
}

double adjoint_layer(const ShardLayer& layer, const Turn& turn, double* const* state, int self, double pare,
                     ReplayTape* tape, double* const* handover) {
  if (ReplayTape::shrink(turn.cs) > 0)
    return pare > 0.0 ? adjoint<true, true>(layer, turn, state, self, tape, handover)
                      : adjoint<false, true>(layer, turn, state, self, tape, handover);
  return pare > 0.0 ? adjoint<true, false>(layer, turn, state, self, tape, handover)
                    : adjoint<false, false>(layer, turn, state, self, nullptr, handover);
}

void hand_over(const ShardLayer& layer, int shard, const double* c, std::size_t stride, double* via) {
  auto prefetch = [&](std::uint32_t b) { __builtin_prefetch(c + stride * b); };
  for (const Part& part : layer.parts)
    if (static_cast<int>(part.shard) == shard)
      for_each_partner(layer, part, prefetch, [&](std::uint32_t b) {
        for (std::size_t j = 0; j < stride; ++j) *via++ = c[stride * b + j];
      });
}

void take_back(const ShardLayer& layer, int shard, double* c, std::size_t stride, const double* via) {
  auto prefetch = [&](std::uint32_t b) { __builtin_prefetch(c + stride * b, 1); };
  for (const Part& part : layer.parts)
    if (static_cast<int>(part.shard) == shard)
      for_each_partner(layer, part, prefetch, [&](std::uint32_t b) {
        for (std::size_t j = 0; j < stride; ++j) c[stride * b + j] = *via++;
      });
}

std::size_t handover_size(const ShardLayer& layer, int shard) {
  std::size_t n = 0;
  for (const Part& part : layer.parts)
    if (static_cast<int>(part.shard) == shard) n += handover_size(part);
  return n;
}

std::size_t pare_flags(const ShardLayer& layer) { return layer.n_rotations(); }

void FlatGraph::clear() {
  shards_ = 0;
  cos_ = {};
  rotations_ = {};
  spans_ = {};
}

void FlatGraph::assign(const std::vector<const Graph*>& graphs) {
  clear();
  shards_ = graphs.size();
  const std::size_t layers = graphs.empty() ? 0 : graphs[0]->size();
  for (std::size_t l = 0; l < layers; ++l)
    for (const Graph* graph : graphs) {
      const ShardLayer& layer = (*graph)[l];
      for_each_cos(layer, [&](std::uint32_t a) { cos_.push_back(a); });
      for_each_rotation(layer, [&](const Part& part, std::uint32_t a, std::uint32_t b, double s, bool half) {
        rotations_.push_back({a, part.shard, b, static_cast<std::int8_t>(s < 0 ? -1 : 1), half});
      });
      spans_.push_back(
          {static_cast<std::uint32_t>(cos_.size()), static_cast<std::uint32_t>(rotations_.size()), layer.cos.base});
    }
}

std::size_t FlatGraph::memory() const {
  return cos_.capacity() * sizeof(std::uint32_t) + rotations_.capacity() * sizeof(Entry) +
         spans_.capacity() * sizeof(Span);
}

void FlatGraph::forward(std::size_t l, double cs, double sn, double* const* c, ReplayTape* const* tapes,
                        Dropped* dropped, DropRule rule) const {
  dropped ? sweep<true>(l, cs, sn, c, tapes, dropped, rule) : sweep<false>(l, cs, sn, c, tapes, nullptr, rule);
}

// forward() for every shard; with Bound, shard s adds what it drops to
// dropped[s] (see forward_layer).
template <bool Bound>
void FlatGraph::sweep(std::size_t l, double cs, double sn, double* const* c, ReplayTape* const* tapes, Dropped* dropped,
                      DropRule rule) const {
  const unsigned shrink = ReplayTape::shrink(cs);
  const bool kept = tapes && shrink > 0;
  Span at = l == 0 ? Span{} : spans_[l * shards_ - 1];
  for (std::size_t s = 0; s < shards_; ++s) {
    const Span end = spans_[l * shards_ + s];
    double* own = c[s];
    Keeper keeper(kept ? tapes[s] : nullptr, shrink);
    if (kept) keeper.begin_forward(end.cos_end - at.cos_end + end.rotations_end - at.rotations_end);
    if constexpr (Bound) {
      // Four entries at a time, each into its own lane (DropSum), in registers:
      // the lit entries, then the dark ones where they count.
      auto scale = [&](std::uint32_t a, V2& lane) {
        if (kept) keeper.scaled(a, own[a]);
        DropSum::add(own[a], lane);
        own[a] *= cs;
      };
      auto lanes = [&](std::uint32_t stop) {
        V2 l0 = {}, l1 = {}, l2 = {}, l3 = {};
        for (; at.cos_end + 4 <= stop; at.cos_end += 4) {
          scale(cos_[at.cos_end], l0);
          scale(cos_[at.cos_end + 1], l1);
          scale(cos_[at.cos_end + 2], l2);
          scale(cos_[at.cos_end + 3], l3);
        }
        for (; at.cos_end < stop; ++at.cos_end) scale(cos_[at.cos_end], l0);
        return DropSum::of_lanes(l0, l1, l2, l3);
      };
      const DropSum lit = lanes(end.cos_end - end.dark);
      dropped[s] += lit.at(sn, lanes(end.cos_end), rule);
    } else {
      for (; at.cos_end < end.cos_end; ++at.cos_end) {
        const std::uint32_t a = cos_[at.cos_end];
        if (kept) keeper.scaled(a, own[a]);
        own[a] *= cs;
      }
    }
    for (; at.rotations_end < end.rotations_end; ++at.rotations_end) {
      const Entry& e = rotations_[at.rotations_end];
      double& x = own[e.a];
      double& y = c[e.other][e.b];
      if (e.half) {
        if (kept) keeper.scaled(e.a, x);
        receive(x, y, cs, sn, e.sign);
      } else {
        rotate(x, y, cs, sn, e.sign);
      }
    }
  }
}

// Each shard's sum in adjoint's order: cos entries and halves into d, pairs
// and births into d_pairs.
void FlatGraph::adjoint(std::size_t l, const Turn& turn, double* const* state, double* d_of,
                        ReplayTape* const* tapes) const {
  const double cs = turn.cs, sn = turn.sn, dcs = turn.dcs, dsn = turn.dsn;
  const double inverse_cs = 1.0 / cs;
  const unsigned shrink = ReplayTape::shrink(cs);
  Span at = l == 0 ? Span{} : spans_[l * shards_ - 1];
  for (std::size_t s = 0; s < shards_; ++s) {
    const Span end = spans_[l * shards_ + s];
    double* own = state[s];
    Keeper keeper(tapes[s], shrink);
    if (shrink > 0) keeper.begin_reverse();
    auto input = [&](std::uint32_t a, const double* x) {
      return shrink > 0 ? keeper.input(a, x[0], inverse_cs) : x[0] * inverse_cs;
    };
    // The sums of adjoint(): the cos entries in four lanes, the rotations in order.
    auto unscaled = [&] {
      const std::uint32_t a = cos_[at.cos_end++];
      double* x = own + 2 * std::size_t{a};
      return unscale(x, input(a, x), cs, dcs);
    };
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    while (at.cos_end + 4 <= end.cos_end) {
      s0 += unscaled();
      s1 += unscaled();
      s2 += unscaled();
      s3 += unscaled();
    }
    while (at.cos_end < end.cos_end) s0 += unscaled();
    double d_parts = 0.0;
    for (; at.rotations_end < end.rotations_end; ++at.rotations_end) {
      const Entry& e = rotations_[at.rotations_end];
      double* x = own + 2 * std::size_t{e.a};
      double* y = state[e.other] + 2 * std::size_t{e.b};
      d_parts += e.half ? rewind_half(x, y, input(e.a, x), cs, sn, e.sign, dcs, dsn) : rewind(x, y, cs, sn, e.sign);
    }
    d_of[s] = (s0 + s1) + (s2 + s3) + d_parts;
  }
}

DecodedLayer decode(const ShardLayer& layer) {
  DecodedLayer out;
  const std::uint32_t lit = layer.cos.count - layer.cos.base;
  std::uint32_t k = 0;
  for_each_cos(layer, [&](std::uint32_t a) { (k++ < lit ? out.cos : out.dark).push_back(a); });
  for_each_rotation(layer, [&](const Part& part, std::uint32_t a, std::uint32_t b, double s, bool half) {
    (half ? out.halves : out.pairs).push_back({a, part.shard, b, s < 0 ? -1 : 1});
  });
  return out;
}

}  // namespace monoprop
