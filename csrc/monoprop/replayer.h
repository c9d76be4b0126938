// The replays of a recorded graph: values, gradients and batches at any
// parameter point, and the sweeps a build runs at its seed.
//
// A replayer owns everything replays keep from call to call (ReplayCache:
// buffers, tapes, weights, the layouts of the graph) and nothing else: the
// graph, where each shard's replay starts and the settings are the
// propagator's, lent for one call as a ReplaySource. Its members are const
// because an evaluation is: what they fill is a cache, remade whenever the
// source's generation (the graph) changes, or its weights go stale (the
// operand's terms changed).
//
// Shard s of the source is replayed by thread s of a team (team.h), or, on a
// laid-out graph, block s of the layout (replay_layout.h); on several ranks
// a layout over the ranks (rank_layout.h) replaces the layout over the
// threads. For a fixed thread count every sum is folded in one order (each
// shard's, then the shards ascending, then the ranks), so a result is
// bitwise reproducible, and a batch's point is bitwise its single replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "column.h"
#include "comm.h"
#include "graph.h"
#include "interrupt.h"
#include "memory_budget.h"
#include "monomial_propagator.h"
#include "remote.h"
#include "replay.h"
#include "replay_cache.h"
#include "replay_layout.h"
#include "team.h"

namespace monoprop {

// What a replay reads of a propagator, lent for one call.
struct ReplaySource {
  using Weights = ReplayCache::Weights;
  std::vector<Graph*> graphs;                // by shard, aligned with `layers`; a layout takes their sections
  std::vector<const Column<double>*> bases;  // the coefficients each shard's replay starts from
  std::vector<ReplayLayout::Keys> keys;      // each shard's keys, in slot order
  const std::vector<LayerInfo>* layers = nullptr;
  const std::vector<RemoteLayer>* remote = nullptr;  // the entries that span two ranks, by layer
  std::size_t remote_entries = 0;                    // over every layer of `remote`
  std::size_t entries = 0;                           // graph entries over the shards
  std::size_t terms = 0;                             // held over the shards
  std::uint64_t generation = 0;                      // changes whenever the graph does
  int key_words = 1;                                 // 64-bit words a key
  int slots = 2;                                     // slots a key (2 per mode)
  const mpi::Comm* comm = nullptr;
  Interrupts* interrupts = nullptr;  // polled between layers
  const MemoryBudget* budget = nullptr;
  // Replays whose work is below this run on the calling thread (small_replay()).
  std::size_t small_work = 0;
  MonomialPropagator::LayoutUse layout_use = MonomialPropagator::LayoutUse::paying;
  int point_lanes = 0;  // a batch's lanes; 0: chosen by the cache (point_lanes())
  double core = 0.0;    // added to every value (the identity term, kept apart)
  Dropped held;         // what the operand dropped before the graph: a bounded replay starts from it
  // Fills shard s's nonzero weights of the value f = sum_i w_i c_i, ascending by slot.
  std::function<void(std::size_t, Weights&)> weigh;

  std::size_t shards() const { return graphs.size(); }
  int ranks() const { return comm->size(); }
};

class Replayer {
 public:
  using Weights = ReplayCache::Weights;
  explicit Replayer(std::size_t shards = 0) : cache_(shards) {}

  // The value at `theta` (with the source's core), over the ranks. `lp`, when
  // given, is each layer's parameter index (graph order); `pare` drops the
  // entries below it; with `total`, also what the operand held dropped and
  // what the replay drops (truncation_error), folded like the value.
  double value(const ReplaySource& source, std::span<const double> theta, double pare, const std::int32_t* lp,
               Dropped* total) const;
  // The value, as value(), and its gradient into `out` (theta.size() of them).
  double gradient(const ReplaySource& source, std::span<const double> theta, double* out, double pare,
                  const std::int32_t* lp, Dropped* total) const;
  // `count` points of `width` parameters side by side (replayer_batch.cpp):
  // values, and gradients when `gradients` is not null. False, having written
  // nothing, where the batch does not pay (the caller goes point by point).
  bool batch(const ReplaySource& source, const double* points, std::size_t count, std::size_t width,
             const std::int32_t* lp, double* values, double* gradients) const;
  // Replays every shard's coefficients to the end of the graph; shard s's are
  // then replayed(s). With `dropped` (one per shard), a bounded replay.
  void replay_all(const ReplaySource& source, const double* theta, Dropped* dropped = nullptr) const;
  const Column<double>& replayed(std::size_t s) const { return cache_.shards[s].c; }
  // Inside the caller's team: the shards' own graph forward on c (a build at its seed).
  void sweep_shards(int t, Team& team, const ReplaySource& source, double* const* c, const double* theta) const;

  // The blocks of the layout this graph's replays use: threads, ranks, or 0 (none).
  std::size_t blocks(const ReplaySource& source) const;
  // Gives the graph back to the shards (an operation other than a replay is
  // about to read or change it) and drops the layout.
  void take_graph_back(const ReplaySource& source) const;
  // Drops the layout, whose graph the shards no longer need (a load replaces
  // it, a contraction folds it).
  void drop_layout() const;
  // The operand's terms changed: every shard's weights (or shard s's) are made again.
  void stale_weights() const { cache_.stale_weights(); }
  void stale_weights(std::size_t s) const { cache_.shards[s].weights_stale = true; }
  // Scratch a view of shard 0's keys fills (their lengths).
  Column<std::uint16_t>& lengths() const { return cache_.shards[0].lengths; }
  std::size_t buffer_bytes() const { return cache_.buffer_bytes(); }
  std::size_t graph_bytes() const { return cache_.graph_bytes(); }

 private:
  // The slots a replay's threads own, their graphs and tapes: the shards',
  // or the blocks of a layout (replay_layout.h), or the rank layout's.
  struct View {
    std::vector<const Graph*> graphs;
    std::vector<ReplayTape*> tapes;
    std::vector<Column<double>*> values, states;  // the buffers of a value's and a gradient's replays
    std::vector<std::size_t> sizes;
    const ReplayLayout* layout = nullptr;              // null: the shards
    bool ranked = false;                               // the shards of the rank layout
    const std::vector<RemoteLayer>* remote = nullptr;  // the entries that span two ranks, by layer
    std::size_t remote_entries = 0;
  };

  // Layouts and views (replayer.cpp).
  bool small_replay(const ReplaySource& source) const;
  const ReplayLayout* layout(const ReplaySource& source) const;
  void lay_out_ranks(const ReplaySource& source) const;
  // With `ranked`, the rank layout where there is one (values and gradients;
  // a replay whose values the shards read needs their own graph).
  View view(const ReplaySource& source, const ReplayLayout* layout, bool ranked = false) const;
  double* start(const ReplaySource& source, int s, const View& view, bool gradient) const;
  const FlatGraph* flat_graph(const ReplaySource& source, const Team& team, double pare, const View& view) const;
  const Weights& weights(const ReplaySource& source, std::size_t s) const;
  const Weights& weights(const ReplaySource& source, std::size_t s, const View& view) const;
  double weighted_sum(const ReplaySource& source, int s, const View& view, const double* c) const;
  double* spread_adjoint(const ReplaySource& source, int s, const View& view) const;

  // The sweeps (replayer_sweeps.cpp). `dropped` (one per shard, or null): a bounded replay.
  void forward(int t, Team& team, const ReplaySource& source, const View& view, double* const* c, const double* theta,
               double pare, const std::int32_t* lp, bool reverse, Dropped* dropped = nullptr) const;
  void backward(int t, Team& team, const ReplaySource& source, const View& view, double* const* state,
                const double* theta, double pare, const std::int32_t* lp, std::vector<std::vector<double>>& dphi) const;
  bool hand_over_layer(int t, Team& team, const View& view, std::size_t l, double* const* c, std::size_t stride) const;
  void take_back_layer(int t, Team& team, const View& view, std::size_t l, double* const* c, std::size_t stride,
                       bool remote_next) const;
  double* const* handover_row(int s, std::vector<double*>& via) const;

  // Batches (replayer_batch.cpp): the lanes a sweep takes (0: point by
  // point), and one thread's points [lo, hi) in sweeps of that many lanes.
  struct Batch {
    const double* points;
    std::size_t width;
    const std::int32_t* lp;
    std::size_t shared;  // the layers every point turns alike, replayed once (values)
    bool gradient;
  };
  std::size_t shared_layers(const ReplaySource& source, const double* points, std::size_t count, std::size_t width,
                            const std::int32_t* lp) const;
  int point_lanes(const ReplaySource& source, std::size_t count, bool gradient, std::size_t shared,
                  const View& view) const;
  std::vector<std::vector<std::uint32_t>> touched_slots(const ReplaySource& source, const View& view,
                                                        std::size_t from) const;
  void evaluate_lanes(int t, const ReplaySource& source, const View& view, int lanes, const Batch& batch,
                      const std::vector<std::vector<std::uint32_t>>& touched, std::size_t lo, std::size_t hi,
                      double* values, double* gradients) const;

  mutable ReplayCache cache_;
};

// Layer l's numbers at theta (per-layer indices lp, or the graph's own).
inline Turn layer_turn(const LayerInfo& info, std::size_t l, const double* theta, const std::int32_t* lp) {
  const std::int32_t p = lp ? lp[l] : info.parameter;
  return info.turn(p < 0 ? 0.0 : theta[p]);
}

// The work of layer l for the interrupt polls of a replay: shard 0's entries
// (the shards are alike), and some for the layer's own overhead.
inline std::size_t layer_work(const ReplaySource& source, std::size_t l) {
  const ShardLayer& layer = (*source.graphs[0])[l];
  return 64 + layer.n_cos() + layer.n_rotations();
}

}  // namespace monoprop
