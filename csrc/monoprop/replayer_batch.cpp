// The replayer's batches: values and gradients at many parameter points of
// one graph.
//
// A batch is replayed in lanes (replay_lanes.h): the coefficients of up to
// 16 points side by side per slot, so that each graph entry is decoded once
// for all of them. The threads split the points, each replaying the whole
// view (every shard or block, in ascending order, as a replay on the calling
// thread does) for its own: a one-point replay spends a barrier or two a
// layer and a handover on crossing layers, which points split over threads do
// without. The layers all points turn alike are replayed once (values), and
// where the lanes would not stay in the cache the points go one by one
// (point_lanes). Every lane does a one-point replay's arithmetic in its
// order, so each point's results are bitwise those of a single call.
#include <algorithm>

#include "replay_lanes.h"
#include "replayer.h"

namespace monoprop {

// Values (and gradients) side by side, or false where a point-by-point
// replay of the whole team pays more.
bool Replayer::batch(const ReplaySource& source, const double* points, std::size_t count, std::size_t width,
                     const std::int32_t* lp, double* values, double* gradients) const {
  const bool gradient = gradients != nullptr;
  // The layers (graph order) before the first whose parameter differs between the points: a value's
  // replay runs them once for all points (a gradient's reverse sweep needs every point's own).
  const Batch batch{points, width, lp, gradient ? 0 : shared_layers(source, points, count, width, lp), gradient};
  const View v = view(source, layout(source), true);
  const int lanes = point_lanes(source, count, gradient, batch.shared, v);
  if (lanes == 0) return false;
  const int T = static_cast<int>(source.shards());
  cache_.lanes.resize(source.shards());
  // Every thread reads every shard's weights: made here, before they share them.
  for (std::size_t s = 0; s < source.shards(); ++s) weights(source, s, v);
  std::vector<std::vector<std::uint32_t>> touched;
  if (batch.shared > 0) touched = touched_slots(source, v, batch.shared);
  Team::run(T, false, [&](int t, Team&) {
    const auto [lo, hi] = chunk(t, T, count);
    evaluate_lanes(t, source, v, lanes, batch, touched, lo, hi, values, gradients);
  });
  return true;
}

// The number of layers, in graph order, that every point turns alike: those
// before the first whose parameter differs between two points (a landscape
// over a few parameters of a Heisenberg graph shares every layer before the
// first of theirs).
std::size_t Replayer::shared_layers(const ReplaySource& source, const double* points, std::size_t count,
                                    std::size_t width, const std::int32_t* lp) const {
  const std::vector<LayerInfo>& layers = *source.layers;
  const std::size_t L = layers.size();
  for (std::size_t l = 0; l < L; ++l) {
    const std::int32_t p = lp ? lp[l] : layers[l].parameter;
    if (p < 0) continue;
    const double first = points[static_cast<std::size_t>(p)];
    for (std::size_t i = 1; i < count; ++i)
      if (points[i * width + static_cast<std::size_t>(p)] != first) return l;
  }
  return L;
}

// The slots of each shard (or block) that the layers from `from` on reach,
// ascending. After the layers all points share, only these differ between
// the points: the others hold what the shared layers left, in every lane.
std::vector<std::vector<std::uint32_t>> Replayer::touched_slots(const ReplaySource& source, const View& view,
                                                                std::size_t from) const {
  const std::size_t S = source.shards(), L = source.layers->size();
  std::vector<std::vector<std::uint8_t>> reached(S);
  for (std::size_t s = 0; s < S; ++s) reached[s].assign(view.sizes[s], 0);
  for (std::size_t l = from; l < L; ++l)
    for (std::size_t s = 0; s < S; ++s) {
      const ShardLayer& layer = (*view.graphs[s])[l];
      SectionReader cos(layer, layer.cos);
      for (std::uint32_t k = 0; k < layer.cos.count; ++k) reached[s][cos.cos()] = 1;
      for (const Part& part : layer.parts) {
        for (std::uint32_t k = 0; k < part.births.count; ++k) reached[part.shard][part.births.base + k] = 1;
        SectionReader births(layer, part.births);
        for (std::uint32_t k = 0; k < part.births.count; ++k) {
          bool negative;
          reached[s][births.next(negative)] = 1;
        }
        for (const Section* section : {&part.pairs, &part.halves}) {
          SectionReader reader(layer, *section);
          for (std::uint32_t k = 0; k < section->count; ++k) {
            bool negative;
            reached[s][reader.next(negative)] = 1;
            reached[part.shard][reader.partner(k)] = 1;
          }
        }
      }
    }
  std::vector<std::vector<std::uint32_t>> touched(S);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t a = 0; a < reached[s].size(); ++a)
      if (reached[s][a]) touched[s].push_back(static_cast<std::uint32_t>(a));
  return touched;
}

// The lanes of one sweep, or 0 to go point by point. Lanes pay where the
// graph's entries cost more than the coefficients they reach: where a
// thread's lanes stay in its share of the last-level cache. A graph whose
// coefficients fill that share on their own is bound by the cache lines its
// entries pull, and the lanes of K points pull K times as many (lines the
// entries of one point share are shared no more): there a batch goes point
// by point, each a replay of the whole team, unless the points share most
// layers (a value's replay runs those once). At most 16 lanes, no more than
// there are points a thread, nor than the memory budget grants.
int Replayer::point_lanes(const ReplaySource& source, std::size_t count, bool gradient, std::size_t shared,
                          const View& view) const {
  const std::size_t T = source.shards();
  if (source.point_lanes > 0) return source.point_lanes;
  if (count < T) return 0;
  std::size_t slots = 0;
  for (const std::size_t size : view.sizes) slots += size;
  const std::uint64_t lane_bytes = slots * (gradient ? 2 * sizeof(double) + 1 : sizeof(double));
  const std::uint64_t cache_share = last_level_cache() / 2 / T;
  const std::size_t per_thread = (count + T - 1) / T;
  int lanes = 1;
  while (lanes < kMostLanes && static_cast<std::size_t>(lanes) < per_thread &&
         lane_bytes * static_cast<std::uint64_t>(2 * lanes) <= cache_share)
    lanes *= 2;
  if (lane_bytes * static_cast<std::uint64_t>(lanes) > cache_share && 2 * shared < source.layers->size()) return 0;
  const std::uint64_t bytes = lane_bytes * static_cast<std::uint64_t>(lanes) * T;
  if (bytes < (std::uint64_t{64} << 20)) return lanes;  // too little to be worth reading /proc for the budget
  MemoryBudget budget = *source.budget;
  budget.start();
  for (; lanes >= 1; lanes /= 2)
    if (budget.grant(lane_bytes * static_cast<std::uint64_t>(lanes) * T)) return lanes;
  return 0;
}

// Thread t's points [lo, hi), `lanes` at a time. A last sweep of fewer points
// runs in the next power of two of lanes, its extra lanes repeating its last
// point.
void Replayer::evaluate_lanes(int t, const ReplaySource& source, const View& view, int lanes, const Batch& batch,
                              const std::vector<std::vector<std::uint32_t>>& touched, std::size_t lo, std::size_t hi,
                              double* values, double* gradients) const {
  const std::size_t S = source.shards(), L = source.layers->size();
  const std::vector<LayerInfo>& layers = *source.layers;
  const double* points = batch.points;
  const std::size_t width = batch.width, shared = batch.shared;
  const std::int32_t* lp = batch.lp;
  const bool gradient = batch.gradient;
  ReplayCache::Lanes& mine = cache_.lanes[static_cast<std::size_t>(t)];
  mine.c.resize(S);
  mine.tapes.resize(S);
  std::vector<double*> c(S);
  std::vector<LaneTurns> turns(L);
  // Where every point's replay starts: the shards' coefficients, or the layout's blocks' gathered
  // from them, after the layers every point turns alike, replayed here once in one lane.
  std::vector<Column<double>>& prefix = mine.prefix;
  prefix.resize(S);
  std::vector<double*> from(S);
  std::vector<const double*> bases;
  for (const Column<double>* base : source.bases) bases.push_back(base->data());
  for (std::size_t s = 0; s < S; ++s) {
    from[s] = const_cast<double*>(source.bases[s]->data());  // read only, unless copied below
    if (shared == 0 && !view.layout) continue;
    prefix[s].reserve_huge(view.sizes[s]);
    prefix[s].extend(view.sizes[s]);
    if (view.layout) {
      view.layout->gather(s, bases.data(), prefix[s].data());
    } else {
      std::copy(source.bases[s]->begin(), source.bases[s]->end(), prefix[s].data());
    }
    from[s] = prefix[s].data();
  }
  for (std::size_t l = 0; l < shared; ++l) {
    turns[l].set(0, layer_turn(layers[l], l, points + lo * width, lp), false);
    for (std::size_t s = 0; s < S; ++s)
      forward_lanes(1, (*view.graphs[s])[l], turns[l], from.data(), static_cast<int>(s), nullptr);
    source.interrupts->poll(t == 0, layer_work(source, l));
  }
  // Whether each weighted slot is one the unshared layers reach (else every lane holds its prefix value).
  std::vector<std::vector<std::uint8_t>> weight_moves(shared > 0 ? S : 0);
  for (std::size_t s = 0; s < weight_moves.size(); ++s)
    for (const auto& [i, w] : weights(source, s, view))
      weight_moves[s].push_back(std::binary_search(touched[s].begin(), touched[s].end(), i));
  std::vector<double> dphi(gradient ? S * L * static_cast<std::size_t>(lanes) : 0);  // [(s * L + l) * K + k]
  for (std::size_t first = lo; first < hi; first += static_cast<std::size_t>(lanes)) {
    const std::size_t n = std::min(static_cast<std::size_t>(lanes), hi - first);
    int K = 1;
    while (static_cast<std::size_t>(K) < n) K *= 2;
    const auto k_of = [&](int k) { return std::min(static_cast<std::size_t>(k), n - 1); };
    for (std::size_t l = shared; l < L; ++l) {
      const std::int32_t p = lp ? lp[l] : layers[l].parameter;
      const double* previous = nullptr;
      for (int k = 0; k < K; ++k) {
        const double* x = points + (first + k_of(k)) * width;
        // A lane at its neighbour's angle takes its numbers: a landscape varies a few parameters.
        if (previous && (p < 0 || x[p] == previous[p]))
          turns[l].copy(k, k - 1);
        else
          turns[l].set(k, layer_turn(layers[l], l, x, lp), gradient);
        previous = x;
      }
    }
    for (std::size_t s = 0; s < S; ++s) {
      const std::size_t size = view.sizes[s];
      Column<double>& buffer = mine.c[s];
      buffer.reserve_huge((gradient ? 2 : 1) * size * static_cast<std::size_t>(K));
      buffer.extend((gradient ? 2 : 1) * size * static_cast<std::size_t>(K));
      if (shared > 0) {  // the other slots' lanes are never read: their value is from[a]
        for (const std::uint32_t a : touched[s]) std::fill_n(buffer.data() + std::size_t{a} * K, K, from[s][a]);
      } else {
        fill_lanes(K, from[s], size, buffer.data());
      }
      c[s] = buffer.data();
      if (gradient) mine.tapes[s].begin(size, K);
    }
    for (std::size_t l = shared; l < L; ++l) {
      for (std::size_t s = 0; s < S; ++s)
        forward_lanes(K, (*view.graphs[s])[l], turns[l], c.data(), static_cast<int>(s),
                      gradient ? &mine.tapes[s] : nullptr);
      source.interrupts->poll(t == 0, layer_work(source, l) * static_cast<std::size_t>(K));
    }
    // The value as a one-point replay folds it: each shard's weighted sum, then the shards in ascending order.
    double f[kMostLanes] = {};
    for (std::size_t s = 0; s < S; ++s) {
      double part[kMostLanes] = {};
      const auto& weighted = weights(source, s, view);
      for (std::size_t j = 0; j < weighted.size(); ++j) {
        const auto [i, w] = weighted[j];
        const bool moves = shared == 0 || weight_moves[s][j];
        for (int k = 0; k < K; ++k) part[k] += w * (moves ? c[s][std::size_t{i} * K + k] : from[s][i]);
      }
      for (int k = 0; k < K; ++k) f[k] += part[k];
    }
    for (std::size_t k = 0; k < n; ++k) values[first + k] = f[k] + source.core;
    if (!gradient) continue;
    // The reverse sweep on (c, lambda) states, lambda = d f / d c = w (spread_adjoint).
    for (std::size_t s = 0; s < S; ++s) {
      double* x = c[s];
      spread_lanes(K, x, view.sizes[s]);
      for (const auto& [i, w] : weights(source, s, view))
        for (int k = 0; k < K; ++k) x[2 * (std::size_t{i} * K + k) + 1] = w;
    }
    for (std::size_t l = L; l-- > 0;) {
      for (std::size_t s = 0; s < S; ++s)
        adjoint_lanes(K, (*view.graphs[s])[l], turns[l], c.data(), static_cast<int>(s), mine.tapes[s],
                      dphi.data() + (s * L + l) * static_cast<std::size_t>(K));
      source.interrupts->poll(t == 0, layer_work(source, l) * static_cast<std::size_t>(K));
    }
    // Folded as gradient() folds a single point's.
    for (std::size_t k = 0; k < n; ++k) {
      double* g = gradients + (first + k) * width;
      std::fill(g, g + width, 0.0);
      for (std::size_t l = L; l-- > 0;) {
        const LayerInfo& info = layers[l];
        const std::int32_t p = lp ? lp[l] : info.parameter;
        if (p < 0) continue;
        double d = dphi[l * static_cast<std::size_t>(K) + k];
        for (std::size_t s = 1; s < S; ++s) d += dphi[(s * L + l) * static_cast<std::size_t>(K) + k];
        g[static_cast<std::size_t>(p)] += info.frequency * d;
      }
    }
  }
}

}  // namespace monoprop
