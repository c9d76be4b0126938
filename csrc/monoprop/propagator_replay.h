// Propagator: replays of the graph (values, gradients, contraction, read-out).
// Included by propagator.h only.
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
  if (layout_generation_ != generation_ || layout_made_for_ != layout_use_) {
    take_graph_back();
    layout_generation_ = generation_;
    layout_made_for_ = layout_use_;
    if (layers_.empty() || layout_use_ == LayoutUse::never) return nullptr;
    if (routing_.ranks() > 1) {
      lay_out_ranks();
      return nullptr;
    }
    if (threads() == 1) return nullptr;
    std::vector<Graph*> graphs;
    for (const Shard& shard : shards_) graphs.push_back(&shard.graph);
    if (!layout_.assign(graphs, layout_keys(), W, 2 * config_.num_modes, threads(), layout_use_ == LayoutUse::always))
      return nullptr;
    std::vector<const ReplayLayout::List*> weights_by_shard;
    for (std::size_t s = 0; s < shards_.size(); ++s) weights_by_shard.push_back(&weights(static_cast<int>(s)));
    blocks_.resize(layout_.blocks());
    for (std::size_t b = 0; b < blocks_.size(); ++b) blocks_[b].weights = layout_.select(b, weights_by_shard);
  }
  return layout_.empty() ? nullptr : &layout_;
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
  if (rank_layout_.assign(config_.comm, graphs, remote_, layout_keys(), W, 2 * config_.num_modes, bases, lists,
                          layout_use_ == LayoutUse::always))
    blocks_.resize(shards_.size());
}

// Gives the graph back to the shards (an operation other than a replay is
// about to read or extend it) and drops the layout.
template <typename A, int W, typename I>
void Propagator<A, W, I>::take_graph_back() const {
  if (!layout_.empty()) {
    std::vector<Graph*> graphs;
    for (const Shard& shard : shards_) graphs.push_back(&shard.graph);
    layout_.restore(graphs, layout_keys(), W);
  }
  drop_layout();
}

// Drops the layout, whose graph the shards no longer need (a load replaces
// it, a contraction folds it).
template <typename A, int W, typename I>
void Propagator<A, W, I>::drop_layout() const {
  layout_.clear();
  rank_layout_.clear();
  blocks_.clear();
  layout_generation_.reset();
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
  view.ranked = ranked && !layout && !rank_layout_.empty();
  view.remote = view.ranked ? &rank_layout_.remote() : &remote_;
  view.remote_entries = view.ranked ? rank_layout_.remote_entries() : remote_entries_;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    const Shard& shard = shards_[s];
    Block* block = layout || view.ranked ? &blocks_[s] : nullptr;
    view.graphs.push_back(layout ? &layout->graph(s) : view.ranked ? &rank_layout_.graph(s) : &shard.graph);
    view.tapes.push_back(block ? &block->tape : &shard.tape);
    view.values.push_back(block ? &block->c : &shard.c);
    view.states.push_back(block ? &block->state : &shard.state);
    view.sizes.push_back(layout ? layout->size(s) : view.ranked ? rank_layout_.size(s) : shard.base.size());
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
    const std::vector<double>& base = rank_layout_.base(k);
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
  if (flat_generation_ != generation_ || flat_view_ != which) {
    flat_.clear();
    flat_generation_ = generation_;
    flat_view_ = which;
  }
  if (team.size() != 1 || pare > 0.0 || view.remote_entries > 0 || entries_ > (std::size_t{1} << 18) || !small_replay())
    return nullptr;
  if (flat_.empty()) flat_.assign(view.graphs);
  return &flat_;
}

// Replays every layer forward on the buffers c (c[s] already holds shard s's
// starting coefficients, or block s's in a laid-out view); `lp`, when given,
// overrides each layer's parameter index (graph order); `reverse`:
// replay_back follows, and the tapes record what it needs (ReplayTape).
// Polls for an interrupt between layers: a replay writes only its own
// buffers, so stopping it changes nothing that outlives it.
//
// The team meets after every layer of the shards' graph, whose entries reach
// into every shard. In a laid-out view a thread touches only its block's
// slots, except through the handover of a crossing layer: the team meets only
// there.
template <typename A, int W, typename I>
void Propagator<A, W, I>::replay(int t, Team& team, const ReplayView& view, double* const* c, const double* theta,
                                 double pare, const std::int32_t* lp, bool reverse, Dropped* dropped) const {
  if (t == 0) {
    maybe_fault("evaluate");
    // Both sides' inputs of every remote entry: the remote part of the tape.
    ours_.resize(view.remote_entries);
    theirs_.resize(view.remote_entries);
    handover_.resize(shards_.size() * shards_.size());
  }
  team.each(t, [&](int s) { view.tapes[s]->begin(view.sizes[s], reverse); });
  team.sync(t);  // every buffer is in place before cross entries reach into it
  const FlatGraph* flat = flat_graph(team, pare, view);
  std::vector<double*> via(shards_.size());
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Turn turn = layer_turn(l, theta, lp);
    const double cs = turn.cs, sn = turn.sn;
    const bool handed = hand_over_layer(t, team, view, l, c, 1);
    const DropRule rule = layers_[l].stale ? DropRule{} : DropRule{layers_[l].reach, false};
    if (flat)
      flat->forward(l, cs, sn, c, reverse ? view.tapes.data() : nullptr, dropped, rule);
    else
      team.each(t, [&](int s) {
        forward_layer((*view.graphs[s])[l], cs, sn, c, s, pare, reverse ? view.tapes[s] : nullptr,
                      dropped ? dropped + s : nullptr, handed ? handover_row(s, via) : nullptr, rule);
      });
    // Remote entries rotate, dropping nothing (a pared one is not counted: the
    // bound refuses pare on more than one rank).
    if (const RemoteLayer& remote = (*view.remote)[l]; !remote.empty())
      remote_step(t, team, remote, cs, sn, c, 1, ours_.data() + remote.offset, theirs_.data() + remote.offset, pare);
    if (handed || !view.layout) team.sync(t);
    if (handed) take_back_layer(t, team, view, l, c, 1, l + 1 < layers_.size() && !(*view.remote)[l + 1].empty());
    interrupts_.poll(t == 0, layer_work(l));
  }
}

// Whether layer l goes through handover buffers (replay.h): in a team
// replay, when some shard's part of it reaches into another shard. Then the
// owner of each shard s fills handover_[o * T + s] from its buffer for every
// other shard o, and the team meets, so that the rotations read them.
template <typename A, int W, typename I>
bool Propagator<A, W, I>::hand_over_layer(int t, Team& team, const ReplayView& view, std::size_t l, double* const* c,
                                          std::size_t stride) const {
  const auto T = shards_.size();
  if (team.size() == 1) return false;
  bool crossing = view.layout && view.layout->crossing(l);
  if (!view.layout)
    for (std::size_t o = 0; o < T && !crossing; ++o)
      for (const Part& part : (*view.graphs[o])[l].parts)
        crossing = crossing || (part.shard != o && handover_size(part) > 0);
  if (!crossing) return false;
  team.each(t, [&](int s) {
    for (std::size_t o = 0; o < T; ++o) {
      if (o == static_cast<std::size_t>(s)) continue;
      const ShardLayer& layer = (*view.graphs[o])[l];
      const std::size_t n = stride * handover_size(layer, s);
      if (n == 0) continue;
      Column<double>& buffer = handover_[o * T + static_cast<std::size_t>(s)];
      if (buffer.size() < n) buffer.resize(n);
      hand_over(layer, s, c[s], stride, buffer.data());
    }
  });
  team.sync(t);
  return true;
}

// After the layer (and the barrier that ends it): each shard's owner copies
// its partners' results back from the other shards' handover buffers. The
// next layer's own entries touch only their shard, but its remote entries
// (MPI) are shared among the threads by count, whatever their shard: before
// such a layer (`remote_next`) the team meets once more.
template <typename A, int W, typename I>
void Propagator<A, W, I>::take_back_layer(int t, Team& team, const ReplayView& view, std::size_t l, double* const* c,
                                          std::size_t stride, bool remote_next) const {
  const auto T = shards_.size();
  team.each(t, [&](int s) {
    for (std::size_t o = 0; o < T; ++o)
      if (o != static_cast<std::size_t>(s))
        take_back((*view.graphs[o])[l], s, c[s], stride, handover_[o * T + static_cast<std::size_t>(s)].data());
  });
  if (remote_next) team.sync(t);
}

// The handover buffers shard s's parts rotate against, by partner shard
// (null for its own), written into `via`.
template <typename A, int W, typename I>
double* const* Propagator<A, W, I>::handover_row(int s, std::vector<double*>& via) const {
  const auto T = shards_.size();
  for (std::size_t o = 0; o < T; ++o)
    via[o] = o == static_cast<std::size_t>(s) ? nullptr : handover_[static_cast<std::size_t>(s) * T + o].data();
  return via.data();
}

// Layer l's numbers at theta (per-layer indices lp, or the graph's own).
template <typename A, int W, typename I>
Turn Propagator<A, W, I>::layer_turn(std::size_t l, const double* theta, const std::int32_t* lp) const {
  const LayerInfo& info = layers_[l];
  const std::int32_t p = lp ? lp[l] : info.parameter;
  return info.turn(p < 0 ? 0.0 : theta[p]);
}

// The work of layer l for the interrupt polls of a replay: shard 0's entries
// (the shards are alike), and some for the layer's own overhead.
template <typename A, int W, typename I>
std::size_t Propagator<A, W, I>::layer_work(std::size_t l) const {
  const ShardLayer& layer = shards_[0].graph[l];
  return 64 + layer.n_cos() + layer.n_rotations();
}

// Replays into every shard's buffer c (a laid-out replay's blocks are copied
// back into them).
template <typename A, int W, typename I>
void Propagator<A, W, I>::replay_all(const std::vector<double>& parameters, Dropped* dropped) const {
  const ReplayView view = replay_view(replay_layout());
  std::vector<double*> c(shards_.size());
  Team::run(threads(), small_replay(), [&](int t, Team& team) {
    team.each(t, [&](int s) { c[static_cast<std::size_t>(s)] = replay_start(s, view, false); });
    replay(t, team, view, c.data(), parameters.data(), 0.0, nullptr, false, dropped);
    if (!view.layout) return;
    team.each(t, [&](int s) {
      const Shard& me = shards_[static_cast<std::size_t>(s)];
      me.c.reserve_huge(me.base.size());
      me.c.resize(me.base.size());
    });
    team.sync(t);
    std::vector<double*> into;
    for (const Shard& shard : shards_) into.push_back(shard.c.data());
    team.each(t, [&](int b) {
      view.layout->scatter(static_cast<std::size_t>(b), view.values[static_cast<std::size_t>(b)]->data(), into.data());
    });
  });
}

// The nonzero weights of the value f = sum_i w_i c_i, ascending: the
// reference overlaps (Heisenberg) or the observable's coefficients
// (Schrodinger) of the terms the held keys stand for (clifford_frame.h).
template <typename A, int W, typename I>
const std::vector<std::pair<std::uint32_t, double>>& Propagator<A, W, I>::weights(int s) const {
  const Shard& me = shards_[static_cast<std::size_t>(s)];
  if (!me.weights_stale) return me.weights;
  me.weights.clear();
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
    if (w != 0.0) me.weights.emplace_back(static_cast<std::uint32_t>(i), w);
  }
  me.weights_stale = false;
  return me.weights;
}

// Shard s's weights, or block s's in a laid-out view.
template <typename A, int W, typename I>
const std::vector<std::pair<std::uint32_t, double>>& Propagator<A, W, I>::weights(int s, const ReplayView& view) const {
  if (view.ranked) return rank_layout_.weights(static_cast<std::size_t>(s));
  return view.layout ? blocks_[static_cast<std::size_t>(s)].weights : weights(s);
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::weighted_sum(int s, const ReplayView& view, const double* c) const {
  double f = 0.0;
  for (const auto& [i, w] : weights(s, view)) f += w * c[i];
  return f;
}

// The truncation error. Write the operand after layer k as the exact image of
// the one before, minus what the layer dropped: D_k, a sum of sine branches
// s sn c M' (each a quiet term's, which the layer only scales by cos; or a
// pared entry's; or a Transfer's). The error of the value then telescopes to
// the sum over k of <exact later image of D_k>. In the Heisenberg picture
// every later layer is a unitary conjugation or the Heisenberg map of a
// channel (unital and positive), neither of which raises the operator norm,
// and a Hermitian monomial has norm 1, so for every state
//     |exact - value| <= sum over dropped branches of |sn c|.
// In the Schrodinger picture D_k belongs to the state 2^n rho: its error is
// 2^-n Tr(O E(D_k)) = 2^-n Tr(E*(O) D_k) with E the later (trace-preserving)
// maps, at most ||O|| |sn c| per branch since 2^-n ||M'||_1 = 1; ||O|| is
// bounded by the sum of |h| over O's terms, the identity's left out (D_k is
// traceless and stays so). A branch that cannot reach the end (reach.h)
// contributes exactly 0 and is left out.
//
// Also exact lies in [h_I - N, h_I + N], with h_I the observable's identity
// coefficient and N the sum of |h| over its other terms: the later maps are
// unital contractions (Heisenberg) or take states to states (Schrodinger). So
// |exact - value| <= N + |value - h_I| as well, and the bound is the smaller.
//
// The estimate, kEstimateScale sqrt(sum (w sn c)^2) times the same factor,
// is the typical error if the reachable branches' later contributions were
// independent with random signs and of size about w, their reach weight
// (reach.h): a model, not a bound, and never above the bound.
template <typename A, int W, typename I>
auto Propagator<A, W, I>::with_error(double value, const Dropped& total) const -> ValueWithError {
  const double scale = error_scale();
  double identity = core_, norm = observable_norm_;
  if (schrodinger()) {
    norm = scale;
    const auto slot = observable_keys_.find(Key{});
    identity = slot == Keys::kEmpty ? 0.0 : observable_coefficients_[slot];
  }
  const double bound = std::min(scale * total.sum, norm + std::abs(value - identity));
  return {value, bound, std::min(bound, kEstimateScale * scale * std::sqrt(total.squares))};
}

// A single vector, and a batch with its truncation error, go point by point;
// a batch of values (and gradients) side by side where that pays.
template <typename A, int W, typename I>
void Propagator<A, W, I>::evaluate(const Points& points, const EvaluationRequest& request,
                                   const EvaluationResults& results) const {
  check_valid();
  request.check();
  points.check_finite();
  if (request.with_error) check_bounded(request.pare);
  if (points.single || request.with_error) return evaluate_rows(points, request, results);
  evaluate_batch(points, request, results);
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_bounded(double pare) const {
  check_valid();
  if (unbounded_)
    throw UsageError(
        "truncation_error: this propagator was propagated or built with only_rotate_len_k, which leaves "
        "anticommuting terms unrotated without recording them, so no bound is known; propagate or build "
        "without only_rotate_len_k.");
  // Every rank refuses alike (a rank alone would leave the others in the reduction).
  if (pare > 0.0 && routing_.ranks() > 1)
    throw UsageError(
        "truncation_error: a pared replay (pare_threshold) on more than one MPI rank does not count what paring "
        "drops between ranks; replay without pare_threshold.");
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::error_scale() const {
  if (!schrodinger()) return 1.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < observable_keys_.size(); ++i)
    if (!observable_keys_.key(i).is_identity()) norm += std::abs(observable_coefficients_[i]);
  return norm;
}

// The value; with `total`, also what the operand held dropped (held_) and
// what the replay drops, per shard, folded in ascending shard order and then
// over the ranks with the value.
template <typename A, int W, typename I>
double Propagator<A, W, I>::replay_value(std::span<const double> parameters, double pare,
                                         const std::vector<std::int32_t>* mapping, Dropped* total) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    std::vector<Dropped> dropped(total ? shards_.size() : 0);
    std::vector<double*> c(shards_.size());
    std::vector<double> partial(shards_.size(), 0.0);
    const ReplayView view = replay_view(replay_layout(), true);
    Team::run(threads(), small_replay(), [&](int t, Team& team) {
      team.each(t, [&](int s) {
        const Shard& me = shards_[static_cast<std::size_t>(s)];
        if (layers_.empty())  // no layer writes: read the coefficients where they are
          c[static_cast<std::size_t>(s)] = const_cast<double*>(me.base.data());
        else
          c[static_cast<std::size_t>(s)] = replay_start(s, view, false);
      });
      replay(t, team, view, c.data(), parameters.data(), pare, lp, false, total ? dropped.data() : nullptr);
      team.each(t, [&](int s) {
        partial[static_cast<std::size_t>(s)] = weighted_sum(s, view, c[static_cast<std::size_t>(s)]);
      });
    });
    double f = 0.0;  // ascending shard order: bitwise reproducible for a fixed T
    for (const double part : partial) f += part;
    if (!total) {
      config_.comm.sum(&f, 1);  // then over the ranks
      return f + core_;
    }
    *total = held_;
    for (const Dropped& part : dropped) *total += part;
    double sums[3] = {f, total->sum, total->squares};  // over the ranks, in one reduction
    config_.comm.sum(sums, 3);
    *total = {sums[1], sums[2]};
    return sums[0] + core_;
  });
}

// One buffer serves both sweeps: the forward one runs on the first half, with
// the coefficients packed (half the cache lines), which then spread into the
// interleaved states (c, lambda) the reverse sweep reads in pairs.
template <typename A, int W, typename I>
double Propagator<A, W, I>::replay_gradient(std::span<const double> parameters, double* out, double pare,
                                            const std::vector<std::int32_t>* mapping, Dropped* total) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping, true);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    const std::size_t L = layers_.size();
    std::vector<double*> state(shards_.size());
    std::vector<double> partial(shards_.size(), 0.0);
    std::vector<std::vector<double>> dphi(shards_.size());
    std::vector<Dropped> dropped(total ? shards_.size() : 0);
    const ReplayView view = replay_view(replay_layout(), true);
    Team::run(threads(), small_replay(), [&](int t, Team& team) {
      team.each(t, [&](int s) {
        state[static_cast<std::size_t>(s)] = replay_start(s, view, true);
        dphi[static_cast<std::size_t>(s)].assign(L, 0.0);
      });
      replay(t, team, view, state.data(), parameters.data(), pare, lp, true, total ? dropped.data() : nullptr);
      team.each(t, [&](int s) {
        partial[static_cast<std::size_t>(s)] = weighted_sum(s, view, state[static_cast<std::size_t>(s)]);
        state[static_cast<std::size_t>(s)] = spread_adjoint(s, view);
      });
      replay_back(t, team, view, state.data(), parameters.data(), pare, lp, dphi);
    });
    // Folds in ascending shard order: bitwise reproducible for a fixed T.
    std::vector<double> gradient(parameters.size(), 0.0);
    for (std::size_t l = L; l-- > 0;) {
      const LayerInfo& info = layers_[l];
      const std::int32_t p = lp ? lp[l] : info.parameter;
      if (p < 0) continue;  // a noise layer of fixed rate
      double d = dphi[0][l];
      for (std::size_t s = 1; s < shards_.size(); ++s) d += dphi[s][l];
      gradient[static_cast<std::size_t>(p)] += info.frequency * d;
    }
    double f = 0.0;
    for (const double part : partial) f += part;
    // Then over the ranks, in one reduction (with the dropped sums, folded as in evaluate).
    if (total) {
      *total = held_;
      for (const Dropped& part : dropped) *total += part;
      gradient.push_back(total->sum);
      gradient.push_back(total->squares);
    }
    gradient.push_back(f);
    config_.comm.sum(gradient.data(), gradient.size());
    f = gradient.back();
    gradient.pop_back();
    if (total) {
      total->squares = gradient.back();
      gradient.pop_back();
      total->sum = gradient.back();
      gradient.pop_back();
    }
    std::copy(gradient.begin(), gradient.end(), out);
    return f + core_;
  });
}

// Spreads shard (or block) s's replayed values in place into the (c, lambda)
// pairs of the reverse sweep, from the top down, with lambda = d f / d c = w.
template <typename A, int W, typename I>
double* Propagator<A, W, I>::spread_adjoint(int s, const ReplayView& view) const {
  Column<double>& state = *view.states[static_cast<std::size_t>(s)];
  const std::size_t n = state.size();
  state.resize(2 * n);
  double* x = state.data();
  for (std::size_t i = n; i-- > 0;) {
    x[2 * i] = x[i];
    x[2 * i + 1] = 0.0;
  }
  for (const auto& [i, w] : weights(s, view)) x[2 * std::size_t{i} + 1] = w;
  return x;
}

// The reverse sweep over every layer, last first, on the (c, lambda) pairs:
// recovers each layer's inputs and adds shard s's d f / d phi_l to dphi[s][l].
template <typename A, int W, typename I>
void Propagator<A, W, I>::replay_back(int t, Team& team, const ReplayView& view, double* const* state,
                                      const double* theta, double pare, const std::int32_t* lp,
                                      std::vector<std::vector<double>>& dphi) const {
  if (t == 0) {
    std::size_t widest = 0;
    for (const RemoteLayer& remote : *view.remote) widest = std::max(widest, remote.entries);
    swap_.resize(2 * widest);
  }
  team.each(t, [&](int s) {
    ReplayTape& tape = *view.tapes[s];
    tape.cursor = tape.flags.size();
  });
  team.sync(t);
  const FlatGraph* flat = flat_graph(team, pare, view);
  std::vector<double> d(flat ? shards_.size() : 0);
  std::vector<double*> via(shards_.size());
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const Turn turn = layer_turn(l, theta, lp);
    const bool handed = hand_over_layer(t, team, view, l, state, 2);
    if (flat) {
      flat->adjoint(l, turn, state, d.data(), view.tapes.data());
      for (std::size_t s = 0; s < shards_.size(); ++s) dphi[s][l] = d[s];
    } else {
      team.each(t, [&](int s) {
        ReplayTape& tape = *view.tapes[s];
        const ShardLayer& layer = (*view.graphs[s])[l];
        if (pare > 0.0) tape.cursor -= pare_flags(layer);
        dphi[static_cast<std::size_t>(s)][l] =
            adjoint_layer(layer, turn, state, s, pare, &tape, handed ? handover_row(s, via) : nullptr);
      });
    }
    if (const RemoteLayer& remote = (*view.remote)[l]; !remote.empty()) {
      std::vector<double*> at(shards_.size());
      for (std::size_t s = 0; s < shards_.size(); ++s) at[s] = &dphi[s][l];
      remote_step_back(t, team, remote, turn, state, ours_.data() + remote.offset, theirs_.data() + remote.offset,
                       swap_.data(), pare, at.data());
    }
    if (handed || !view.layout) team.sync(t);
    if (handed) take_back_layer(t, team, view, l, state, 2, l > 0 && !(*view.remote)[l - 1].empty());
    interrupts_.poll(t == 0, layer_work(l));
  }
}

// Each shard sends its share of the layer's entries (chunk), value
// base[shard][stride * slot] each, the primary swaps them with the peers, and
// `received` holds the peers' values once every thread is past the last
// barrier. Shares go by shard, not by thread, so that a replay on the calling
// thread alone does the same arithmetic as the team.
template <typename A, int W, typename I>
void Propagator<A, W, I>::swap_with_peers(int t, Team& team, const RemoteLayer& layer, const double* const* base,
                                          std::size_t stride, double* send, double* received) const {
  team.each(t, [&](int s) {
    const auto [lo, hi] = chunk(s, threads(), layer.entries);
    for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
      send[i] = base[b.shards[e]][stride * b.slots[e]];
    });
  });
  team.sync(t);
  if (t == 0) {
    std::vector<mpi::Parcel> parcels;
    for (const RemoteBlock& b : layer.blocks)
      parcels.push_back({b.peer, send + b.start, b.size(), received + b.start, b.size(), nullptr});
    config_.comm.exchange(parcels, sizeof(double));
  }
  team.sync(t);
}

// Forward through a remote layer: the entries' inputs are swapped, then each
// shard's share is updated.
template <typename A, int W, typename I>
void Propagator<A, W, I>::remote_step(int t, Team& team, const RemoteLayer& layer, double cs, double sn,
                                      double* const* c, std::size_t stride, double* ours, double* theirs,
                                      double pare) const {
  swap_with_peers(t, team, layer, c, stride, ours, theirs);
  team.each(t, [&](int s) {
    const auto [lo, hi] = chunk(s, threads(), layer.entries);
    remote_forward(layer, lo, hi, cs, sn, c, stride, theirs, pare);
  });
}

// Backwards: the entries' lambdas (odd places of the interleaved states) are
// swapped; each shard's share adds its d f / d phi to dphi[s].
template <typename A, int W, typename I>
void Propagator<A, W, I>::remote_step_back(int t, Team& team, const RemoteLayer& layer, const Turn& turn,
                                           double* const* state, const double* ours, const double* theirs, double* swap,
                                           double pare, double* const* dphi) const {
  double* received = swap + layer.entries;
  std::vector<const double*> lambdas(shards_.size());
  for (std::size_t s = 0; s < shards_.size(); ++s) lambdas[s] = state[s] + 1;
  swap_with_peers(t, team, layer, lambdas.data(), 2, swap, received);
  team.each(t, [&](int s) {
    const auto [lo, hi] = chunk(s, threads(), layer.entries);
    *dphi[s] += remote_adjoint(layer, lo, hi, turn, state, received, ours, theirs, pare);
  });
}

template <typename A, int W, typename I>
std::vector<double> Propagator<A, W, I>::contract(const std::vector<double>& parameters, bool inplace) {
  check_valid();
  check_parameters(parameters, n_parameters_);
  return guarded("contract_partially", [&] {
    std::vector<Dropped> dropped(shards_.size());
    replay_all(parameters, dropped.data());
    // The shards' blocks in ascending shard order, each the coefficient of
    // the term its held key stands for.
    std::vector<double> out;
    for (const Shard& shard : shards_)
      for (std::size_t i = 0; i < shard.c.size(); ++i)
        out.push_back(frame_.forward(shard.keys.key(i)).sign * shard.c[i]);
    if (!inplace) return out;
    maybe_fault("contract");
    drop_layout();  // of the graph being folded
    for (Shard& shard : shards_) {
      shard.base = shard.c;
      shard.graph.clear();
      shard.n_base = shard.keys.size();
    }
    start_frame_ = frame_;
    for (const Dropped& part : dropped) held_ += part;  // what the folded graph dropped stays in the bound
    layers_.clear();
    reach_horizon_ = 0;
    remote_.clear();
    remote_entries_ = entries_ = 0;
    n_parameters_ = 0;
    n_gates_ = 0;
    ++generation_;
    return out;
  });
}

template <typename A, int W, typename I>
TermList Propagator<A, W, I>::evolved_terms(const std::vector<double>& parameters, double atol) const {
  check_valid();
  check_parameters(parameters, n_parameters_);
  guarded("evaluate", [&] { replay_all(parameters); });
  TermList out;
  auto emit = [&](const Key& key, double h) {
    for (std::uint32_t s = 0; s < static_cast<std::uint32_t>(2 * config_.num_modes); ++s)
      if (key.test(s)) out.slots.push_back(s);
    out.offsets.push_back(out.slots.size());
    out.coefficients.push_back(h);
  };
  // The identity term is replicated: rank 0 reports it, so that the ranks' terms add up. A
  // Heisenberg noise layer (amplitude damping) can add a held identity term: it is reported
  // with the replicated one, summed over the ranks.
  double identity = 0.0;
  if (!schrodinger()) {
    const Key none{};
    if (held_here(none)) {
      const Shard& shard = shards_[static_cast<std::size_t>(owner(none.hash()))];
      if (const auto slot = shard.keys.find(none); slot != Keys::kEmpty) identity = shard.c[slot];
    }
    config_.comm.sum(&identity, 1);
    identity += core_;
  }
  if (!schrodinger() && rank_ == 0 && (atol == 0.0 || std::abs(identity) >= atol)) emit(Key{}, identity);
  for (const Shard& shard : shards_)  // each shard decoded with its own index
    for (std::size_t i = 0; i < shard.c.size(); ++i)
      if ((atol == 0.0 || std::abs(shard.c[i]) >= atol) && (schrodinger() || !shard.keys.key(i).is_identity())) {
        const auto [key, sign] = frame_.forward(shard.keys.key(i));
        emit(key, sign * shard.c[i]);
      }
  return out;
}

template <typename A, int W, typename I>
std::vector<double> Propagator<A, W, I>::coefficients_of(const std::vector<Term>& terms,
                                                         const std::vector<double>& parameters) const {
  check_valid();
  std::vector<Key> keys;
  for (const Term& t : terms) keys.push_back(key_of(t.slots));
  check_parameters(parameters, n_parameters_);
  guarded("evaluate", [&] { replay_all(parameters); });
  // Each term from the rank that holds it; the sum over ranks adds zeros only.
  std::vector<double> out;
  for (const Key& term : keys) {
    // The identity's replicated part comes from rank 0; a held identity adds to it.
    const double core = !schrodinger() && term.is_identity() && rank_ == 0 ? core_ : 0.0;
    const auto [key, sign] = frame_.backward(term);  // the key that stands for the term
    if (!held_here(key)) {
      out.push_back(core);
      continue;
    }
    const Shard& shard = shards_[static_cast<std::size_t>(owner(key.hash()))];
    const auto slot = shard.keys.find(key);
    out.push_back(core + (slot == Keys::kEmpty ? 0.0 : sign * shard.c[slot]));
  }
  config_.comm.sum(out.data(), out.size());
  return out;
}

}  // namespace monoprop
