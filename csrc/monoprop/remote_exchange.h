// A remote layer (remote.h) as one team replays it on one rank, with its
// peers: forward, the entries' inputs swapped with the peers and then each
// shard's share updated; backwards, their lambdas swapped and each shard's
// share adding its d f / d phi to dphi[s]. Every rank of the layer calls
// alike, each on its `shards` shards.
#pragma once

#include "comm.h"
#include "noise.h"
#include "remote.h"
#include "team.h"

namespace monoprop {

// `ours` and `theirs` receive both sides' inputs (what backwards reads).
void remote_step(int t, Team& team, const mpi::Comm& comm, int shards, const RemoteLayer& layer, double cs, double sn,
                 double* const* c, double* ours, double* theirs, double pare);
// On interleaved states (c, lambda); `swap` holds 2 * layer.entries doubles.
void remote_step_back(int t, Team& team, const mpi::Comm& comm, int shards, const RemoteLayer& layer, const Turn& turn,
                      double* const* state, const double* ours, const double* theirs, double* swap, double pare,
                      double* const* dphi);

}  // namespace monoprop
