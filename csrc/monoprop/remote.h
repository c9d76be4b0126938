// Graph entries whose two terms live on different ranks: a gate pairs a term
// a with its partner a xor G, and routing (routing.h) may place the two on
// different ranks. Both ranks record such an entry, each with its own term, in
// the same canonical order: for ranks r < p, first the entries r asked p
// about (in r's asking order), then those p asked r about. A replay then
// needs no indices from the other side: each rank sends the inputs of its
// terms in that order, receives its peer's, and updates its own terms.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "noise.h"

namespace monoprop {

// The entries one rank shares with one peer in one layer.
struct RemoteBlock {
  int peer = 0;
  bool counts = false;    // this rank counts the block's rotations and d/dphi (the lower rank of the two)
  std::size_t start = 0;  // position of the first entry in the layer's exchange
  std::vector<std::uint32_t> shards, slots;  // this rank's term of each entry
  // Per entry, the kind and the sign s as this rank applies it:
  //   +-1  pair:   c <- cos c - s sin c'        (c' the peer's term)
  //   +-2  half:   c <- cos c                   (this term rotates, the peer's receives)
  //   +-3  half:   c <- c + s sin c'            (this term receives the peer's sine branch)
  std::vector<std::int8_t> codes;

  std::size_t size() const { return codes.size(); }
};

struct RemoteLayer {
  std::vector<RemoteBlock> blocks;  // by ascending peer
  std::size_t entries = 0;          // over all blocks
  std::size_t offset = 0;           // position of the layer in the graph-wide exchange buffers

  bool empty() const { return entries == 0; }
  std::size_t bytes() const {
    std::size_t n = sizeof(RemoteLayer) + blocks.capacity() * sizeof(RemoteBlock);
    for (const RemoteBlock& b : blocks) n += b.shards.capacity() * 8 + b.codes.capacity();
    return n;
  }
};

// Calls f(block, e, i) for each entry i in [lo, hi) of the layer, e being
// its position within its block.
template <typename F>
void for_entries(const RemoteLayer& layer, std::size_t lo, std::size_t hi, F&& f) {
  for (const RemoteBlock& b : layer.blocks) {
    const std::size_t from = std::max(lo, b.start), to = std::min(hi, b.start + b.size());
    for (std::size_t i = from; i < to; ++i) f(b, i - b.start, i);
  }
}

// Entries [lo, hi) of a layer forward at (cos, sin) = (cs, sn): the term of
// entry i is c[shard][stride * slot], theirs[i] the peer's input.
void remote_forward(const RemoteLayer& layer, std::size_t lo, std::size_t hi, double cs, double sn, double* const* c,
                    std::size_t stride, const double* theirs, double pare);

// The same entries backwards on interleaved states (c, lambda) per slot:
// theirs_lambda holds the peer's lambda per entry (its c output follows from
// the forward inputs of both terms, ours_in and theirs_in). Returns the
// d f along the layer's scalar (Turn) of the blocks this rank counts.
double remote_adjoint(const RemoteLayer& layer, std::size_t lo, std::size_t hi, const Turn& turn, double* const* state,
                      const double* theirs_lambda, const double* ours_in, const double* theirs_in, double pare);

}  // namespace monoprop
