#include "replay.h"

#include <algorithm>

#include "rotation.h"

namespace monoprop {
namespace {
using namespace rotation;

// Walks a births, pairs or halves section: apply(a, b, s) for each entry in
// order, with s = +-1; prefetch(b) is called kAhead entries before the entry
// (the partners are scattered; a ascends, which the hardware follows).
template <bool Births, typename Prefetch, typename Apply>
void for_each_entry(const ShardLayer& layer, const Section& section, Prefetch&& prefetch, Apply&& apply) {
  constexpr std::uint32_t kAhead = 16;
  static constexpr double kSign[2] = {1.0, -1.0};
  const std::uint32_t n = section.count;
  SectionReader reader(layer, section);
  auto partner = [&](std::uint32_t k) { return Births ? section.base + k : reader.partner(k); };
  if (!Births)
    for (std::uint32_t k = 0; k < std::min(kAhead, n); ++k) prefetch(partner(k));
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!Births && k + kAhead < n) prefetch(partner(k + kAhead));
    bool negative;
    const std::uint32_t a = reader.next(negative);
    apply(a, partner(k), kSign[negative]);
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
    for_each_entry<true>(layer, part.births, none, as(false));
    for_each_entry<false>(layer, part.pairs, none, as(false));
    for_each_entry<false>(layer, part.halves, none, as(true));
  }
}

// Walks the cos section: apply(a) for each entry in order.
template <typename Apply>
void for_each_cos(const ShardLayer& layer, Apply&& apply) {
  SectionReader reader(layer, layer.cos);
  for (std::uint32_t k = 0; k < layer.cos.count; ++k) apply(reader.cos());
}

template <bool Pared>
void forward(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare, PareFlags* flags) {
  double* own = c[self];
  for_each_cos(layer, [&](std::uint32_t a) { own[a] *= cs; });
  for (const Part& part : layer.parts) {
    double* other = c[part.shard];
    auto prefetch = [&](std::uint32_t b) { __builtin_prefetch(&other[b]); };
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) {
      double& x = own[a];
      double& y = other[b];
      if constexpr (Pared) {
        const bool cut = pared(pare, sn, x, y);
        flags->flags.push_back(cut);
        if (cut) {
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
      if constexpr (Pared) {
        const bool cut = pared(pare, sn, x, 0.0);
        flags->flags.push_back(cut);
        if (cut) {
          x *= cs;
          return;
        }
      }
      receive(x, y, cs, sn, s);
    };
    for_each_entry<true>(layer, part.births, prefetch, pair);
    for_each_entry<false>(layer, part.pairs, prefetch, pair);
    for_each_entry<false>(layer, part.halves, prefetch, half);
  }
}

template <bool Pared>
double adjoint(const ShardLayer& layer, const Turn& turn, double* const* state, int self, PareFlags* flags) {
  const double cs = turn.cs, sn = turn.sn, dcs = turn.dcs, dsn = turn.dsn;
  double* own = state[self];
  const double inverse_cs = 1.0 / cs;
  double d = 0.0, d_pairs = 0.0;
  for_each_cos(layer, [&](std::uint32_t a) { d += unscale(own + 2 * std::size_t{a}, cs, dcs, inverse_cs); });
  std::size_t cursor = Pared ? flags->cursor : 0;
  for (const Part& part : layer.parts) {
    double* other = state[part.shard];
    auto prefetch = [&](std::uint32_t b) { __builtin_prefetch(other + 2 * std::size_t{b}); };
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) {
      double* x = own + 2 * std::size_t{a};
      double* y = other + 2 * std::size_t{b};
      if (Pared && flags->flags[cursor++]) {
        d += unscale(x, cs, dcs, inverse_cs) + unscale(y, cs, dcs, inverse_cs);
        return;
      }
      d_pairs += rewind(x, y, cs, sn, s);
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) {
      double* x = own + 2 * std::size_t{a};
      if (Pared && flags->flags[cursor++]) {
        d += unscale(x, cs, dcs, inverse_cs);
        return;
      }
      d += rewind_half(x, other + 2 * std::size_t{b}, cs, sn, s, inverse_cs, dcs, dsn);
    };
    for_each_entry<true>(layer, part.births, prefetch, pair);
    for_each_entry<false>(layer, part.pairs, prefetch, pair);
    for_each_entry<false>(layer, part.halves, prefetch, half);
  }
  return d + d_pairs;
}

}  // namespace

void forward_layer(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare,
                   PareFlags* flags) {
  if (pare > 0.0)
    forward<true>(layer, cs, sn, c, self, pare, flags);
  else
    forward<false>(layer, cs, sn, c, self, 0.0, nullptr);
}

double adjoint_layer(const ShardLayer& layer, const Turn& turn, double* const* state, int self, double pare,
                     PareFlags* flags) {
  return pare > 0.0 ? adjoint<true>(layer, turn, state, self, flags)
                    : adjoint<false>(layer, turn, state, self, nullptr);
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
      spans_.push_back({static_cast<std::uint32_t>(cos_.size()), static_cast<std::uint32_t>(rotations_.size())});
    }
}

std::size_t FlatGraph::memory() const {
  return cos_.capacity() * sizeof(std::uint32_t) + rotations_.capacity() * sizeof(Entry) +
         spans_.capacity() * sizeof(Span);
}

void FlatGraph::forward(std::size_t l, double cs, double sn, double* const* c) const {
  Span at = l == 0 ? Span{} : spans_[l * shards_ - 1];
  for (std::size_t s = 0; s < shards_; ++s) {
    const Span end = spans_[l * shards_ + s];
    double* own = c[s];
    for (; at.cos_end < end.cos_end; ++at.cos_end) own[cos_[at.cos_end]] *= cs;
    for (; at.rotations_end < end.rotations_end; ++at.rotations_end) {
      const Entry& e = rotations_[at.rotations_end];
      double& x = own[e.a];
      double& y = c[e.other][e.b];
      if (e.half)
        receive(x, y, cs, sn, e.sign);
      else
        rotate(x, y, cs, sn, e.sign);
    }
  }
}

// Each shard's sum in adjoint's order: cos entries and halves into d, pairs
// and births into d_pairs.
void FlatGraph::adjoint(std::size_t l, const Turn& turn, double* const* state, double* d_of) const {
  const double cs = turn.cs, sn = turn.sn, dcs = turn.dcs, dsn = turn.dsn;
  const double inverse_cs = 1.0 / cs;
  Span at = l == 0 ? Span{} : spans_[l * shards_ - 1];
  for (std::size_t s = 0; s < shards_; ++s) {
    const Span end = spans_[l * shards_ + s];
    double* own = state[s];
    double d = 0.0, d_pairs = 0.0;
    for (; at.cos_end < end.cos_end; ++at.cos_end)
      d += unscale(own + 2 * std::size_t{cos_[at.cos_end]}, cs, dcs, inverse_cs);
    for (; at.rotations_end < end.rotations_end; ++at.rotations_end) {
      const Entry& e = rotations_[at.rotations_end];
      double* x = own + 2 * std::size_t{e.a};
      double* y = state[e.other] + 2 * std::size_t{e.b};
      if (e.half)
        d += rewind_half(x, y, cs, sn, e.sign, inverse_cs, dcs, dsn);
      else
        d_pairs += rewind(x, y, cs, sn, e.sign);
    }
    d_of[s] = d + d_pairs;
  }
}

DecodedLayer decode(const ShardLayer& layer) {
  DecodedLayer out;
  for_each_cos(layer, [&](std::uint32_t a) { out.cos.push_back(a); });
  for_each_rotation(layer, [&](const Part& part, std::uint32_t a, std::uint32_t b, double s, bool half) {
    (half ? out.halves : out.pairs).push_back({a, part.shard, b, s < 0 ? -1 : 1});
  });
  return out;
}

}  // namespace monoprop
