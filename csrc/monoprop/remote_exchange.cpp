// The replay's side of the entries that span two ranks (remote.h): a
// remote layer forward, exchanging its inputs with the peers, and backwards,
// exchanging lambdas. The team's primary makes the MPI call while the others
// wait at a barrier.
#include "remote_exchange.h"

namespace monoprop {

namespace {

// Each shard sends its share of the layer's entries (chunk), value
// base[shard][stride * slot] each, the primary swaps them with the peers, and
// `received` holds the peers' values once every thread is past the last
// barrier. Shares go by shard, not by thread, so that a replay on the calling
// thread alone does the same arithmetic as the team.
void swap_with_peers(int t, Team& team, const mpi::Comm& comm, int shards, const RemoteLayer& layer,
                     const double* const* base, std::size_t stride, double* send, double* received) {
  team.each(t, [&](int s) {
    const auto [lo, hi] = chunk(s, shards, layer.entries);
    for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
      send[i] = base[b.shards[e]][stride * b.slots[e]];
    });
  });
  team.sync(t);
  if (t == 0) {
    std::vector<mpi::Parcel> parcels;
    for (const RemoteBlock& b : layer.blocks)
      parcels.push_back({b.peer, send + b.start, b.size(), received + b.start, b.size(), nullptr});
    comm.exchange(parcels, sizeof(double));
  }
  team.sync(t);
}

// Forward through a remote layer: the entries' inputs are swapped, then each
// shard's share is updated.
}  // namespace

void remote_step(int t, Team& team, const mpi::Comm& comm, int shards, const RemoteLayer& layer, double cs, double sn,
                 double* const* c, double* ours, double* theirs, double pare) {
  swap_with_peers(t, team, comm, shards, layer, c, 1, ours, theirs);
  team.each(t, [&](int s) {
    const auto [lo, hi] = chunk(s, shards, layer.entries);
    remote_forward(layer, lo, hi, cs, sn, c, 1, theirs, pare);
  });
}

// Backwards: the entries' lambdas (odd places of the interleaved states) are
// swapped; each shard's share adds its d f / d phi to dphi[s].
void remote_step_back(int t, Team& team, const mpi::Comm& comm, int shards, const RemoteLayer& layer, const Turn& turn,
                      double* const* state, const double* ours, const double* theirs, double* swap, double pare,
                      double* const* dphi) {
  double* received = swap + layer.entries;
  std::vector<const double*> lambdas(static_cast<std::size_t>(shards));
  for (std::size_t s = 0; s < lambdas.size(); ++s) lambdas[s] = state[s] + 1;
  swap_with_peers(t, team, comm, shards, layer, lambdas.data(), 2, swap, received);
  team.each(t, [&](int s) {
    const auto [lo, hi] = chunk(s, shards, layer.entries);
    *dphi[s] += remote_adjoint(layer, lo, hi, turn, state, received, ours, theirs, pare);
  });
}

}  // namespace monoprop
