// The split of a graph's slots into blocks by bits of their terms
// (layout_split.h), against enumerations: the statistics it reads from a
// graph, the candidate positions and patterns, and the split's promises
// (two keys a generator of a layer that does not cross maps onto each other
// land in one block; its unevenness, crossing cost and score are what its
// blocks make them; for two blocks, no parity of at most three candidate
// bits scores better).
#include "monoprop/layout_split.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cpp/check.h"
#include "cpp/random_graph.h"
#include "monoprop/graph.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

constexpr double kHandover = 1.5;

bool near(double x, double y) { return std::abs(x - y) <= 1e-12 * std::max(1.0, std::abs(y)); }

// A key with the given pattern at the candidates and nothing else.
std::vector<std::uint64_t> key_of_pattern(const std::vector<int>& candidates, std::uint32_t x, int words) {
  std::vector<std::uint64_t> key(static_cast<std::size_t>(words), 0);
  for (std::size_t j = 0; j < candidates.size(); ++j)
    if ((x >> j) & 1) key[static_cast<std::size_t>(candidates[j] / 64)] |= std::uint64_t{1} << (candidates[j] % 64);
  return key;
}

// The statistics of a random graph whose keys get a second word of random
// bits (positions 64..127, those of `extra`), and each step of a split of
// it, against sums over the graph's entries and slots.
void split_against_enumeration(std::mt19937_64& rng, int shards, int blocks, std::uint64_t extra) {
  std::mt19937 graph_rng(static_cast<std::uint32_t>(rng()));
  const RandomGraph graph = random_graph(graph_rng, 1, shards, 6, 16, 20, 2000);
  const auto S = static_cast<std::size_t>(shards);
  const std::size_t L = graph.layers();
  constexpr int words = 2, positions = 128;
  std::vector<std::vector<std::uint64_t>> rows(S);
  std::vector<SlotKeys> keys;
  for (std::size_t s = 0; s < S; ++s) {
    for (const std::uint64_t k : graph.keys[s]) rows[s].insert(rows[s].end(), {k, rng() & rng() & extra});
    keys.push_back({rows[s].data(), graph.keys[s].size()});
  }
  auto row = [&](std::size_t s, std::size_t i) { return &rows[s][words * i]; };
  std::vector<const Graph*> graphs;
  for (const Graph& g : graph.graphs) graphs.push_back(&g);

  std::vector<std::vector<std::uint32_t>> work;
  SplitStats stats = split_stats(graphs, keys, words, 100.0, work);
  // work: the entries filed under each slot. flips: the first rotating
  // entry's keys xored (least a in the first shard with one). layer_cost: the
  // rotating entries, and the crossing cost where there are any.
  std::vector<std::vector<std::uint32_t>> want_work(S);
  for (std::size_t s = 0; s < S; ++s) want_work[s].assign(graph.keys[s].size(), 0);
  bool flips = stats.words == words && stats.flips.size() == L * words, costs = stats.layer_cost.size() == L;
  for (std::size_t l = 0; l < L; ++l) {
    const GraphEntry* first = nullptr;
    double rotating = 0.0;
    for (const GraphEntry& e : graph.entries[l]) {
      ++want_work[e.sa][e.a];
      if (e.kind != GraphEntry::Pair && e.kind != GraphEntry::Half) continue;
      rotating += 1.0;
      if (!first || e.sa < first->sa || (e.sa == first->sa && e.a < first->a)) first = &e;
    }
    for (int w = 0; flips && w < words; ++w)
      flips = stats.flips[l * words + w] == (first ? row(first->sa, first->a)[w] ^ row(first->sb, first->b)[w] : 0);
    costs = costs && stats.layer_cost[l] == rotating + (first ? 100.0 : 0.0);
  }
  CHECK(work == want_work);
  CHECK(flips);
  CHECK(costs);

  add_work(stats, keys, positions, work);
  std::vector<double> position_work(positions, 0.0);
  double total = 0.0;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < graph.keys[s].size(); ++i) {
      total += work[s][i];
      for (int p = 0; p < positions; ++p)
        if (key_bit(row(s, i), p)) position_work[p] += work[s][i];
    }
  CHECK(stats.position_work == position_work && stats.total_work == total);

  // The candidates: distinct positions, at most 16, each set in between 2%
  // and 98% of the work; all such positions where there are no more than 16;
  // the first half the best splits alone, the rest the least flipped.
  const std::vector<int> candidates = Split::candidates(stats, kHandover);
  std::vector<double> position_cost(positions, 0.0);
  const double total_cost = std::accumulate(stats.layer_cost.begin(), stats.layer_cost.end(), 0.0);
  for (std::size_t l = 0; l < L; ++l)
    for (int p = 0; p < positions; ++p)
      if (key_bit(&stats.flips[l * words], p)) position_cost[p] += stats.layer_cost[l];
  std::vector<int> varied;
  for (int p = 0; p < positions; ++p)
    if (position_work[p] > 0.02 * total && position_work[p] < 0.98 * total) varied.push_back(p);
  auto alone = [&](int p) {
    return 2.0 * std::max(position_work[p], total - position_work[p]) / total * (total_cost - position_cost[p]) +
           kHandover * position_cost[p];
  };
  std::vector<int> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  bool valid = !candidates.empty() && candidates.size() <= 16 &&
               std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  for (const int p : candidates) valid = valid && std::find(varied.begin(), varied.end(), p) != varied.end();
  if (varied.size() <= 16) valid = valid && sorted == varied;
  const std::size_t best = std::min<std::size_t>(8, varied.size());
  for (const int p : varied) {
    const auto at = static_cast<std::size_t>(std::find(candidates.begin(), candidates.end(), p) - candidates.begin());
    for (std::size_t j = 0; j < candidates.size(); ++j) {
      if (j < best && at >= best) valid = valid && alone(candidates[j]) <= alone(p);
      if (j >= best && at == candidates.size()) valid = valid && position_cost[candidates[j]] <= position_cost[p];
    }
  }
  CHECK(valid);

  // Patterns: the candidates' bits of a key; their work, summed over slots.
  const std::vector<double> pattern_work = Split::pattern_work(candidates, keys, words, work);
  std::vector<double> want_pattern(std::size_t{1} << candidates.size(), 0.0);
  bool patterns = true;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < graph.keys[s].size(); ++i) {
      std::uint32_t x = 0;
      for (std::size_t j = 0; j < candidates.size(); ++j) x |= key_bit(row(s, i), candidates[j]) ? 1u << j : 0u;
      patterns = patterns && Split::pattern(candidates, row(s, i)) == x;
      want_pattern[x] += work[s][i];
    }
  CHECK(patterns);
  CHECK(pattern_work == want_pattern);

  // The split, over every pattern of the candidates' bits.
  const Split split(stats, candidates, pattern_work, blocks, kHandover);
  const auto patterns_count = static_cast<std::uint32_t>(pattern_work.size());
  std::vector<int> block_of(patterns_count);
  std::vector<double> load(static_cast<std::size_t>(blocks), 0.0);
  bool in_range = true;
  for (std::uint32_t x = 0; x < patterns_count; ++x) {
    block_of[x] = split.block(key_of_pattern(candidates, x, words).data());
    in_range = in_range && block_of[x] >= 0 && block_of[x] < blocks;
    if (in_range) load[static_cast<std::size_t>(block_of[x])] += pattern_work[x];
  }
  CHECK(in_range);
  // Bits outside the candidates do not move a key.
  bool only_candidates = true;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < graph.keys[s].size(); ++i)
      only_candidates = only_candidates && split.block(row(s, i)) == block_of[Split::pattern(candidates, row(s, i))];
  CHECK(only_candidates);
  bool stays = true;
  double crossing = 0.0;
  for (std::size_t l = 0; l < L; ++l) {
    if (split.crosses(l)) {
      crossing += stats.layer_cost[l];
      continue;
    }
    const std::uint32_t flip = Split::pattern(candidates, &stats.flips[l * words]);
    for (std::uint32_t x = 0; x < patterns_count; ++x) stays = stays && block_of[x] == block_of[x ^ flip];
  }
  CHECK(stays);
  const double uneven = *std::max_element(load.begin(), load.end()) * blocks / total;
  CHECK(near(split.uneven(), uneven) && split.uneven() >= 1.0 - 1e-12);
  CHECK(near(split.crossing(), crossing));
  CHECK(near(split.score(), (uneven * (total_cost - crossing) + kHandover * crossing) / total_cost));
  if (blocks != 2) return;
  // Two blocks: the best single parity of at most three candidate bits.
  const auto m = static_cast<unsigned>(candidates.size());
  double best_score = 0.0;
  for (std::uint32_t v = 1; v < patterns_count; ++v) {
    if (std::popcount(v) > 3) continue;
    double w[2] = {0.0, 0.0}, cost = 0.0;
    for (std::uint32_t x = 0; x < patterns_count; ++x) w[std::popcount(v & x) & 1] += pattern_work[x];
    for (std::size_t l = 0; l < L; ++l)
      if (std::popcount(v & Split::pattern(candidates, &stats.flips[l * words])) & 1) cost += stats.layer_cost[l];
    const double score = (2.0 * std::max(w[0], w[1]) / total * (total_cost - cost) + kHandover * cost) / total_cost;
    if (v == 1 || score < best_score) best_score = score;
  }
  CHECK(m > 0 && near(split.score(), best_score));
}

}  // namespace

TEST(test_key_bit) {
  std::mt19937_64 rng(81);
  bool same = true;
  for (int trial = 0; trial < 100; ++trial) {
    const std::uint64_t key[3] = {rng(), rng(), rng()};
    for (int p = 0; p < 192; ++p) same = same && key_bit(key, p) == (((key[p / 64] >> (p % 64)) & 1) != 0);
  }
  CHECK(same);
}

TEST(test_split_against_enumeration) {
  std::mt19937_64 rng(82);
  // Many positions vary: more than the 16 candidates a split is made of.
  split_against_enumeration(rng, 1, 2, ~std::uint64_t{0});
  // One more than the qubits' (a split of at most 2^13 patterns, quick to enumerate).
  for (const int shards : {1, 3})
    for (const int blocks : {2, 3, 4, 7}) split_against_enumeration(rng, shards, blocks, std::uint64_t{1} << 40);
}

// Two qubits, every term once, every layer flipping only qubit 1 (positions
// 2 and 3): the split reads qubit 0 alone, so no layer crosses and the two
// blocks hold half the work each.
TEST(test_split_of_a_local_circuit) {
  SplitStats stats;
  stats.words = 1;
  stats.flips = {0b0100, 0b1000, 0b1100};
  stats.layer_cost = {10.0, 10.0, 10.0};
  std::vector<std::uint64_t> rows(16);
  std::iota(rows.begin(), rows.end(), 0);
  const std::vector<SlotKeys> keys = {{rows.data(), rows.size()}};
  const std::vector<std::vector<std::uint32_t>> work = {std::vector<std::uint32_t>(16, 3)};
  add_work(stats, keys, 4, work);
  CHECK(stats.total_work == 48.0 && stats.position_work == std::vector<double>(4, 24.0));
  const std::vector<int> candidates = Split::candidates(stats, kHandover);
  CHECK(candidates.size() == 4 && (candidates[0] == 0 || candidates[0] == 1));
  const Split split(stats, candidates, Split::pattern_work(candidates, keys, 1, work), 2, kHandover);
  CHECK(!split.crosses(0) && !split.crosses(1) && !split.crosses(2));
  CHECK(split.crossing() == 0.0 && split.uneven() == 1.0 && split.score() == 1.0);
  for (std::uint64_t k = 0; k < 16; ++k) CHECK(split.block(&k) == split.block(&rows[k ^ 0b1100]));
  // And where the terms differ nowhere, there is nothing to split by.
  SplitStats same;
  same.words = 1;
  same.flips = {0};
  same.layer_cost = {0.0};
  const std::uint64_t one[3] = {0b0110, 0b0110, 0b0110};
  add_work(same, {{one, 3}}, 4, {{1, 2, 3}});
  CHECK(Split::candidates(same, kHandover).empty());
}
