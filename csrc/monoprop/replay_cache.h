// What a replayer keeps from call to call: the buffers each shard
// (or each block of a layout) replays in, the tapes a gradient's reverse sweep
// reads, the weights of the value, the exchange and handover buffers, a
// batch's lanes, and the layouts of the graph, made once per graph. A VQE loop
// replays thousands of times, and fresh pages would cost more than the sweep.
//
// Evaluations are const and fill these, so the replayer (replayer.h) holds
// its ReplayCache as its one mutable member; whatever changes the graph or
// the operand marks what depends on it stale (the generations below,
// stale_weights()).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "column.h"
#include "monomial_propagator.h"
#include "rank_layout.h"
#include "replay.h"
#include "replay_lanes.h"
#include "replay_layout.h"

namespace monoprop {

struct ReplayCache {
  using Weights = std::vector<std::pair<std::uint32_t, double>>;  // nonzero weights of the value, ascending
  // The buffers of a replay over some slots: a shard's, or a layout block's.
  struct Buffers {
    Column<double> c, state;  // a value's replay, a gradient's (c, lambda) pairs
    ReplayTape tape;          // what a forward sweep keeps for the reverse one
    Weights weights;
    std::size_t bytes() const {
      return c.bytes() + state.bytes() + tape.bytes() + weights.capacity() * sizeof(Weights::value_type);
    }
  };
  struct Shard : Buffers {
    bool weights_stale = true;
    Column<std::uint16_t> lengths;  // for mp_op()
  };
  // A batch's buffers and tapes, of one thread, by shard (or block).
  struct Lanes {
    std::vector<Column<double>> c, prefix;
    std::vector<LaneTape> tapes;
  };

  explicit ReplayCache(std::size_t shards = 0) : shards(shards) {}

  std::vector<Shard> shards;
  std::vector<double> ours, theirs, swap;  // the remote entries' inputs, both sides', and a swap
  std::vector<Column<double>> handover;    // [o * T + s]: shard o's part toward shard s
  std::vector<Lanes> lanes;                // by thread
  FlatGraph flat;                          // a small graph spelled out, of generation flat_generation
  std::uint64_t flat_generation = 0;
  int flat_view = 0;    // spelled out from the shards' graph (0), the layout's blocks (1), the rank layout (2)
  ReplayLayout layout;  // of generation layout_generation, if one pays
  std::optional<std::uint64_t> layout_generation;
  MonomialPropagator::LayoutUse layout_made_for = MonomialPropagator::LayoutUse::paying;
  std::vector<Buffers> blocks;  // by block of `layout`, or by shard of `rank_layout`
  RankLayout rank_layout;       // of generation layout_generation, if one pays

  // The operand's terms changed: every shard's weights are made again.
  void stale_weights() {
    for (Shard& shard : shards) shard.weights_stale = true;
  }
  std::size_t buffer_bytes() const {
    std::size_t bytes = (ours.capacity() + theirs.capacity() + swap.capacity()) * sizeof(double);
    for (const Shard& shard : shards) bytes += shard.bytes();
    for (const Buffers& block : blocks) bytes += block.bytes();
    return bytes;
  }
  std::size_t graph_bytes() const { return flat.memory() + layout.memory() + rank_layout.memory(); }
};

}  // namespace monoprop
