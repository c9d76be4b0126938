// The graph's part of a save (snapshot.h) on random graphs built as the
// engine builds them (tests/cpp/random_graph.h): saved and restored, every
// layer comes back byte for byte and the shared entries block for block; a
// save damaged in any of its arrays is refused with ArgumentError; and a
// graph re-sharded onto another number of shards replays, from the same
// coefficients moved to their new slots, to what the original replays to.
#include "monoprop/snapshot.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cpp/check.h"
#include "cpp/random_graph.h"
#include "monoprop/replay.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

bool same_section(const Section& x, const Section& y) {
  return x.count == y.count && x.offset == y.offset && x.length == y.length && x.partners == y.partners &&
         x.base == y.base && x.width == y.width;
}

bool same_graph(const Graph& x, const Graph& y) {
  bool same = x.size() == y.size();
  for (std::size_t l = 0; same && l < x.size(); ++l) {
    same = x[l].bytes == y[l].bytes && same_section(x[l].cos, y[l].cos) && x[l].parts.size() == y[l].parts.size();
    for (std::size_t p = 0; same && p < x[l].parts.size(); ++p) {
      const Part &a = x[l].parts[p], &b = y[l].parts[p];
      same = a.shard == b.shard && same_section(a.births, b.births) && same_section(a.pairs, b.pairs) &&
             same_section(a.halves, b.halves);
    }
  }
  return same;
}

std::vector<std::size_t> sizes_of(const RandomGraph& graph) {
  std::vector<std::size_t> sizes;
  for (const auto& keys : graph.keys) sizes.push_back(keys.size());
  return sizes;
}

// Every layer forward at angle 0.3 + 0.1 l on c[shard][slot].
void forward(const std::vector<Graph>& graphs, std::vector<std::vector<double>>& c) {
  std::vector<double*> at;
  for (auto& x : c) at.push_back(x.data());
  for (std::size_t l = 0; !graphs.empty() && l < graphs[0].size(); ++l)
    for (std::size_t s = 0; s < graphs.size(); ++s)
      forward_layer(graphs[s][l], std::cos(0.3 + 0.1 * l), std::sin(0.3 + 0.1 * l), at.data(), static_cast<int>(s), 0.0,
                    nullptr);
}

bool throws_damaged(const std::function<void()>& load) {
  try {
    load();
  } catch (const ArgumentError& e) {
    return std::string(e.what()).find("damaged") != std::string::npos;
  }
  return false;
}

}  // namespace

TEST(graph_and_shared_entries_come_back_as_saved) {
  std::mt19937 rng(11);
  RandomGraph graph = random_graph(rng, 1, 3, 6, 12, 20, 1200);
  SavedState state;
  for (std::size_t s = 0; s < graph.graphs.size(); ++s) save_graph(state, s, graph.graphs[s]);
  bool same = true;
  for (std::size_t s = 0; s < graph.graphs.size(); ++s)
    same = same && same_graph(restore_graph(state, s, sizes_of(graph), graph.layers()), graph.graphs[s]);
  CHECK(same);

  RandomGraph ranked = random_graph(rng, 2, 2, 6, 12, 20, 1200);
  for (int r = 0; r < 2; ++r) {
    SavedState part;
    const std::vector<RemoteLayer>& remote = ranked.remote[static_cast<std::size_t>(r)];
    save_remote(part, remote);
    std::vector<std::size_t> sizes;
    Moves stay;
    for (std::size_t s = 0; s < 2; ++s) {
      sizes.push_back(ranked.keys[ranked.global(r, s)].size());
      stay.emplace_back();
      for (std::uint32_t i = 0; i < sizes.back(); ++i) stay.back().emplace_back(static_cast<std::uint32_t>(s), i);
    }
    const std::vector<RemoteLayer> back = restore_remote(part, sizes, stay, ranked.layers(), r, 2);
    bool blocks = back.size() == remote.size();
    std::size_t entries = 0;
    for (std::size_t l = 0; blocks && l < back.size(); ++l) {
      blocks = back[l].entries == remote[l].entries && back[l].offset == entries &&
               back[l].blocks.size() == remote[l].blocks.size();
      entries += back[l].entries;
      for (std::size_t b = 0; blocks && b < back[l].blocks.size(); ++b) {
        const RemoteBlock &x = back[l].blocks[b], &y = remote[l].blocks[b];
        blocks = x.peer == y.peer && x.counts == y.counts && x.start == y.start && x.shards == y.shards &&
                 x.slots == y.slots && x.codes == y.codes;
      }
    }
    CHECK(blocks);
    // Loaded as another rank, the blocks name this rank as their own peer.
    CHECK(throws_damaged([&] { restore_remote(part, sizes, stay, ranked.layers(), 1 - r, 2); }));
  }
}

TEST(damaged_graph_is_refused) {
  std::mt19937 rng(5);
  RandomGraph graph = random_graph(rng, 1, 2, 6, 10, 20, 800);
  SavedState state;
  for (std::size_t s = 0; s < 2; ++s) save_graph(state, s, graph.graphs[s]);
  const std::vector<std::size_t> sizes = sizes_of(graph);
  auto load = [&](const SavedState& damaged_state, std::vector<std::size_t> held) {
    return [&, damaged_state, held] {
      for (std::size_t s = 0; s < 2; ++s) restore_graph(damaged_state, s, held, graph.layers());
    };
  };
  CHECK(!throws_damaged(load(state, sizes)));
  // Fewer terms than the entries name.
  std::vector<std::size_t> fewer = sizes;
  fewer[0] /= 2;
  CHECK(throws_damaged(load(state, fewer)));
  // Another number of layers.
  CHECK(throws_damaged([&] { restore_graph(state, 0, sizes, graph.layers() + 1); }));
  // Each array changed in turn: the high bit set of any byte of layer 0's
  // cos entries (then it runs on into the next), a count raised, a part
  // naming a shard past the last, a section's offset past its bytes.
  auto changed = [&](const std::string& name, std::size_t at, auto change) {
    SavedState copy = state;
    SavedArray& a = copy.arrays.at(name);
    change(a.bytes.data() + at);
    return copy;
  };
  const std::string bytes = "shard0.graph_bytes", cos = "shard0.graph_cos", parts = "shard0.graph_parts";
  bool refused = true;
  const Section& first = graph.graphs[0][0].cos;
  CHECK(first.length > 0);
  for (std::size_t at = first.offset; at < first.offset + first.length; ++at)
    if (!(state.arrays.at(bytes).bytes[at] & 0x80))  // the last byte of an entry
      refused = refused && throws_damaged(load(changed(bytes, at, [](std::uint8_t* x) { *x |= 0x80; }), sizes));
  CHECK(refused);
  CHECK(throws_damaged(load(changed(cos, 0, [](std::uint8_t* x) { *x += 1; }), sizes)));    // cos count of layer 0
  CHECK(throws_damaged(load(changed(parts, 0, [](std::uint8_t* x) { *x = 7; }), sizes)));   // the first part's shard
  CHECK(throws_damaged(load(changed(cos, 4, [](std::uint8_t* x) { *x = 0xff; }), sizes)));  // cos offset
}

TEST(resharded_graph_replays_alike) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const std::size_t T : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    RandomGraph graph = random_graph(rng, 1, 3, 6, 14, 20, 1500);
    std::vector<std::vector<double>> c;
    for (const auto& keys : graph.keys) {
      c.emplace_back();
      for (std::size_t i = 0; i < keys.size(); ++i) c.back().push_back(unit(rng));
    }
    // Deal every term to a shard by its key, in saved order.
    Moves moved(graph.keys.size());
    std::vector<std::size_t> now(T, 0);
    for (std::size_t s = 0; s < graph.keys.size(); ++s)
      for (const std::uint64_t key : graph.keys[s]) {
        const std::size_t t = (key * 0x9e3779b97f4a7c15ull >> 40) % T;
        moved[s].emplace_back(static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(now[t]++));
      }
    std::vector<Graph> resharded(T);
    for (std::size_t l = 0; l < graph.layers(); ++l) {
      std::vector<ShardLayer> layer = reshard_layer(graph.graphs, l, moved, now);
      CHECK(layer.size() == T);
      for (std::size_t t = 0; t < T; ++t) resharded[t].push_back(std::move(layer[t]));
    }
    std::vector<std::vector<double>> d(T);
    for (std::size_t t = 0; t < T; ++t) d[t].resize(now[t]);
    for (std::size_t s = 0; s < c.size(); ++s)
      for (std::size_t i = 0; i < c[s].size(); ++i) d[moved[s][i].first][moved[s][i].second] = c[s][i];
    forward(graph.graphs, c);
    forward(resharded, d);
    bool alike = true;
    for (std::size_t s = 0; s < c.size(); ++s)
      for (std::size_t i = 0; i < c[s].size(); ++i)
        alike = alike && std::abs(d[moved[s][i].first][moved[s][i].second] - c[s][i]) <= 1e-12;
    CHECK(alike);
  }
}
