// Replaying a graph at several parameter points at once, one lane a point.
//
// A replay is bound by memory traffic: every entry reaches one or two
// coefficients at scattered slots, and each reach pulls a 64-byte cache line
// for one 8-byte value. With the coefficients of K points side by side per
// slot (lane k of slot a at c[a * K + k]; a reverse sweep's (c, lambda) of
// lane k at state[2 * (a * K + k)]), an entry is decoded once for all K
// points and each line it pulls holds up to eight of their values.
//
// Each lane does exactly the arithmetic of a one-point sweep (replay.h) at its
// own (cos, sin), entry by entry, and sums its d f / d phi in the same order
// and lanes, so every point's value and gradient are bitwise those of a
// one-point replay of the same view. Unpared replays only: paring decides per
// entry and per point, which a batch replays point by point instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "column.h"
#include "graph.h"
#include "noise.h"
#include "replay.h"

namespace monoprop {

// The widest batch one sweep replays: 16 lanes are two cache lines of
// coefficients a slot forward, four of states backward.
inline constexpr int kMostLanes = 16;

// A layer's numbers in each lane, and its tape shrink (ReplayTape::shrink).
struct LaneTurns {
  double cs[kMostLanes], sn[kMostLanes], dcs[kMostLanes], dsn[kMostLanes];
  std::uint8_t shrink[kMostLanes];

  // Lane k turns by `turn`; its shrink is needed where a tape is kept.
  void set(int k, const Turn& turn, bool taped) {
    cs[k] = turn.cs;
    sn[k] = turn.sn;
    dcs[k] = turn.dcs;
    dsn[k] = turn.dsn;
    shrink[k] = taped ? static_cast<std::uint8_t>(ReplayTape::shrink(turn.cs)) : 0;
  }
  void copy(int to, int from) {
    cs[to] = cs[from];
    sn[to] = sn[from];
    dcs[to] = dcs[from];
    dsn[to] = dsn[from];
    shrink[to] = shrink[from];
  }
};

// What a forward sweep over K lanes leaves for the reverse sweep, lane by
// lane as a one-point ReplayTape would keep it: each slot's debt per lane
// (debt[a * K + k]) and the inputs each lane's scalings keep. Every layer
// marks where its kept inputs begin in every lane.
struct LaneTape {
  struct Lane {
    std::vector<double> inputs;
    std::vector<std::uint8_t> owed;
    std::vector<std::size_t> starts;
  };
  Column<std::uint8_t> debt;
  std::vector<Lane> lanes;

  // Ready for a forward sweep over a shard of `slots` terms in `width` lanes.
  void begin(std::size_t slots, int width);
  std::size_t bytes() const;
};

// Each of `slots` coefficients of `from` into `lanes` lanes of `to`.
void fill_lanes(int lanes, const double* from, std::size_t slots, double* to);
// Spreads the lanes' coefficients of `slots` slots, in place, into (c, 0)
// states: x must have room for twice as many values.
void spread_lanes(int lanes, double* x, std::size_t slots);

// Bytes of one last-level cache (the largest cache sysfs lists for the first
// core, else what sysconf says), or 8 MiB where the system does not say.
std::uint64_t last_level_cache();

// One shard's part of layer `layer` forward in `lanes` lanes (1, 2, 4, 8 or
// 16) of the buffers c; with a tape, records what the reverse sweep needs.
void forward_lanes(int lanes, const ShardLayer& layer, const LaneTurns& turn, double* const* c, int self,
                   LaneTape* tape);

// Backwards on the lanes' (c, lambda) states; writes each lane's d f along
// the layer's scalar to d[k].
void adjoint_lanes(int lanes, const ShardLayer& layer, const LaneTurns& turn, double* const* state, int self,
                   LaneTape& tape, double* d);

}  // namespace monoprop
