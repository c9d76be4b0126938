// The replayer: its layouts of the graph, its views, where a replay starts,
// the weights of the value, and the value and gradient of one point. The
// sweeps are replayer_sweeps.cpp, batches replayer_batch.cpp.
#include "replayer.h"

#include <algorithm>

namespace monoprop {

// A replay this small runs on the calling thread (team.h): below about 4096
// entries and terms a layer, a barrier per layer costs more than the work.
bool Replayer::small_replay(const ReplaySource& source) const {
  const std::size_t work = source.entries + source.remote_entries + source.terms;
  const std::size_t layers = source.layers->size();
  return work < source.small_work || work < source.small_work / 16 * std::max<std::size_t>(layers, 1);
}

// The layout of this graph's team replays (replay_layout.h), made once per
// graph; null on one thread, on several ranks (whose remote entries reach
// slots by shard: there the graph is laid out over the ranks instead,
// rank_layout.h), and where no split pays.
const ReplayLayout* Replayer::layout(const ReplaySource& source) const {
  using LayoutUse = MonomialPropagator::LayoutUse;
  if (cache_.layout_generation != source.generation || cache_.layout_made_for != source.layout_use) {
    take_graph_back(source);
    cache_.layout_generation = source.generation;
    cache_.layout_made_for = source.layout_use;
    if (source.layers->empty() || source.layout_use == LayoutUse::never) return nullptr;
    if (source.ranks() > 1) {
      lay_out_ranks(source);
      return nullptr;
    }
    if (source.shards() == 1) return nullptr;
    if (!cache_.layout.assign(source.graphs, source.keys, source.key_words, source.slots,
                              static_cast<int>(source.shards()), source.layout_use == LayoutUse::always))
      return nullptr;
    std::vector<const ReplayLayout::List*> weights_by_shard;
    for (std::size_t s = 0; s < source.shards(); ++s) weights_by_shard.push_back(&weights(source, s));
    cache_.blocks.resize(cache_.layout.blocks());
    for (std::size_t b = 0; b < cache_.blocks.size(); ++b)
      cache_.blocks[b].weights = cache_.layout.select(b, weights_by_shard);
  }
  return cache_.layout.empty() ? nullptr : &cache_.layout;
}

// Collective: every rank's layout() comes here for the same graph. The
// layout holds the graph a second time, so it is made only where every
// rank's memory budget has room for it: a replay that fits without it must
// not pass the budget for its sake.
void Replayer::lay_out_ranks(const ReplaySource& source) const {
  std::vector<const Graph*> graphs;
  std::vector<const double*> bases;
  std::vector<const RankLayout::List*> lists;
  std::size_t bytes = 0;
  for (std::size_t s = 0; s < source.shards(); ++s) {
    graphs.push_back(source.graphs[s]);
    bases.push_back(source.bases[s]->data());
    lists.push_back(&weights(source, s));
    for (const ShardLayer& layer : *source.graphs[s]) bytes += layer.memory();
    bytes += source.keys[s].size * (2 * sizeof(double) + sizeof(std::uint64_t));  // bases, work, places
  }
  for (const RemoteLayer& layer : *source.remote) bytes += layer.bytes();
  MemoryBudget budget = *source.budget;
  budget.start();
  // A rank's part of the layout may outweigh its part of the graph: room for half as much again.
  std::uint64_t refused = budget.grant(bytes + bytes / 2) ? 0 : 1;
  source.comm->max(&refused, 1);
  if (refused) return;
  if (cache_.rank_layout.assign(*source.comm, graphs, *source.remote, source.keys, source.key_words, source.slots,
                                bases, lists, source.layout_use == MonomialPropagator::LayoutUse::always))
    cache_.blocks.resize(source.shards());
}

std::size_t Replayer::blocks(const ReplaySource& source) const {
  if (layout(source)) return cache_.layout.blocks();
  return cache_.rank_layout.empty() ? 0 : static_cast<std::size_t>(source.ranks());
}

void Replayer::take_graph_back(const ReplaySource& source) const {
  if (!cache_.layout.empty()) cache_.layout.restore(source.graphs, source.keys, source.key_words);
  drop_layout();
}

void Replayer::drop_layout() const {
  cache_.layout.clear();
  cache_.rank_layout.clear();
  cache_.blocks.clear();
  cache_.layout_generation.reset();
}

// The shards' graphs and tapes, or the layout's blocks', or the rank layout's shards'.
auto Replayer::view(const ReplaySource& source, const ReplayLayout* layout, bool ranked) const -> View {
  View view;
  view.layout = layout;
  view.ranked = ranked && !layout && !cache_.rank_layout.empty();
  view.remote = view.ranked ? &cache_.rank_layout.remote() : source.remote;
  view.remote_entries = view.ranked ? cache_.rank_layout.remote_entries() : source.remote_entries;
  for (std::size_t s = 0; s < source.shards(); ++s) {
    ReplayCache::Buffers* block = layout || view.ranked ? &cache_.blocks[s] : nullptr;
    view.graphs.push_back(layout ? &layout->graph(s) : view.ranked ? &cache_.rank_layout.graph(s) : source.graphs[s]);
    ReplayCache::Buffers& own = cache_.shards[s];
    view.tapes.push_back(block ? &block->tape : &own.tape);
    view.values.push_back(block ? &block->c : &own.c);
    view.states.push_back(block ? &block->state : &own.state);
    view.sizes.push_back(layout ? layout->size(s) : view.ranked ? cache_.rank_layout.size(s) : source.bases[s]->size());
  }
  return view;
}

// Fills the buffer that shard (or block) s replays from its starting
// coefficients, and returns it: a value's (c) or a gradient's (state, with
// room for spread_adjoint to double it).
double* Replayer::start(const ReplaySource& source, int s, const View& view, bool gradient) const {
  const auto k = static_cast<std::size_t>(s);
  Column<double>& buffer = *(gradient ? view.states : view.values)[k];
  buffer.reserve_huge(gradient ? 2 * view.sizes[k] : view.sizes[k]);
  if (view.ranked) {
    const std::vector<double>& base = cache_.rank_layout.base(k);
    buffer.resize(base.size());
    std::copy(base.begin(), base.end(), buffer.data());
    return buffer.data();
  }
  if (!view.layout) {
    buffer = *source.bases[k];
    return buffer.data();
  }
  buffer.resize(view.sizes[k]);
  std::vector<const double*> bases;
  for (const Column<double>* base : source.bases) bases.push_back(base->data());
  view.layout->gather(k, bases.data(), buffer.data());
  return buffer.data();
}

// The graph spelled out (FlatGraph) when this replay runs on the calling
// thread, unpared, on one rank, and the graph is small enough that the copy
// costs little (at most 2^18 entries, 4 MB); else null. A copy of an older
// graph, or of the other view's, is dropped here, whether or not a new one is made.
const FlatGraph* Replayer::flat_graph(const ReplaySource& source, const Team& team, double pare,
                                      const View& view) const {
  const int which = view.layout ? 1 : view.ranked ? 2 : 0;
  if (cache_.flat_generation != source.generation || cache_.flat_view != which) {
    cache_.flat.clear();
    cache_.flat_generation = source.generation;
    cache_.flat_view = which;
  }
  if (team.size() != 1 || pare > 0.0 || view.remote_entries > 0 || source.entries > (std::size_t{1} << 18) ||
      !small_replay(source))
    return nullptr;
  if (cache_.flat.empty()) cache_.flat.assign(view.graphs);
  return &cache_.flat;
}

auto Replayer::weights(const ReplaySource& source, std::size_t s) const -> const Weights& {
  ReplayCache::Shard& cached = cache_.shards[s];
  if (!cached.weights_stale) return cached.weights;
  cached.weights.clear();
  source.weigh(s, cached.weights);
  cached.weights_stale = false;
  return cached.weights;
}

// Shard s's weights, or block s's in a laid-out view.
auto Replayer::weights(const ReplaySource& source, std::size_t s, const View& view) const -> const Weights& {
  if (view.ranked) return cache_.rank_layout.weights(s);
  return view.layout ? cache_.blocks[s].weights : weights(source, s);
}

double Replayer::weighted_sum(const ReplaySource& source, int s, const View& view, const double* c) const {
  double f = 0.0;
  for (const auto& [i, w] : weights(source, static_cast<std::size_t>(s), view)) f += w * c[i];
  return f;
}

// Spreads shard (or block) s's replayed values in place into the (c, lambda)
// pairs of the reverse sweep, from the top down, with lambda = d f / d c = w.
double* Replayer::spread_adjoint(const ReplaySource& source, int s, const View& view) const {
  Column<double>& state = *view.states[static_cast<std::size_t>(s)];
  const std::size_t n = state.size();
  state.resize(2 * n);
  double* x = state.data();
  for (std::size_t i = n; i-- > 0;) {
    x[2 * i] = x[i];
    x[2 * i + 1] = 0.0;
  }
  for (const auto& [i, w] : weights(source, static_cast<std::size_t>(s), view)) x[2 * std::size_t{i} + 1] = w;
  return x;
}

// The value; with `total`, also what the operand held dropped and what the
// replay drops, per shard, folded in ascending shard order and then over the
// ranks with the value.
double Replayer::value(const ReplaySource& source, std::span<const double> theta, double pare, const std::int32_t* lp,
                       Dropped* total) const {
  const std::size_t S = source.shards();
  std::vector<Dropped> dropped(total ? S : 0);
  std::vector<double*> c(S);
  std::vector<double> partial(S, 0.0);
  const View v = view(source, layout(source), true);
  Team::run(static_cast<int>(S), small_replay(source), [&](int t, Team& team) {
    team.each(t, [&](int s) {
      const auto k = static_cast<std::size_t>(s);
      if (source.layers->empty())  // no layer writes: read the coefficients where they are
        c[k] = const_cast<double*>(source.bases[k]->data());
      else
        c[k] = start(source, s, v, false);
    });
    forward(t, team, source, v, c.data(), theta.data(), pare, lp, false, total ? dropped.data() : nullptr);
    team.each(t, [&](int s) {
      partial[static_cast<std::size_t>(s)] = weighted_sum(source, s, v, c[static_cast<std::size_t>(s)]);
    });
  });
  double f = 0.0;  // ascending shard order: bitwise reproducible for a fixed T
  for (const double part : partial) f += part;
  if (!total) {
    source.comm->sum(&f, 1);  // then over the ranks
    return f + source.core;
  }
  *total = source.held;
  for (const Dropped& part : dropped) *total += part;
  double sums[3] = {f, total->sum, total->squares};  // over the ranks, in one reduction
  source.comm->sum(sums, 3);
  *total = {sums[1], sums[2]};
  return sums[0] + source.core;
}

// One buffer serves both sweeps: the forward one runs on the first half, with
// the coefficients packed (half the cache lines), which then spread into the
// interleaved states (c, lambda) the reverse sweep reads in pairs.
double Replayer::gradient(const ReplaySource& source, std::span<const double> theta, double* out, double pare,
                          const std::int32_t* lp, Dropped* total) const {
  const std::size_t S = source.shards(), L = source.layers->size();
  std::vector<double*> state(S);
  std::vector<double> partial(S, 0.0);
  std::vector<std::vector<double>> dphi(S);
  std::vector<Dropped> dropped(total ? S : 0);
  const View v = view(source, layout(source), true);
  Team::run(static_cast<int>(S), small_replay(source), [&](int t, Team& team) {
    team.each(t, [&](int s) {
      state[static_cast<std::size_t>(s)] = start(source, s, v, true);
      dphi[static_cast<std::size_t>(s)].assign(L, 0.0);
    });
    forward(t, team, source, v, state.data(), theta.data(), pare, lp, true, total ? dropped.data() : nullptr);
    team.each(t, [&](int s) {
      partial[static_cast<std::size_t>(s)] = weighted_sum(source, s, v, state[static_cast<std::size_t>(s)]);
      state[static_cast<std::size_t>(s)] = spread_adjoint(source, s, v);
    });
    backward(t, team, source, v, state.data(), theta.data(), pare, lp, dphi);
  });
  // Folds in ascending shard order: bitwise reproducible for a fixed T.
  std::vector<double> gradient(theta.size(), 0.0);
  for (std::size_t l = L; l-- > 0;) {
    const LayerInfo& info = (*source.layers)[l];
    const std::int32_t p = lp ? lp[l] : info.parameter;
    if (p < 0) continue;  // a noise layer of fixed rate
    double d = dphi[0][l];
    for (std::size_t s = 1; s < S; ++s) d += dphi[s][l];
    gradient[static_cast<std::size_t>(p)] += info.frequency * d;
  }
  double f = 0.0;
  for (const double part : partial) f += part;
  // Then over the ranks, in one reduction (with the dropped sums, folded as in value()).
  if (total) {
    *total = source.held;
    for (const Dropped& part : dropped) *total += part;
    gradient.push_back(total->sum);
    gradient.push_back(total->squares);
  }
  gradient.push_back(f);
  source.comm->sum(gradient.data(), gradient.size());
  f = gradient.back();
  gradient.pop_back();
  if (total) {
    total->squares = gradient.back();
    gradient.pop_back();
    total->sum = gradient.back();
    gradient.pop_back();
  }
  std::copy(gradient.begin(), gradient.end(), out);
  return f + source.core;
}

// Replays into every shard's buffer c (a laid-out replay's blocks are copied
// back into them).
void Replayer::replay_all(const ReplaySource& source, const double* theta, Dropped* dropped) const {
  const View v = view(source, layout(source));
  const std::size_t S = source.shards();
  std::vector<double*> c(S);
  Team::run(static_cast<int>(S), small_replay(source), [&](int t, Team& team) {
    team.each(t, [&](int s) { c[static_cast<std::size_t>(s)] = start(source, s, v, false); });
    forward(t, team, source, v, c.data(), theta, 0.0, nullptr, false, dropped);
    if (!v.layout) return;
    team.each(t, [&](int s) {
      const std::size_t n = source.bases[static_cast<std::size_t>(s)]->size();
      Column<double>& c = cache_.shards[static_cast<std::size_t>(s)].c;
      c.reserve_huge(n);
      c.resize(n);
    });
    team.sync(t);
    std::vector<double*> into;
    for (ReplayCache::Shard& shard : cache_.shards) into.push_back(shard.c.data());
    team.each(t, [&](int b) {
      v.layout->scatter(static_cast<std::size_t>(b), v.values[static_cast<std::size_t>(b)]->data(), into.data());
    });
  });
}

void Replayer::sweep_shards(int t, Team& team, const ReplaySource& source, double* const* c,
                            const double* theta) const {
  const View v = view(source, nullptr);
  forward(t, team, source, v, c, theta, 0.0, nullptr, false);
}

}  // namespace monoprop
