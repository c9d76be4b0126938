// The graph's part of a save (saved_state.h), and the re-sharding of a load:
// each shard's layers as their encoded bytes and sections, the entries this
// rank shares with other ranks, and a graph's layers re-encoded between the
// slots its terms moved to when a save is loaded with another thread count.
//
// A load trusts nothing: every section must decode inside its bytes, name
// only slots its shard holds and partners the partner shard holds, and the
// shared entries must fit together, or ArgumentError says what is damaged;
// so a damaged save is refused, never replayed out of bounds. The rest of a
// propagator's state (keys, settings, frames) is the propagator's to save
// (propagator_save.h, propagator_restore.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "comm.h"
#include "errors.h"
#include "graph.h"
#include "remote.h"
#include "saved_state.h"

namespace monoprop {

namespace state_io {

inline std::string shard_name(std::size_t s, const char* what) { return "shard" + std::to_string(s) + "." + what; }

[[noreturn]] inline void damaged(const std::string& what) { throw ArgumentError("the save is damaged: " + what + "."); }

// After a step that may have failed on some ranks only (`error` set there),
// every rank learns of it before it goes on into a collective that the
// failed ranks left: those rethrow their error, the others throw naming the
// lowest failed rank. On one rank it only rethrows.
void agree(const mpi::Comm& comm, std::exception_ptr error);

}  // namespace state_io

// Where each saved term went: per saved shard and slot, (shard, slot) now.
using Moves = std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>>;

// Shard s's layers, as the arrays shard<s>.graph_*.
void save_graph(SavedState& out, std::size_t s, const Graph& graph);
// Shard s's `layers` layers, checked against the saved shards' sizes.
Graph restore_graph(const SavedState& state, std::size_t s, const std::vector<std::size_t>& sizes, std::size_t layers);

// The entries this rank shares with others, by layer (the arrays remote.*).
void save_remote(SavedState& out, const std::vector<RemoteLayer>& remote);
// Rank `rank` of `ranks`'s shared entries of `layers` layers, their terms
// moved as `moved` says; each layer's offset follows the layers before it.
// An entry's place in its block is the order both ranks exchange in, so it
// stays.
std::vector<RemoteLayer> restore_remote(const SavedState& state, const std::vector<std::size_t>& sizes,
                                        const Moves& moved, std::size_t layers, int rank, int ranks);
// Collective: every pair of ranks agrees on how many entries they share in
// each layer (a replay swaps exactly that many values, so a mismatch would
// hang it); throws on every rank alike.
void check_remote_peers(const mpi::Comm& comm, const std::vector<RemoteLayer>& remote);

// Layer l of the saved shards' graphs, re-encoded between the slots `moved`
// gives, one layer for each shard now (`sizes`: their terms). Births become
// pairs: their partners are no longer consecutive.
std::vector<ShardLayer> reshard_layer(const std::vector<Graph>& graphs, std::size_t l, const Moves& moved,
                                      const std::vector<std::size_t>& sizes);

}  // namespace monoprop
