// The replay layout (replay_layout.h) against the shards' own graph: random
// graphs built as the engine builds them (tests/cpp/random_graph.h), laid
// out over a few blocks. The layout must place every slot exactly once, keep
// every entry of every layer (under the slots' new numbers), cross blocks
// only in the layers it says cross, and replay to the same coefficients and
// states bitwise (each entry does the same arithmetic; only the order of the
// sums of d f / d phi differs); and restore() must give the shards their
// layers back exactly as recorded.
#include "monoprop/replay_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "cpp/check.h"
#include "cpp/random_graph.h"
#include "monoprop/graph.h"
#include "monoprop/replay.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

bool same_section(const Section& x, const Section& y) {
  return x.count == y.count && x.offset == y.offset && x.length == y.length && x.partners == y.partners &&
         x.base == y.base && x.width == y.width;
}

bool same_layer(const ShardLayer& x, const ShardLayer& y) {
  bool same = same_section(x.cos, y.cos) && x.bytes == y.bytes && x.parts.size() == y.parts.size();
  for (std::size_t p = 0; same && p < x.parts.size(); ++p) {
    const Part &a = x.parts[p], &b = y.parts[p];
    same = a.shard == b.shard && same_section(a.births, b.births) && same_section(a.pairs, b.pairs) &&
           same_section(a.halves, b.halves);
  }
  return same;
}

// A layer's entries as (kind, a, b, sign) over (shard, slot) pairs, sorted:
// kind 0 lit cos, 1 dark cos, 2 pair (births included), 3 half.
using Slot = std::pair<std::uint32_t, std::uint32_t>;
using Spelled = std::tuple<int, Slot, Slot, int>;

template <typename Origin>
void spell(const ShardLayer& layer, std::uint32_t self, Origin&& origin, std::vector<Spelled>& out) {
  const DecodedLayer d = decode(layer);
  for (const std::uint32_t a : d.cos) out.emplace_back(0, origin(self, a), Slot{}, 0);
  for (const std::uint32_t a : d.dark) out.emplace_back(1, origin(self, a), Slot{}, 0);
  for (const DecodedEntry& e : d.pairs) out.emplace_back(2, origin(self, e.a), origin(e.other, e.b), e.sign);
  for (const DecodedEntry& e : d.halves) out.emplace_back(3, origin(self, e.a), origin(e.other, e.b), e.sign);
}

// Forward (and with `lambda`, back) over graphs[s] of every s, on arrays of
// sizes[s] slots starting at c0[s]; returns the per-slot results (c, or the
// rewound (c, lambda) states) and d f / d phi by layer.
struct Replayed {
  std::vector<std::vector<double>> forward, states;
  std::vector<double> gradient;
};

Replayed replay(const std::vector<const Graph*>& graphs, const std::vector<std::vector<double>>& c0,
                const std::vector<std::vector<double>>& lambda, const std::vector<double>& angles) {
  const std::size_t S = graphs.size(), L = angles.size();
  Replayed out;
  out.forward = c0;
  std::vector<ReplayTape> tapes(S);
  std::vector<double*> c(S);
  for (std::size_t s = 0; s < S; ++s) {
    c[s] = out.forward[s].data();
    tapes[s].begin(c0[s].size(), true);
  }
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t s = 0; s < S; ++s)
      forward_layer((*graphs[s])[l], std::cos(angles[l]), std::sin(angles[l]), c.data(), static_cast<int>(s), 0.0,
                    &tapes[s]);
  out.states.resize(S);
  for (std::size_t s = 0; s < S; ++s) {
    for (std::size_t i = 0; i < c0[s].size(); ++i) out.states[s].insert(out.states[s].end(), {c[s][i], lambda[s][i]});
    c[s] = out.states[s].data();
  }
  out.gradient.assign(L, 0.0);
  for (std::size_t l = L; l-- > 0;)
    for (std::size_t s = 0; s < S; ++s)
      out.gradient[l] +=
          adjoint_layer((*graphs[s])[l], rotation_turn(angles[l]), c.data(), static_cast<int>(s), 0.0, &tapes[s]);
  return out;
}

// One random graph laid out over `blocks` blocks and checked as the file's
// comment says.
void check_layout(std::mt19937& rng, int shards, int blocks) {
  RandomGraph graph = random_graph(rng, 1, shards, 6, 20, 20, 3000);
  const std::vector<Graph> recorded = graph.graphs;
  const auto S = static_cast<std::size_t>(shards);
  const std::size_t L = graph.layers();
  const std::vector<SlotKeys> keys = graph.rank_keys(0);
  ReplayLayout layout;
  CHECK(layout.assign(graph.rank_graphs(0), keys, 1, graph.positions, blocks, true));
  CHECK(!layout.empty() && layout.blocks() == static_cast<std::size_t>(blocks));
  const auto B = layout.blocks();

  // Every slot at one index of one block: gather the slots' names (s, i) and
  // find each once; scatter puts every value back where gather found it.
  std::vector<std::vector<double>> names(S);
  std::vector<const double*> name_of(S);
  for (std::size_t s = 0; s < S; ++s) {
    for (std::size_t i = 0; i < graph.keys[s].size(); ++i) names[s].push_back(static_cast<double>(s << 20 | i));
    name_of[s] = names[s].data();
  }
  std::vector<std::vector<Slot>> origin(B);  // of each block's indices
  std::vector<std::vector<int>> placed_count(S);
  for (std::size_t s = 0; s < S; ++s) placed_count[s].assign(graph.keys[s].size(), 0);
  std::size_t placed = 0;
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<double> gathered(layout.size(b));
    layout.gather(b, name_of.data(), gathered.data());
    for (const double x : gathered) {
      const auto n = static_cast<std::uint32_t>(x);
      origin[b].emplace_back(n >> 20, n & 0xfffff);
      ++placed_count.at(n >> 20).at(n & 0xfffff);
    }
    placed += gathered.size();
  }
  bool once = placed == graph.size();
  for (const auto& counts : placed_count)
    for (const int n : counts) once = once && n == 1;
  CHECK(once);
  std::vector<std::vector<double>> back(S);
  std::vector<double*> back_ptr(S);
  for (std::size_t s = 0; s < S; ++s) {
    back[s].assign(graph.keys[s].size(), -1.0);
    back_ptr[s] = back[s].data();
  }
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<double> x(layout.size(b));
    for (std::size_t j = 0; j < x.size(); ++j)
      x[j] = static_cast<double>(origin[b][j].first << 20 | origin[b][j].second);
    layout.scatter(b, x.data(), back_ptr.data());
  }
  CHECK(back == names);

  // Every entry of every layer kept, under the new numbers; the blocks' parts
  // reach other blocks exactly in the layers that cross.
  auto shard_slot = [](std::uint32_t s, std::uint32_t i) { return Slot{s, i}; };
  auto block_slot = [&](std::uint32_t b, std::uint32_t j) { return origin.at(b).at(j); };
  bool kept = true, crossing_right = true;
  for (std::size_t l = 0; l < L; ++l) {
    std::vector<Spelled> before, after;
    for (std::size_t s = 0; s < S; ++s) spell(recorded[s][l], static_cast<std::uint32_t>(s), shard_slot, before);
    bool crosses = false;
    for (std::size_t b = 0; b < B; ++b) {
      spell(layout.graph(b)[l], static_cast<std::uint32_t>(b), block_slot, after);
      for (const Part& part : layout.graph(b)[l].parts) crosses = crosses || part.shard != b;
    }
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    kept = kept && before == after;
    crossing_right = crossing_right && crosses == layout.crossing(l);
  }
  CHECK(kept);
  CHECK(crossing_right);

  // The replays: the layout's, gathered from the shards' starting values and
  // scattered back, equals the shards' bit for bit.
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::vector<double>> c0(S), w(S);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < graph.keys[s].size(); ++i) c0[s].push_back(u(rng)), w[s].push_back(u(rng));
  std::vector<const Graph*> shard_graphs, block_graphs;
  for (const Graph& g : recorded) shard_graphs.push_back(&g);
  for (std::size_t b = 0; b < B; ++b) block_graphs.push_back(&layout.graph(b));
  auto to_blocks = [&](const std::vector<std::vector<double>>& x) {
    std::vector<const double*> from;
    for (const auto& v : x) from.push_back(v.data());
    std::vector<std::vector<double>> out(B);
    for (std::size_t b = 0; b < B; ++b) {
      out[b].resize(layout.size(b));
      layout.gather(b, from.data(), out[b].data());
    }
    return out;
  };
  auto to_shards = [&](const std::vector<std::vector<double>>& x, std::size_t stride) {
    std::vector<std::vector<double>> out(S);
    for (std::size_t s = 0; s < S; ++s) out[s].resize(stride * graph.keys[s].size());
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t j = 0; j < x[b].size() / stride; ++j)
        for (std::size_t k = 0; k < stride; ++k)
          out[origin[b][j].first][stride * origin[b][j].second + k] = x[b][stride * j + k];
    return out;
  };
  const Replayed shards_run = replay(shard_graphs, c0, w, graph.angles);
  const Replayed blocks_run = replay(block_graphs, to_blocks(c0), to_blocks(w), graph.angles);
  CHECK(to_shards(blocks_run.forward, 1) == shards_run.forward);
  CHECK(to_shards(blocks_run.states, 2) == shards_run.states);
  bool gradient = true;
  for (std::size_t l = 0; l < L; ++l)
    gradient = gradient && std::abs(blocks_run.gradient[l] - shards_run.gradient[l]) <=
                               1e-12 * (1.0 + std::abs(shards_run.gradient[l]));
  CHECK(gradient);
  // And the shards' replay is the textbook one (a check of the graphs themselves).
  std::vector<std::vector<double>> plain = c0;
  plain_replay(graph, plain);
  double most = 0.0;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < plain[s].size(); ++i)
      most = std::max(most, std::abs(plain[s][i] - shards_run.forward[s][i]));
  CHECK(most < 1e-12);

  // select(): a block's share of sparse per-shard lists, in its index order.
  std::vector<ReplayLayout::List> lists(S);
  std::vector<const ReplayLayout::List*> list_of(S);
  for (std::size_t s = 0; s < S; ++s) {
    for (std::uint32_t i = 0; i < graph.keys[s].size(); ++i)
      if (rng() % 3 == 0) lists[s].emplace_back(i, static_cast<double>(s << 20 | i));
    list_of[s] = &lists[s];
  }
  bool selected = true;
  for (std::size_t b = 0; b < B; ++b) {
    ReplayLayout::List want;
    for (std::uint32_t j = 0; j < origin[b].size(); ++j) {
      const auto [s, i] = origin[b][j];
      const auto& list = lists[s];
      const auto it = std::lower_bound(list.begin(), list.end(), std::pair<std::uint32_t, double>{i, -1.0});
      if (it != list.end() && it->first == i) want.emplace_back(j, it->second);
    }
    selected = selected && layout.select(b, list_of) == want;
  }
  CHECK(selected);

  // The layout holds the graph: the shards' layers gave up their bytes (all
  // but a cos section recorded out of order); restore() writes them again
  // exactly, and the same graph lays out the same way again.
  bool given_up = true;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t l = 0; l < L; ++l) {
      const ShardLayer& layer = graph.graphs[s][l];
      given_up = given_up && (layer.bytes.empty() || layer.bytes.size() == layer.cos.length);
    }
  CHECK(given_up);
  std::vector<Graph> first(B);
  for (std::size_t b = 0; b < B; ++b) first[b] = layout.graph(b);
  layout.restore(graph.rank_graphs(0), keys, 1);
  CHECK(layout.empty());
  bool restored = true;
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t l = 0; l < L; ++l) restored = restored && same_layer(graph.graphs[s][l], recorded[s][l]);
  CHECK(restored);
  if (!restored) return;  // a graph restored wrong is no graph to lay out again
  CHECK(layout.assign(graph.rank_graphs(0), keys, 1, graph.positions, blocks, true));
  bool again = layout.blocks() == B;
  for (std::size_t b = 0; again && b < B; ++b)
    for (std::size_t l = 0; l < L; ++l) again = again && same_layer(layout.graph(b)[l], first[b][l]);
  CHECK(again);
  layout.restore(graph.rank_graphs(0), keys, 1);
}

}  // namespace

TEST(test_replay_layout_against_shards) {
  std::mt19937 rng(61);
  for (const int shards : {1, 2, 3, 4})
    for (const int blocks : {2, 3, 4, 8}) check_layout(rng, shards, blocks);
}

// Where no layout is made, assign() says so and leaves the shards' graph as
// it was: fewer than 2 blocks or more than 256, no layers, one term only;
// and a layout it declines without `always` is no layout either.
TEST(test_replay_layout_declines) {
  std::mt19937 rng(62);
  RandomGraph graph = random_graph(rng, 1, 2, 6, 16, 20, 2000);
  const std::vector<Graph> recorded = graph.graphs;
  auto untouched = [&] {
    bool same = true;
    for (std::size_t s = 0; s < recorded.size(); ++s)
      for (std::size_t l = 0; l < recorded[s].size(); ++l)
        same = same && same_layer(graph.graphs[s][l], recorded[s][l]);
    return same;
  };
  ReplayLayout layout;
  CHECK(!layout.assign(graph.rank_graphs(0), graph.rank_keys(0), 1, graph.positions, 1, true) && layout.empty());
  CHECK(!layout.assign(graph.rank_graphs(0), graph.rank_keys(0), 1, graph.positions, 257, true) && layout.empty());
  CHECK(untouched());
  std::vector<Graph> none(2);
  CHECK(!layout.assign({&none[0], &none[1]}, graph.rank_keys(0), 1, graph.positions, 2, true) && layout.empty());
  // One term, rotated into nothing: its key is the only one, so no bit splits.
  const std::uint64_t only = 0b1101;
  Graph lone(1);
  SectionWriter writer;
  write_cos(writer, {0}, {}, lone[0].bytes, lone[0].cos);
  SectionWriter::finish(lone[0].bytes);
  CHECK(!layout.assign({&lone}, {{&only, 1}}, 1, 8, 2, true) && layout.empty());
  // Without `always` a layout is made or not; either way it holds as above.
  if (!layout.assign(graph.rank_graphs(0), graph.rank_keys(0), 1, graph.positions, 2, false)) {
    CHECK(layout.empty() && untouched());
  } else {
    CHECK(layout.blocks() == 2);
    layout.restore(graph.rank_graphs(0), graph.rank_keys(0), 1);
    CHECK(untouched());
  }
}
