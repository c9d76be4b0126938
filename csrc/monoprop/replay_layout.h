// A graph laid out again for a team replay, so that most layers need no
// exchange between the threads and no barrier.
//
// The store files a term in the shard its hash names, so in a team replay
// nearly every rotation pairs slots of two shards: each layer's partners are
// handed over and the team meets twice (replay.h). But a rotation by a
// generator G pairs a term P with P G, whose bits are those of P xor G
// (Pauli strings and Majorana monomials alike, up to sign). Split the slots
// instead by a few of their terms' bits, B: P and P G then fall in the same
// block unless G has a bit of B. A circuit's generators are local, so most of
// them miss a few well-chosen positions; those layers stay inside every
// block, and each thread replays its block through them alone, meeting the
// others only at the layers that flip a bit of B.
//
// The layout renumbers every slot (block, index) and re-encodes each layer
// per block (births become pairs: their partners are no longer consecutive).
// The arithmetic of every entry is unchanged; only the order in which a
// layer's sums add up differs from the shards' own graph, and it is fixed by
// the graph and T, so a replay stays bitwise reproducible for a fixed T.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph.h"
#include "layout_split.h"

namespace monoprop {

class ReplayLayout {
 public:
  using Keys = SlotKeys;

  // Lays out the shards' graphs (graphs[s] of shard s, keys[s] its terms'
  // keys, `positions` bits each) over `blocks` blocks, one a thread. Returns
  // false, leaving the layout empty, where no split by bits pays (unless
  // `always`): where every choice leaves the blocks' work too uneven or too
  // many layers crossing; or where the terms differ in no bit.
  //
  // The layout takes the graph over: each shard's layer gives up its bytes
  // (keeping its sections) once the blocks hold it, so that the graph is not
  // held twice; restore() writes them again, exactly as recorded (a layer
  // that could not be is left as it was).
  bool assign(const std::vector<Graph*>& graphs, const std::vector<Keys>& keys, int words, int positions, int blocks,
              bool always = false);
  // Gives the shards' layers their bytes back (keys as for assign, the
  // store's now) and empties the layout.
  void restore(const std::vector<Graph*>& graphs, const std::vector<Keys>& keys, int words);
  void clear();
  bool empty() const { return graphs_.empty(); }
  std::size_t memory() const;

  std::size_t blocks() const { return graphs_.size(); }
  // Block b's layers (its graph) and number of slots.
  const Graph& graph(std::size_t b) const { return graphs_[b]; }
  std::size_t size(std::size_t b) const { return origin_[b].size(); }
  // Whether some block's part of layer l reaches into another block.
  bool crossing(std::size_t l) const { return crossing_[l] != 0; }
  // Block b's share of a value per slot listed sparsely by shard (lists[s]
  // of shard s, (slot, value) in ascending slot order): (index, value) in
  // ascending index order.
  using List = std::vector<std::pair<std::uint32_t, double>>;
  List select(std::size_t b, const std::vector<const List*>& lists) const;
  // Block b's coefficients from the shards' arrays: to[j] = from[s][i] for
  // the slot (s, i) at index j.
  void gather(std::size_t b, const double* const* from, double* to) const;
  // And back: to[s][i] = from[j].
  void scatter(std::size_t b, const double* from, double* const* to) const;

 private:
  std::vector<Graph> graphs_;                       // by block
  std::vector<std::vector<std::uint32_t>> origin_;  // by block: shard << shift_ | slot, of each index
  std::vector<std::int16_t> tops_;                  // by layer: the top slot of its generator (-1: none)
  int shift_ = 0;
  std::uint32_t mask_ = 0;
  std::vector<std::uint8_t> crossing_;  // by layer
};

}  // namespace monoprop
