// Replaying one shard's part of a graph layer (graph.h), forward and back.
//
// c[s] (forward) or state[s] (backward) is the coefficient array of shard s
// of the rank; an entry reaches into the shard its part names. Forward sweeps
// run on plain arrays of coefficients, the reverse sweep on interleaved
// (c, lambda) states.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "column.h"
#include "graph.h"

namespace monoprop {

// A pared replay's flags, one per rotating entry in forward order: whether
// paring reduced it to its cos scaling. `cursor` is where the reverse sweep
// reads the current layer's flags from.
struct PareFlags {
  Column<std::uint8_t> flags;
  std::size_t cursor = 0;
};

// Forward at (cos, sin) = (cs, sn). With pare > 0 an entry whose moved weight
// |sn| * max|c| is below pare is reduced to its cos scaling (an approximation)
// and `flags` records it.
void forward_layer(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare,
                   PareFlags* flags);

// Backwards on interleaved states (c_0, lambda_0, c_1, ...): c enters as the
// layer's output and is rewound to its input; lambda enters as d f / d c_out
// and leaves as d f / d c_in. Returns d f along the layer's scalar (d f / d
// phi for a rotation, d f / d rate for a noise layer; see Turn). A pared
// layer reads its flags from flags->cursor, which it then advances.
double adjoint_layer(const ShardLayer& layer, const Turn& turn, double* const* state, int self, double pare,
                     PareFlags* flags);

// Flags a pared forward sweep of `layer` records.
std::size_t pare_flags(const ShardLayer& layer);

// A small graph spelled out once for replays on the calling thread alone.
// Inside an optimiser a small graph is replayed thousands of times, and with
// T shards its layers hold a few entries a shard: opening each shard's
// sections, layer after layer, then costs more than the arithmetic. The
// entries here are the sections' own, in the order the sweeps walk them, and
// each is applied with the same kernel, so the results are bitwise those of
// forward_layer and adjoint_layer (unpared).
class FlatGraph {
 public:
  // Spells out graphs[s], the layers of shard s, for every shard.
  void assign(const std::vector<const Graph*>& graphs);
  void clear();
  bool empty() const { return spans_.empty(); }
  std::size_t memory() const;

  // forward_layer and adjoint_layer of layer l for every shard, in ascending
  // order; adjoint writes shard s's d f / d phi_l to d[s].
  void forward(std::size_t l, double cs, double sn, double* const* c) const;
  void adjoint(std::size_t l, const Turn& turn, double* const* state, double* d) const;

 private:
  struct Entry {
    std::uint32_t a, other, b;  // a of this shard, b of shard `other`
    std::int8_t sign;
    bool half;  // a half (x rotated, y received), else a pair or a birth
  };
  struct Span {
    std::uint32_t cos_end, rotations_end;  // where shard s's entries of layer l end in cos_ and rotations_
  };

  std::size_t shards_ = 0;
  std::vector<std::uint32_t> cos_;
  std::vector<Entry> rotations_;
  std::vector<Span> spans_;  // [l * shards + s]
};

}  // namespace monoprop
