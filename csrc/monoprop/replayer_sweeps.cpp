// The replayer's sweeps over a view (replayer.cpp): forward, with the
// handover of the layers that cross shards and the remote layers exchanged
// with the peer ranks (remote_exchange.h), and the reverse sweep of a gradient.
#include <algorithm>

#include "remote_exchange.h"
#include "replayer.h"

namespace monoprop {

// Replays every layer forward on the buffers c (c[s] already holds shard s's
// starting coefficients, or block s's in a laid-out view); `lp`, when given,
// overrides each layer's parameter index (graph order); `reverse`:
// backward() follows, and the tapes record what it needs (ReplayTape).
// Polls for an interrupt between layers: a replay writes only its own
// buffers, so stopping it changes nothing that outlives it.
//
// The team meets after every layer of the shards' graph, whose entries reach
// into every shard. In a laid-out view a thread touches only its block's
// slots, except through the handover of a crossing layer: the team meets only
// there.
void Replayer::forward(int t, Team& team, const ReplaySource& source, const View& view, double* const* c,
                       const double* theta, double pare, const std::int32_t* lp, bool reverse, Dropped* dropped) const {
  const std::vector<LayerInfo>& layers = *source.layers;
  if (t == 0) {
    // Both sides' inputs of every remote entry: the remote part of the tape.
    cache_.ours.resize(view.remote_entries);
    cache_.theirs.resize(view.remote_entries);
    cache_.handover.resize(source.shards() * source.shards());
  }
  team.each(t, [&](int s) { view.tapes[s]->begin(view.sizes[s], reverse); });
  team.sync(t);  // every buffer is in place before cross entries reach into it
  const FlatGraph* flat = flat_graph(source, team, pare, view);
  std::vector<double*> via(source.shards());
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Turn turn = layer_turn(layers[l], l, theta, lp);
    const double cs = turn.cs, sn = turn.sn;
    const bool handed = hand_over_layer(t, team, view, l, c, 1);
    const DropRule rule = layers[l].stale ? DropRule{} : DropRule{layers[l].reach, false};
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
      remote_step(t, team, *source.comm, static_cast<int>(source.shards()), remote, cs, sn, c,
                  cache_.ours.data() + remote.offset, cache_.theirs.data() + remote.offset, pare);
    if (handed || !view.layout) team.sync(t);
    if (handed) take_back_layer(t, team, view, l, c, 1, l + 1 < layers.size() && !(*view.remote)[l + 1].empty());
    source.interrupts->poll(t == 0, layer_work(source, l));
  }
}

// Whether layer l goes through handover buffers (replay.h): in a team
// replay, when some shard's part of it reaches into another shard. Then the
// owner of each shard s fills cache_.handover[o * T + s] from its buffer for every
// other shard o, and the team meets, so that the rotations read them.
bool Replayer::hand_over_layer(int t, Team& team, const View& view, std::size_t l, double* const* c,
                               std::size_t stride) const {
  const auto T = view.graphs.size();
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
      Column<double>& buffer = cache_.handover[o * T + static_cast<std::size_t>(s)];
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
void Replayer::take_back_layer(int t, Team& team, const View& view, std::size_t l, double* const* c, std::size_t stride,
                               bool remote_next) const {
  const auto T = view.graphs.size();
  team.each(t, [&](int s) {
    for (std::size_t o = 0; o < T; ++o)
      if (o != static_cast<std::size_t>(s))
        take_back((*view.graphs[o])[l], s, c[s], stride, cache_.handover[o * T + static_cast<std::size_t>(s)].data());
  });
  if (remote_next) team.sync(t);
}

// The handover buffers shard s's parts rotate against, by partner shard
// (null for its own), written into `via`.
double* const* Replayer::handover_row(int s, std::vector<double*>& via) const {
  const auto T = via.size();
  for (std::size_t o = 0; o < T; ++o)
    via[o] = o == static_cast<std::size_t>(s) ? nullptr : cache_.handover[static_cast<std::size_t>(s) * T + o].data();
  return via.data();
}

// The reverse sweep over every layer, last first, on the (c, lambda) pairs:
// recovers each layer's inputs and adds shard s's d f / d phi_l to dphi[s][l].
void Replayer::backward(int t, Team& team, const ReplaySource& source, const View& view, double* const* state,
                        const double* theta, double pare, const std::int32_t* lp,
                        std::vector<std::vector<double>>& dphi) const {
  const std::vector<LayerInfo>& layers = *source.layers;
  if (t == 0) {
    std::size_t widest = 0;
    for (const RemoteLayer& remote : *view.remote) widest = std::max(widest, remote.entries);
    cache_.swap.resize(2 * widest);
  }
  team.each(t, [&](int s) {
    ReplayTape& tape = *view.tapes[s];
    tape.cursor = tape.flags.size();
  });
  team.sync(t);
  const FlatGraph* flat = flat_graph(source, team, pare, view);
  std::vector<double> d(flat ? source.shards() : 0);
  std::vector<double*> via(source.shards());
  for (std::size_t l = layers.size(); l-- > 0;) {
    const Turn turn = layer_turn(layers[l], l, theta, lp);
    const bool handed = hand_over_layer(t, team, view, l, state, 2);
    if (flat) {
      flat->adjoint(l, turn, state, d.data(), view.tapes.data());
      for (std::size_t s = 0; s < d.size(); ++s) dphi[s][l] = d[s];
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
      std::vector<double*> at(source.shards());
      for (std::size_t s = 0; s < at.size(); ++s) at[s] = &dphi[s][l];
      remote_step_back(t, team, *source.comm, static_cast<int>(source.shards()), remote, turn, state,
                       cache_.ours.data() + remote.offset, cache_.theirs.data() + remote.offset, cache_.swap.data(),
                       pare, at.data());
    }
    if (handed || !view.layout) team.sync(t);
    if (handed) take_back_layer(t, team, view, l, state, 2, l > 0 && !(*view.remote)[l - 1].empty());
    source.interrupts->poll(t == 0, layer_work(source, l));
  }
}

}  // namespace monoprop
