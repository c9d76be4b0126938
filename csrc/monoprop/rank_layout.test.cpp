// The rank layout (rank_layout.h) against the ranks' own graph: random
// graphs built as the engine builds them over 2 and 4 ranks
// (tests/cpp/random_graph.h), whose entries between ranks are remote layers,
// laid out by ranks that are threads of this process (tests/cpp/ranks.h).
// The layout must place every term exactly once, on one rank, with its
// starting coefficient and weight; keep every entry of every layer, each
// remote entry on both of its ranks at the same place of their exchange;
// and replay to the same coefficients bit for bit (each entry does the same
// arithmetic wherever it went).
#include "monoprop/rank_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "cpp/check.h"
#include "cpp/random_graph.h"
#include "monoprop/comm.h"
#include "monoprop/graph.h"
#include "monoprop/remote.h"
#include "monoprop/replay.h"
#ifdef MONOPROP_TEST_RANKS
#include "cpp/ranks.h"
#endif

using namespace monoprop;
using namespace monoprop_test;

#ifdef MONOPROP_TEST_RANKS
namespace {

// Values by rank, shard and slot.
using Values = std::vector<std::vector<std::vector<double>>>;

const RemoteBlock* block_toward(const RemoteLayer& layer, int peer) {
  for (const RemoteBlock& b : layer.blocks)
    if (b.peer == peer) return &b;
  return nullptr;
}

// Every rank's graph (graphs[r][s] of shard s of rank r) and remote layers
// forward, on c: the local entries with forward_layer, the remote ones with
// remote_forward from the inputs both sides held before the layer.
void replay_ranks(const std::vector<std::vector<const Graph*>>& graphs,
                  const std::vector<const std::vector<RemoteLayer>*>& remote, Values& c,
                  const std::vector<double>& angles) {
  const std::size_t R = graphs.size();
  for (std::size_t l = 0; l < angles.size(); ++l) {
    const double cs = std::cos(angles[l]), sn = std::sin(angles[l]);
    std::vector<std::vector<double>> inputs(R);
    for (std::size_t r = 0; r < R; ++r) {
      const RemoteLayer& layer = (*remote[r])[l];
      inputs[r].resize(layer.entries);
      for_entries(layer, 0, layer.entries, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
        inputs[r][i] = c[r][b.shards[e]][b.slots[e]];
      });
    }
    for (std::size_t r = 0; r < R; ++r) {
      std::vector<double*> own;
      for (auto& v : c[r]) own.push_back(v.data());
      for (std::size_t s = 0; s < graphs[r].size(); ++s)
        forward_layer((*graphs[r][s])[l], cs, sn, own.data(), static_cast<int>(s), 0.0, nullptr);
      const RemoteLayer& layer = (*remote[r])[l];
      std::vector<double> theirs(layer.entries);
      for (const RemoteBlock& b : layer.blocks) {
        const RemoteBlock* peer = block_toward((*remote[static_cast<std::size_t>(b.peer)])[l], static_cast<int>(r));
        for (std::size_t e = 0; peer && e < b.size() && e < peer->size(); ++e)
          theirs[b.start + e] = inputs[static_cast<std::size_t>(b.peer)][peer->start + e];
      }
      remote_forward(layer, 0, layer.entries, cs, sn, own.data(), 1, theirs.data(), 0.0);
    }
  }
}

// An entry by the names of its terms: (kind, x, y, sign) with kind 0 lit
// cos, 1 dark cos, 2 pair, 3 half (x rotates, y receives). A pair is the
// same entry filed under either term with its sign turned, so it is spelled
// from its lower name.
using Spelled = std::tuple<int, std::uint64_t, std::uint64_t, int>;
Spelled spell_rotation(bool pair, std::uint64_t x, std::uint64_t y, int sign) {
  if (pair && y < x) return {2, y, x, -sign};
  return {pair ? 2 : 3, x, y, sign};
}

// A term's place: (rank, shard, slot).
using Place = std::tuple<int, std::uint32_t, std::uint32_t>;

// Lays out a random graph over `ranks` ranks of `shards` shards and checks
// it as the file's comment says.
//
// The graphs start from many terms, and each layer scales a few that its
// generator leaves alone, so that every layer sends every rank records from
// every other rank.
void check_rank_layout(std::mt19937& rng, int ranks, int shards) {
  RandomGraph graph = random_graph(rng, ranks, shards, 6, 16, 400, 3000, 0.1);
  const auto R = static_cast<std::size_t>(ranks), S = static_cast<std::size_t>(shards);
  const std::size_t L = graph.layers();
  // A term's name is its place in the ranks' graph; its starting coefficient
  // is its name + 1 (so that the layout's bases say where each term went),
  // and a third of the terms have a weight.
  auto name_of = [&](std::size_t g, std::size_t i) { return static_cast<std::uint64_t>(g << 20 | i); };
  std::vector<std::vector<double>> bases(graph.keys.size());
  std::vector<RankLayout::List> weights(graph.keys.size());
  std::map<std::uint64_t, double> weight_of;
  for (std::size_t g = 0; g < graph.keys.size(); ++g)
    for (std::uint32_t i = 0; i < graph.keys[g].size(); ++i) {
      bases[g].push_back(static_cast<double>(name_of(g, i) + 1));
      if (rng() % 3 == 0) {
        weights[g].emplace_back(i, 0.5 + static_cast<double>(name_of(g, i)));
        weight_of[name_of(g, i)] = weights[g].back().second;
      }
    }
  std::vector<std::vector<const Graph*>> graphs(R);
  std::vector<std::vector<const double*>> base_of(R);
  std::vector<std::vector<const RankLayout::List*>> weights_of(R);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t s = 0; s < S; ++s) {
      const std::size_t g = graph.global(static_cast<int>(r), s);
      graphs[r].push_back(&graph.graphs[g]);
      base_of[r].push_back(bases[g].data());
      weights_of[r].push_back(&weights[g]);
    }
  std::vector<RankLayout> layouts(R);
  std::vector<int> made(R, 0);
  auto lay_out = [&](bool always) {
    run_ranks(ranks, [&](const mpi::Comm& comm, int r) {
      const auto k = static_cast<std::size_t>(r);
      made[k] = layouts[k].assign(comm, graphs[k], graph.remote[k], graph.rank_keys(r), 1, graph.positions, base_of[k],
                                  weights_of[k], always);
    });
  };
  lay_out(true);
  CHECK(std::count(made.begin(), made.end(), 1) == ranks);

  // Every term once, its base with it; every weight with its term, each
  // rank's list in ascending slot order.
  std::map<std::uint64_t, Place> place_of;
  std::map<Place, std::uint64_t> name_at;
  bool bases_right = true, weights_right = true;
  std::size_t placed = 0, weighed = 0;
  for (std::size_t n = 0; n < R; ++n)
    for (std::uint32_t s = 0; s < S; ++s) {
      const std::vector<double>& base = layouts[n].base(s);
      bases_right = bases_right && base.size() == layouts[n].size(s);
      for (std::uint32_t j = 0; j < base.size(); ++j) {
        const auto name = static_cast<std::uint64_t>(base[j]) - 1;
        bases_right = bases_right && base[j] == static_cast<double>(name + 1) && !place_of.count(name);
        place_of[name] = {static_cast<int>(n), s, j};
        name_at[{static_cast<int>(n), s, j}] = name;
        ++placed;
      }
      const RankLayout::List& list = layouts[n].weights(s);
      weights_right = weights_right && std::is_sorted(list.begin(), list.end());
      for (const auto& [j, w] : list) {
        const auto it = name_at.find({static_cast<int>(n), s, j});
        weights_right =
            weights_right && it != name_at.end() && weight_of.count(it->second) && weight_of.at(it->second) == w;
        ++weighed;
      }
    }
  CHECK(bases_right && placed == graph.size() && place_of.size() == graph.size());
  CHECK(weights_right && weighed == weight_of.size());

  // Every entry of every layer kept; both sides of a remote entry agree on
  // it and hold it at the same place of their exchange, in blocks by
  // ascending peer that the lower rank counts.
  bool kept = true, agree = true, blocks_right = true;
  std::size_t remote_entries = 0;
  std::vector<std::size_t> offsets(R, 0);
  for (std::size_t l = 0; l < L; ++l) {
    std::vector<Spelled> before, after;
    for (const GraphEntry& e : graph.entries[l]) {
      const std::uint64_t x = name_of(e.sa, e.a), y = name_of(e.sb, e.b);
      if (e.kind == GraphEntry::Cos || e.kind == GraphEntry::Dark)
        before.emplace_back(e.kind == GraphEntry::Cos ? 0 : 1, x, 0, 0);
      else
        before.push_back(spell_rotation(e.kind == GraphEntry::Pair, x, y, e.sign));
    }
    for (std::size_t n = 0; n < R; ++n) {
      auto name = [&](std::uint32_t s, std::uint32_t j) { return name_at.at({static_cast<int>(n), s, j}); };
      for (std::uint32_t s = 0; s < S; ++s) {
        const DecodedLayer d = decode(layouts[n].graph(s)[l]);
        for (const std::uint32_t a : d.cos) after.emplace_back(0, name(s, a), 0, 0);
        for (const std::uint32_t a : d.dark) after.emplace_back(1, name(s, a), 0, 0);
        for (const DecodedEntry& e : d.pairs)
          after.push_back(spell_rotation(true, name(s, e.a), name(e.other, e.b), e.sign));
        for (const DecodedEntry& e : d.halves)
          after.push_back(spell_rotation(false, name(s, e.a), name(e.other, e.b), e.sign));
      }
      const RemoteLayer& layer = layouts[n].remote()[l];
      std::size_t start = 0;
      int last_peer = -1;
      blocks_right = blocks_right && layer.offset == offsets[n];
      offsets[n] += layer.entries;
      for (const RemoteBlock& b : layer.blocks) {
        blocks_right = blocks_right && b.peer > last_peer && b.peer != static_cast<int>(n) && b.start == start &&
                       b.counts == (static_cast<int>(n) < b.peer) && b.shards.size() == b.size() &&
                       b.slots.size() == b.size();
        last_peer = b.peer;
        start += b.size();
        const RemoteBlock* peer =
            block_toward(layouts[static_cast<std::size_t>(b.peer)].remote()[l], static_cast<int>(n));
        agree = agree && peer && peer->size() == b.size();
        if (!agree || !b.counts) continue;  // each entry spelled once, from its lower rank
        for (std::size_t e = 0; e < b.size(); ++e) {
          const std::uint64_t x = name(b.shards[e], b.slots[e]);
          const std::uint64_t y = name_at.at({b.peer, peer->shards[e], peer->slots[e]});
          const int code = b.codes[e], theirs = peer->codes[e], sign = code < 0 ? -1 : 1;
          // A pair: -s on the other side; a half: 2 s where the term rotates, 3 s where it receives.
          const int kind = code * sign;
          agree = agree && (kind == 1 ? theirs == -code : theirs == (kind == 2 ? 3 : 2) * sign);
          after.push_back(kind == 3 ? spell_rotation(false, y, x, sign) : spell_rotation(kind == 1, x, y, sign));
          ++remote_entries;
        }
      }
      blocks_right = blocks_right && layer.entries == start;
    }
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    kept = kept && before == after;
  }
  CHECK(kept);
  CHECK(agree);
  CHECK(blocks_right);
  for (std::size_t n = 0; n < R; ++n) CHECK(layouts[n].remote_entries() == offsets[n]);
  // What the layout is for: these circuits' generators are local, so a split
  // by bits shares fewer than half as many entries between ranks as the
  // routing did (each remote layer lists an entry on both of its ranks).
  std::size_t shared_before = 0;
  for (const auto& layers : graph.remote)
    for (const RemoteLayer& layer : layers) shared_before += layer.entries;
  CHECK(2 * remote_entries < shared_before / 2);

  // The replays: the ranks' graph and the layout, from the same value of
  // every term, give every term the same value bitwise.
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::map<std::uint64_t, double> start_of;
  for (const auto& [name, place] : place_of) start_of[name] = u(rng);
  Values before(R), after(R);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t s = 0; s < S; ++s) {
      const std::size_t g = graph.global(static_cast<int>(r), s);
      before[r].emplace_back();
      for (std::size_t i = 0; i < graph.keys[g].size(); ++i) before[r][s].push_back(start_of[name_of(g, i)]);
      after[r].emplace_back();
      for (std::uint32_t j = 0; j < layouts[r].size(s); ++j)
        after[r][s].push_back(start_of[name_at.at({static_cast<int>(r), static_cast<std::uint32_t>(s), j})]);
    }
  std::vector<std::vector<const Graph*>> laid_out(R);
  std::vector<const std::vector<RemoteLayer>*> remote_before, remote_after;
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t s = 0; s < S; ++s) laid_out[r].push_back(&layouts[r].graph(s));
    remote_before.push_back(&graph.remote[r]);
    remote_after.push_back(&layouts[r].remote());
  }
  replay_ranks(graphs, remote_before, before, graph.angles);
  replay_ranks(laid_out, remote_after, after, graph.angles);
  bool same = true;
  for (const auto& [name, place] : place_of) {
    const auto [n, s, j] = place;
    const std::size_t g = name >> 20;
    same = same && after.at(static_cast<std::size_t>(n)).at(s).at(j) ==
                       before.at(static_cast<std::size_t>(graph.rank_of(g))).at(g % S).at(name & 0xfffff);
  }
  CHECK(same);
  // And the ranks' replay is the textbook one (a check of the graphs themselves).
  std::vector<std::vector<double>> plain(graph.keys.size());
  for (std::size_t g = 0; g < graph.keys.size(); ++g)
    for (std::size_t i = 0; i < graph.keys[g].size(); ++i) plain[g].push_back(start_of[name_of(g, i)]);
  plain_replay(graph, plain);
  double most = 0.0;
  for (std::size_t g = 0; g < graph.keys.size(); ++g)
    for (std::size_t i = 0; i < graph.keys[g].size(); ++i)
      most = std::max(most, std::abs(plain[g][i] - before[static_cast<std::size_t>(graph.rank_of(g))][g % S][i]));
  CHECK(most < 1e-12);

  // The same graph lays out the same way again; zero bases travel as zeros.
  for (std::size_t g = 0; g < bases.size(); ++g)
    for (std::size_t i = 0; i < bases[g].size(); i += 3) bases[g][i] = 0.0;
  const std::vector<RankLayout> first = std::move(layouts);
  layouts.assign(R, RankLayout{});
  lay_out(true);
  bool again = std::count(made.begin(), made.end(), 1) == ranks;
  for (std::size_t n = 0; again && n < R; ++n)
    for (std::uint32_t s = 0; s < S; ++s) {
      again = again && layouts[n].size(s) == first[n].size(s) && layouts[n].weights(s) == first[n].weights(s);
      for (std::uint32_t j = 0; again && j < layouts[n].size(s); ++j) {
        const std::uint64_t name = name_at.at({static_cast<int>(n), s, j});
        again = again && layouts[n].base(s)[j] == bases[name >> 20][name & 0xfffff];
      }
      for (std::size_t l = 0; again && l < L; ++l)
        again = again && layouts[n].graph(s)[l].bytes == first[n].graph(s)[l].bytes;
    }
  CHECK(again);
  // Without `always` the ranks make a layout or not, all alike.
  lay_out(false);
  CHECK(std::count(made.begin(), made.end(), made[0]) == ranks);
  for (std::size_t n = 0; n < R; ++n) CHECK(made[n] ? !layouts[n].empty() : layouts[n].empty());
}

}  // namespace

TEST(test_rank_layout_against_ranks) {
  std::mt19937 rng(101);
  for (const int ranks : {2, 4})
    for (const int shards : {1, 2}) check_rank_layout(rng, ranks, shards);
}

// Three ranks: not a power of two, so no layout, on every rank alike.
TEST(test_rank_layout_needs_a_power_of_two) {
  std::mt19937 rng(102);
  RandomGraph graph = random_graph(rng, 3, 1, 6, 8, 12, 500);
  std::vector<RankLayout> layouts(3);
  std::vector<int> made(3, 1);
  run_ranks(3, [&](const mpi::Comm& comm, int r) {
    const auto k = static_cast<std::size_t>(r);
    const std::vector<double> base(graph.keys[k].size(), 1.0);
    const RankLayout::List none;
    made[k] = layouts[k].assign(comm, {&graph.graphs[k]}, graph.remote[k], graph.rank_keys(r), 1, graph.positions,
                                {base.data()}, {&none}, true);
  });
  for (std::size_t k = 0; k < 3; ++k) CHECK(!made[k] && layouts[k].empty());
}
#endif

// One rank (the serial Comm): nothing to lay out over.
TEST(test_rank_layout_one_rank) {
  std::mt19937 rng(103);
  RandomGraph graph = random_graph(rng, 1, 2, 6, 8, 12, 500);
  const mpi::Comm serial;
  RankLayout layout;
  std::vector<const Graph*> graphs = {&graph.graphs[0], &graph.graphs[1]};
  const std::vector<double> b0(graph.keys[0].size(), 1.0), b1(graph.keys[1].size(), 1.0);
  const RankLayout::List none;
  CHECK(!layout.assign(serial, graphs, graph.remote[0], graph.rank_keys(0), 1, graph.positions, {b0.data(), b1.data()},
                       {&none, &none}, true));
  CHECK(layout.empty() && layout.remote_entries() == 0);
}
