// Propagator: what a replay runs on. The layouts of the graph over the
// threads (replay_layout.h) or the ranks (rank_layout.h), made once per
// graph; the view of a replay (the shards', or a layout's blocks' graphs,
// tapes and buffers); the starting coefficients; the small graph spelled out
// (FlatGraph); the weights of the value. Included by propagator.h only.
#pragma once

namespace monoprop {

// A replay this small runs on the calling thread (team.h): below about 4096
// entries and terms a layer, a barrier per layer costs more than the work.
template <typename A, int W, typename I>
bool Propagator<A, W, I>::small_replay() const {
  const std::size_t work = entries_ + remote_entries_ + total_size();
  return work < small_work_ || work < small_work_ / 16 * std::max<std::size_t>(layers_.size(), 1);
}

// The layout of this graph's team replays (replay_layout.h), made once per
// graph; null on one thread, on several ranks (whose remote entries reach
// slots by shard: there the graph is laid out over the ranks instead,
// rank_layout.h), and where no split pays.
template <typename A, int W, typename I>
const ReplayLayout* Propagator<A, W, I>::replay_layout() const {
  if (replay_.layout_generation != generation_ || replay_.layout_made_for != layout_use_) {
    take_graph_back();
    replay_.layout_generation = generation_;
    replay_.layout_made_for = layout_use_;
    if (layers_.empty() || layout_use_ == LayoutUse::never) return nullptr;
    if (routing_.ranks() > 1) {
      lay_out_ranks();
      return nullptr;
    }
    if (threads() == 1) return nullptr;
    std::vector<Graph*> graphs;
    for (const Shard& shard : shards_) graphs.push_back(&shard.graph);
    if (!replay_.layout.assign(graphs, layout_keys(), W, 2 * config_.num_modes, threads(),
                               layout_use_ == LayoutUse::always))
      return nullptr;
    std::vector<const ReplayLayout::List*> weights_by_shard;
    for (std::size_t s = 0; s < shards_.size(); ++s) weights_by_shard.push_back(&weights(static_cast<int>(s)));
    replay_.blocks.resize(replay_.layout.blocks());
    for (std::size_t b = 0; b < replay_.blocks.size(); ++b)
      replay_.blocks[b].weights = replay_.layout.select(b, weights_by_shard);
  }
  return replay_.layout.empty() ? nullptr : &replay_.layout;
}

// Collective: every rank's replay_layout() comes here for the same graph.
// The layout holds the graph a second time, so it is made only where every
// rank's memory budget has room for it: a replay that fits without it must
// not pass the budget for its sake.
template <typename A, int W, typename I>
void Propagator<A, W, I>::lay_out_ranks() const {
  std::vector<const Graph*> graphs;
  std::vector<const double*> bases;
  std::vector<const RankLayout::List*> lists;
  std::size_t bytes = 0;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    graphs.push_back(&shards_[s].graph);
    bases.push_back(shards_[s].base.data());
    lists.push_back(&weights(static_cast<int>(s)));
    for (const ShardLayer& layer : shards_[s].graph) bytes += layer.memory();
    bytes += shards_[s].keys.size() * (2 * sizeof(double) + sizeof(std::uint64_t));  // bases, work, places
  }
  for (const RemoteLayer& layer : remote_) bytes += layer.bytes();
  MemoryBudget budget = budget_;
  budget.start();
  // A rank's part of the layout may outweigh its part of the graph: room for half as much again.
  std::uint64_t refused = budget.grant(bytes + bytes / 2) ? 0 : 1;
  config_.comm.max(&refused, 1);
  if (refused) return;
  if (replay_.rank_layout.assign(config_.comm, graphs, remote_, layout_keys(), W, 2 * config_.num_modes, bases, lists,
                                 layout_use_ == LayoutUse::always))
    replay_.blocks.resize(shards_.size());
}

// Gives the graph back to the shards (an operation other than a replay is
// about to read or extend it) and drops the layout.
template <typename A, int W, typename I>
void Propagator<A, W, I>::take_graph_back() const {
  if (!replay_.layout.empty()) {
    std::vector<Graph*> graphs;
    for (const Shard& shard : shards_) graphs.push_back(&shard.graph);
    replay_.layout.restore(graphs, layout_keys(), W);
  }
  drop_layout();
}

// Drops the layout, whose graph the shards no longer need (a load replaces
// it, a contraction folds it).
template <typename A, int W, typename I>
void Propagator<A, W, I>::drop_layout() const {
  replay_.layout.clear();
  replay_.rank_layout.clear();
  replay_.blocks.clear();
  replay_.layout_generation.reset();
}

template <typename A, int W, typename I>
std::vector<ReplayLayout::Keys> Propagator<A, W, I>::layout_keys() const {
  std::vector<ReplayLayout::Keys> keys;
  for (const Shard& shard : shards_) keys.push_back({shard.keys.row(0), shard.keys.size()});
  return keys;
}

// The shards' graphs and tapes, or the layout's blocks', or the rank layout's shards'.
template <typename A, int W, typename I>
auto Propagator<A, W, I>::replay_view(const ReplayLayout* layout, bool ranked) const -> ReplayView {
  ReplayView view;
  view.layout = layout;
  view.ranked = ranked && !layout && !replay_.rank_layout.empty();
  view.remote = view.ranked ? &replay_.rank_layout.remote() : &remote_;
  view.remote_entries = view.ranked ? replay_.rank_layout.remote_entries() : remote_entries_;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    const Shard& shard = shards_[s];
    ReplayCache::Buffers* block = layout || view.ranked ? &replay_.blocks[s] : nullptr;
    view.graphs.push_back(layout ? &layout->graph(s) : view.ranked ? &replay_.rank_layout.graph(s) : &shard.graph);
    ReplayCache::Buffers& own = replay_.shards[s];
    view.tapes.push_back(block ? &block->tape : &own.tape);
    view.values.push_back(block ? &block->c : &own.c);
    view.states.push_back(block ? &block->state : &own.state);
    view.sizes.push_back(layout ? layout->size(s) : view.ranked ? replay_.rank_layout.size(s) : shard.base.size());
  }
  return view;
}

// Fills the buffer that shard (or block) s replays from its starting
// coefficients, and returns it: a value's (c) or a gradient's (state, with
// room for spread_adjoint to double it).
template <typename A, int W, typename I>
double* Propagator<A, W, I>::replay_start(int s, const ReplayView& view, bool gradient) const {
  const auto k = static_cast<std::size_t>(s);
  Column<double>& buffer = *(gradient ? view.states : view.values)[k];
  buffer.reserve_huge(gradient ? 2 * view.sizes[k] : view.sizes[k]);
  if (view.ranked) {
    const std::vector<double>& base = replay_.rank_layout.base(k);
    buffer.resize(base.size());
    std::copy(base.begin(), base.end(), buffer.data());
    return buffer.data();
  }
  if (!view.layout) {
    buffer = shards_[k].base;
    return buffer.data();
  }
  buffer.resize(view.sizes[k]);
  std::vector<const double*> bases;
  for (const Shard& shard : shards_) bases.push_back(shard.base.data());
  view.layout->gather(k, bases.data(), buffer.data());
  return buffer.data();
}

// The graph spelled out (FlatGraph) when this replay runs on the calling
// thread, unpared, on one rank, and the graph is small enough that the copy
// costs little (at most 2^18 entries, 4 MB); else null. A copy of an older
// graph, or of the other view's, is dropped here, whether or not a new one is made.
template <typename A, int W, typename I>
const FlatGraph* Propagator<A, W, I>::flat_graph(const Team& team, double pare, const ReplayView& view) const {
  const int which = view.layout ? 1 : view.ranked ? 2 : 0;
  if (replay_.flat_generation != generation_ || replay_.flat_view != which) {
    replay_.flat.clear();
    replay_.flat_generation = generation_;
    replay_.flat_view = which;
  }
  if (team.size() != 1 || pare > 0.0 || view.remote_entries > 0 || entries_ > (std::size_t{1} << 18) || !small_replay())
    return nullptr;
  if (replay_.flat.empty()) replay_.flat.assign(view.graphs);
  return &replay_.flat;
}

// The nonzero weights of the value f = sum_i w_i c_i, ascending: the
// reference overlaps (Heisenberg) or the observable's coefficients
// (Schrodinger) of the terms the held keys stand for (clifford_frame.h).
template <typename A, int W, typename I>
const std::vector<std::pair<std::uint32_t, double>>& Propagator<A, W, I>::weights(int s) const {
  const Shard& me = shards_[static_cast<std::size_t>(s)];
  ReplayCache::Shard& cached = replay_.shards[static_cast<std::size_t>(s)];
  if (!cached.weights_stale) return cached.weights;
  cached.weights.clear();
  for (std::size_t i = 0; i < me.keys.size(); ++i) {
    // Most terms weigh nothing, and only those that weigh something pay for
    // the sign of the term they stand for (clifford_frame.h).
    const Key held = me.keys.key(i);
    double w = 0.0;
    if (schrodinger()) {
      const auto slot = observable_keys_.find(frame_.image(held));
      if (slot != Keys::kEmpty) w = observable_coefficients_[slot];
    } else if (frame_.paired(held)) {
      w = A::reference_overlap(frame_.image(held), occupied_);
    }
    if (w != 0.0) w *= frame_.forward(held).sign;
    if (w != 0.0) cached.weights.emplace_back(static_cast<std::uint32_t>(i), w);
  }
  cached.weights_stale = false;
  return cached.weights;
}

// Shard s's weights, or block s's in a laid-out view.
template <typename A, int W, typename I>
const std::vector<std::pair<std::uint32_t, double>>& Propagator<A, W, I>::weights(int s, const ReplayView& view) const {
  if (view.ranked) return replay_.rank_layout.weights(static_cast<std::size_t>(s));
  return view.layout ? replay_.blocks[static_cast<std::size_t>(s)].weights : weights(s);
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::weighted_sum(int s, const ReplayView& view, const double* c) const {
  double f = 0.0;
  for (const auto& [i, w] : weights(s, view)) f += w * c[i];
  return f;
}

}  // namespace monoprop
