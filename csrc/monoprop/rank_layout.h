// A graph laid out again over the ranks, so that most layers need no
// exchange between them.
//
// Routing files a term on the rank a linear hash of its bits names, so that a
// gate's lookups all reach one peer (routing.h); but for about half the
// gates that peer is another rank, and then every entry of the layer pairs a
// term of each rank: a replay sends both inputs of each such entry over and
// back, layer after layer, which costs more than the arithmetic. A replay is
// free to move slots between ranks, though. Split them instead by a few bits
// of their terms, chosen from the graph (layout_split.h): a rotation by G
// then stays on one rank unless G flips a chosen bit, and most layers of a
// local circuit need no exchange at all.
//
// The layout is made once per graph, collectively: every rank places its
// slots, learns where the partners of its shared entries went, and sends
// each entry, its starting coefficients and its weights to their new rank,
// which encodes them as a graph of its own (shards as before, the slots'
// old shards) with the entries that still span two ranks as remote layers
// in the order both agree on (remote.h). Every entry does the same arithmetic
// as in the shards' graph; only the order of the sums of d f / d phi differs,
// fixed by the graph and (P, T), so results stay bitwise reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "comm.h"
#include "graph.h"
#include "layout_split.h"
#include "remote.h"

namespace monoprop {

class RankLayout {
 public:
  using List = std::vector<std::pair<std::uint32_t, double>>;

  // Lays out this rank's part of the graph (graphs[s] and keys[s] of shard s,
  // `remote` its shared entries, bases[s] its starting coefficients,
  // weights[s] its value's weights by slot) over the ranks of `comm`.
  // Collective. Returns false, leaving the layout empty, where the rank count
  // is not a power of two or no split pays (unless `always`), on every rank
  // alike.
  bool assign(const mpi::Comm& comm, const std::vector<const Graph*>& graphs, const std::vector<RemoteLayer>& remote,
              const std::vector<SlotKeys>& keys, int words, int positions, const std::vector<const double*>& bases,
              const std::vector<const List*>& weights, bool always);
  void clear();
  bool empty() const { return graphs_.empty(); }
  std::size_t memory() const;

  // Shard s's layers, slots, starting coefficients and weights here.
  const Graph& graph(std::size_t s) const { return graphs_[s]; }
  std::size_t size(std::size_t s) const { return bases_[s].size(); }
  const std::vector<double>& base(std::size_t s) const { return bases_[s]; }
  const List& weights(std::size_t s) const { return weights_[s]; }
  // The entries that still span two ranks, by layer, and their count.
  const std::vector<RemoteLayer>& remote() const { return remote_; }
  std::size_t remote_entries() const { return remote_entries_; }

 private:
  std::vector<Graph> graphs_;  // by shard
  std::vector<std::vector<double>> bases_;
  std::vector<List> weights_;
  std::vector<RemoteLayer> remote_;
  std::size_t remote_entries_ = 0;
};

}  // namespace monoprop
