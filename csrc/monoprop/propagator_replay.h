// Propagator: the sweeps of a replay over a view (propagator_replay_view.h):
// forward, with the handover of the layers that cross shards and the remote
// layers exchanged with the peer ranks, and the reverse sweep of a gradient.
// Included by propagator.h only.
#pragma once

namespace monoprop {

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
    replay_.ours.resize(view.remote_entries);
    replay_.theirs.resize(view.remote_entries);
    replay_.handover.resize(shards_.size() * shards_.size());
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
      remote_step(t, team, remote, cs, sn, c, 1, replay_.ours.data() + remote.offset,
                  replay_.theirs.data() + remote.offset, pare);
    if (handed || !view.layout) team.sync(t);
    if (handed) take_back_layer(t, team, view, l, c, 1, l + 1 < layers_.size() && !(*view.remote)[l + 1].empty());
    interrupts_.poll(t == 0, layer_work(l));
  }
}

// Whether layer l goes through handover buffers (replay.h): in a team
// replay, when some shard's part of it reaches into another shard. Then the
// owner of each shard s fills replay_.handover[o * T + s] from its buffer for every
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
      Column<double>& buffer = replay_.handover[o * T + static_cast<std::size_t>(s)];
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
        take_back((*view.graphs[o])[l], s, c[s], stride, replay_.handover[o * T + static_cast<std::size_t>(s)].data());
  });
  if (remote_next) team.sync(t);
}

// The handover buffers shard s's parts rotate against, by partner shard
// (null for its own), written into `via`.
template <typename A, int W, typename I>
double* const* Propagator<A, W, I>::handover_row(int s, std::vector<double*>& via) const {
  const auto T = shards_.size();
  for (std::size_t o = 0; o < T; ++o)
    via[o] = o == static_cast<std::size_t>(s) ? nullptr : replay_.handover[static_cast<std::size_t>(s) * T + o].data();
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
      const std::size_t n = shards_[static_cast<std::size_t>(s)].base.size();
      Column<double>& c = replay_.shards[static_cast<std::size_t>(s)].c;
      c.reserve_huge(n);
      c.resize(n);
    });
    team.sync(t);
    std::vector<double*> into;
    for (ReplayCache::Shard& shard : replay_.shards) into.push_back(shard.c.data());
    team.each(t, [&](int b) {
      view.layout->scatter(static_cast<std::size_t>(b), view.values[static_cast<std::size_t>(b)]->data(), into.data());
    });
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
    replay_.swap.resize(2 * widest);
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
      remote_step_back(t, team, remote, turn, state, replay_.ours.data() + remote.offset,
                       replay_.theirs.data() + remote.offset, replay_.swap.data(), pare, at.data());
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

}  // namespace monoprop
