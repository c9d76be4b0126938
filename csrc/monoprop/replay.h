// Replaying one shard's part of a graph layer (graph.h), forward and back.
//
// c[s] (forward) or state[s] (backward) is the coefficient array of shard s
// of the rank; an entry reaches into the shard its part names. Forward sweeps
// run on plain arrays (Stride 1) or on the interleaved (c, lambda) states of a
// value-and-gradient replay (Stride 2, touching c only), so one buffer serves
// both sweeps.
#pragma once

#include <cstddef>
#include <cstdint>

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
template <int Stride>
void forward_layer(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare,
                   PareFlags* flags);

// Backwards on interleaved states (c_0, lambda_0, c_1, ...): c enters as the
// layer's output and is rewound to its input; lambda enters as d f / d c_out
// and leaves as d f / d c_in. Returns d f / d phi. A pared layer reads its
// flags from flags->cursor, which it then advances.
double adjoint_layer(const ShardLayer& layer, double cs, double sn, double* const* state, int self, double pare,
                     PareFlags* flags);

// Flags a pared forward sweep of `layer` records.
std::size_t pare_flags(const ShardLayer& layer);

}  // namespace monoprop
