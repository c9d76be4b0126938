#include "layout_split.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace monoprop {
namespace {

// The positions a split is made of are chosen among this many.
constexpr unsigned kCandidates = 16;

}  // namespace

SplitStats split_stats(const std::vector<const Graph*>& graphs, const std::vector<SlotKeys>& keys, int words,
                       double crossing_cost, std::vector<std::vector<std::uint32_t>>& work) {
  const std::size_t S = graphs.size();
  const std::size_t L = S ? graphs[0]->size() : 0;
  auto row = [&](std::size_t s, std::size_t i) { return keys[s].rows + std::size_t(words) * i; };
  SplitStats stats;
  stats.words = words;
  work.assign(S, {});
  for (std::size_t s = 0; s < S; ++s) work[s].assign(keys[s].size, 0);
  stats.flips.assign(L * std::size_t(words), 0);
  stats.layer_cost.assign(L, 0.0);
  for (std::size_t l = 0; l < L; ++l) {
    bool found = false;
    for (std::size_t s = 0; s < S; ++s) {
      const DecodedLayer d = decode((*graphs[s])[l]);
      for (const auto* list : {&d.cos, &d.dark})
        for (const std::uint32_t a : *list) ++work[s][a];
      const DecodedEntry* first = nullptr;
      for (const auto* list : {&d.pairs, &d.halves})
        for (const DecodedEntry& e : *list) {
          ++work[s][e.a];
          if (!found && (!first || e.a < first->a)) first = &e;
        }
      if (first)
        for (int w = 0; w < words; ++w)
          stats.flips[l * words + w] = row(s, first->a)[w] ^ row(first->other, first->b)[w];
      found = found || first != nullptr;
      stats.layer_cost[l] += static_cast<double>(d.pairs.size() + d.halves.size());
    }
    if (found) stats.layer_cost[l] += crossing_cost;
  }
  return stats;
}

void add_work(SplitStats& stats, const std::vector<SlotKeys>& keys, int positions,
              const std::vector<std::vector<std::uint32_t>>& work) {
  stats.position_work.resize(positions, 0.0);
  for (std::size_t s = 0; s < keys.size(); ++s)
    for (std::size_t i = 0; i < keys[s].size; ++i) {
      const double w = work[s][i];
      stats.total_work += w;
      const std::uint64_t* key = keys[s].rows + std::size_t(stats.words) * i;
      for (int k = 0; k < stats.words; ++k)  // a term has few bits set
        for (std::uint64_t x = key[k]; x != 0; x &= x - 1) stats.position_work[64 * k + std::countr_zero(x)] += w;
    }
}

std::vector<int> Split::candidates(const SplitStats& stats, double handover) {
  const auto positions = static_cast<int>(stats.position_work.size());
  const std::size_t L = stats.layer_cost.size();
  const double total_cost = std::accumulate(stats.layer_cost.begin(), stats.layer_cost.end(), 0.0);
  std::vector<double> position_cost(positions, 0.0);
  for (std::size_t l = 0; l < L; ++l)
    for (int p = 0; p < positions; ++p)
      if (key_bit(&stats.flips[l * stats.words], p)) position_cost[p] += stats.layer_cost[l];
  // Half of them the best splits alone, the others the least flipped (a
  // parity of several of those may split evenly where none of them does).
  const std::vector<double>& work = stats.position_work;
  const double total = stats.total_work;
  std::vector<int> varied, out;
  for (int p = 0; p < positions; ++p)
    if (work[p] > 0.02 * total && work[p] < 0.98 * total) varied.push_back(p);
  auto alone = [&](int p) {
    const double uneven = 2.0 * std::max(work[p], total - work[p]) / total;
    return uneven * (total_cost - position_cost[p]) + handover * position_cost[p];
  };
  std::stable_sort(varied.begin(), varied.end(), [&](int x, int y) { return alone(x) < alone(y); });
  out.assign(varied.begin(), varied.begin() + std::min<std::size_t>(varied.size(), kCandidates / 2));
  std::stable_sort(varied.begin(), varied.end(), [&](int x, int y) { return position_cost[x] < position_cost[y]; });
  for (const int p : varied)
    if (out.size() < kCandidates && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

std::uint32_t Split::pattern(const std::vector<int>& candidates, const std::uint64_t* key) {
  std::uint32_t x = 0;
  for (std::size_t j = 0; j < candidates.size(); ++j) x |= static_cast<std::uint32_t>(key_bit(key, candidates[j])) << j;
  return x;
}

std::vector<double> Split::pattern_work(const std::vector<int>& candidates, const std::vector<SlotKeys>& keys,
                                        int words, const std::vector<std::vector<std::uint32_t>>& work) {
  std::vector<double> out(std::size_t{1} << candidates.size(), 0.0);
  for (std::size_t s = 0; s < keys.size(); ++s)
    for (std::size_t i = 0; i < keys[s].size; ++i)
      out[pattern(candidates, keys[s].rows + std::size_t(words) * i)] += work[s][i];
  return out;
}

// k parities v . x of the candidates' bits x, chosen greedily, each the one
// (of at most three bits) that makes the replay cheapest with the ones before:
// its estimated time, in entries of one block, is the largest class's share
// of the layers that stay inside the blocks, plus the crossing layers at the
// handover's price.
Split::Split(const SplitStats& stats, std::vector<int> candidates, const std::vector<double>& pattern_work, int blocks,
             double handover)
    : candidates_(std::move(candidates)) {
  const std::size_t L = stats.layer_cost.size();
  const auto m = static_cast<unsigned>(candidates_.size());
  const double total_cost = std::accumulate(stats.layer_cost.begin(), stats.layer_cost.end(), 0.0);
  const double total_work = stats.total_work;
  auto estimate = [&](double uneven, double crossing) {
    return uneven * (total_cost - crossing) + handover * crossing;
  };
  std::vector<std::uint32_t> layer_flip(L);
  for (std::size_t l = 0; l < L; ++l) layer_flip[l] = pattern(candidates_, &stats.flips[l * stats.words]);
  auto parity = [](std::uint32_t v, std::uint32_t x) { return static_cast<std::uint32_t>(std::popcount(v & x) & 1); };
  std::vector<std::uint32_t> functionals;
  for (unsigned a = 0; a < m; ++a) {
    functionals.push_back(1u << a);
    for (unsigned b = a + 1; b < m; ++b) {
      functionals.push_back(1u << a | 1u << b);
      for (unsigned c = b + 1; c < m; ++c) functionals.push_back(1u << a | 1u << b | 1u << c);
    }
  }
  struct Choice {
    std::vector<std::uint32_t> class_of;
    std::vector<std::uint8_t> block_of_class, crossed;
    double uneven = 0.0, crossing = 0.0, score = 0.0;
  };
  // Classes onto at most n blocks, the heaviest first onto the lightest.
  auto onto_blocks = [&](const std::vector<double>& w, std::size_t n, std::vector<std::uint8_t>* block_of_class) {
    std::vector<std::size_t> order(w.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return w[x] > w[y]; });
    std::vector<double> load(n, 0.0);
    if (block_of_class) block_of_class->assign(w.size(), 0);
    for (const std::size_t c : order) {
      const auto b = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      if (block_of_class) (*block_of_class)[c] = static_cast<std::uint8_t>(b);
      load[b] += w[c];
    }
    return *std::max_element(load.begin(), load.end()) * static_cast<double>(n) / total_work;
  };
  auto choose = [&](int k) {
    Choice out;
    out.class_of.assign(pattern_work.size(), 0);
    out.crossed.assign(L, 0);
    for (int step = 0; step < k; ++step) {
      const std::size_t classes = std::size_t{2} << step, n = std::min<std::size_t>(classes, blocks);
      double best_score = 0.0;
      std::uint32_t best = 0;
      std::vector<double> w(classes);
      for (const std::uint32_t v : functionals) {
        double crossing = 0.0;
        for (std::size_t l = 0; l < L; ++l)
          if (out.crossed[l] || parity(v, layer_flip[l])) crossing += stats.layer_cost[l];
        std::fill(w.begin(), w.end(), 0.0);
        for (std::uint32_t x = 0; x < pattern_work.size(); ++x)
          w[out.class_of[x] << 1 | parity(v, x)] += pattern_work[x];
        const double score = estimate(onto_blocks(w, n, nullptr), crossing);
        if (best == 0 || score < best_score) best = v, best_score = score;
      }
      for (std::uint32_t x = 0; x < pattern_work.size(); ++x) out.class_of[x] = out.class_of[x] << 1 | parity(best, x);
      for (std::size_t l = 0; l < L; ++l)
        if (parity(best, layer_flip[l])) out.crossed[l] = 1;
    }
    std::vector<double> w(std::size_t{1} << k, 0.0);
    for (std::uint32_t x = 0; x < pattern_work.size(); ++x) w[out.class_of[x]] += pattern_work[x];
    out.uneven = onto_blocks(w, blocks, &out.block_of_class);
    for (std::size_t l = 0; l < L; ++l)
      if (out.crossed[l]) out.crossing += stats.layer_cost[l];
    out.score = estimate(out.uneven, out.crossing) / total_cost;
    return out;
  };
  // As many parities as make `blocks` classes, or one more where that is not
  // a power of two (more classes than blocks even out), whichever is cheaper.
  const int k = std::bit_width(static_cast<unsigned>(blocks - 1));
  Choice best = choose(k);
  if (!std::has_single_bit(static_cast<unsigned>(blocks)))
    if (Choice finer = choose(k + 1); finer.score < best.score) best = std::move(finer);
  class_of_ = std::move(best.class_of);
  block_of_class_ = std::move(best.block_of_class);
  crossed_ = std::move(best.crossed);
  uneven_ = best.uneven;
  crossing_ = best.crossing;
  score_ = best.score;
}

}  // namespace monoprop
