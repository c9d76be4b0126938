// Random propagation graphs built the way the engine builds them, the input
// of the tests of the replay layouts and lane replays.
//
// Terms are Pauli strings of a few qubits (one key word), each filed in the
// shard a hash of its key names, and every layer rotates by a local
// generator G: a term P that anticommutes with G pairs with P xor G where
// that term is held, or gives birth to it, or keeps only its cos scaling,
// lit or dark, or stays untouched (as a truncation would leave it). A pair's
// entry is filed under one of its terms, in the lookup round the engine uses
// (the second for terms that hold G's top slot); each part's births are
// consecutive new slots of their shard. Shards belong to ranks: an entry
// whose terms live on two ranks is a remote entry of both (remote.h), in an
// order both sides agree on.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "monoprop/algebra.h"
#include "monoprop/graph.h"
#include "monoprop/layout_split.h"
#include "monoprop/remote.h"

namespace monoprop_test {
using namespace monoprop;

// One entry of a layer; shards are global (rank * shards + local).
struct GraphEntry {
  enum Kind { Cos, Dark, Pair, Half } kind;
  std::uint32_t sa, a;  // the term the entry is filed under
  std::uint32_t sb, b;  // a pair's or half's partner (a half: a rotates, b receives)
  int sign;
  bool birth;  // a pair whose b was born in the layer, in a births section
  int round;   // the lookup round: 1 for a term holding the generator's top slot
};

struct RandomGraph {
  int ranks = 1, shards = 1;                     // shards a rank
  int positions = 0;                             // key bits (2 per qubit)
  bool scramble = true;                          // whether some cos sections are recorded out of order
  std::vector<std::vector<std::uint64_t>> keys;  // by global shard: the key of each slot
  std::vector<std::uint64_t> generators;         // by layer
  std::vector<double> angles;                    // by layer
  std::vector<std::vector<GraphEntry>> entries;  // by layer
  std::vector<Graph> graphs;                     // by global shard; parts name the rank's shards
  std::vector<std::vector<RemoteLayer>> remote;  // by rank, by layer

  int rank_of(std::size_t g) const { return static_cast<int>(g) / shards; }
  std::size_t global(int rank, std::size_t s) const { return static_cast<std::size_t>(rank * shards) + s; }
  std::size_t layers() const { return generators.size(); }
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& k : keys) n += k.size();
    return n;
  }
  std::vector<Graph*> rank_graphs(int rank) {
    std::vector<Graph*> out;
    for (int s = 0; s < shards; ++s) out.push_back(&graphs[global(rank, s)]);
    return out;
  }
  std::vector<SlotKeys> rank_keys(int rank) const {
    std::vector<SlotKeys> out;
    for (int s = 0; s < shards; ++s) out.push_back({keys[global(rank, s)].data(), keys[global(rank, s)].size()});
    return out;
  }
};

// A local generator: one to three neighbouring qubits, each X, Y or Z.
inline std::uint64_t random_generator(std::mt19937& rng, int qubits) {
  const int width = 1 + static_cast<int>(rng() % 3);
  const int first = static_cast<int>(rng() % static_cast<unsigned>(qubits - width + 1));
  std::uint64_t g = 0;
  for (int q = first; q < first + width; ++q) g |= std::uint64_t{1 + rng() % 3} << (2 * q);
  return g;
}

// Encodes every shard's part of layer l from graph.entries[l] (see graph.h).
inline void encode_layer(RandomGraph& graph, std::size_t l) {
  const std::size_t G = graph.keys.size();
  for (std::size_t g = 0; g < G; ++g) {
    std::vector<std::uint32_t> lit, dark;
    // parts[o][round]: (a, b, sign) of births, pairs and halves toward local shard o.
    using Row = std::tuple<std::uint32_t, std::uint32_t, int>;
    std::vector<std::array<std::array<std::vector<Row>, 3>, 2>> parts(static_cast<std::size_t>(graph.shards));
    for (const GraphEntry& e : graph.entries[l]) {
      if (e.sa != g) continue;
      if (e.kind == GraphEntry::Cos || e.kind == GraphEntry::Dark) {
        (e.kind == GraphEntry::Cos ? lit : dark).push_back(e.a);
        continue;
      }
      if (graph.rank_of(e.sb) != graph.rank_of(g)) continue;  // a remote entry
      const int section = e.kind == GraphEntry::Half ? 2 : e.birth ? 0 : 1;
      parts[e.sb % graph.shards][e.round][section].emplace_back(e.a, e.b, e.sign);
    }
    ShardLayer layer;
    SectionWriter writer;
    std::sort(lit.begin(), lit.end());
    std::sort(dark.begin(), dark.end());
    // A build may record its quiet terms out of order (two ascending runs):
    // so do some layers here.
    if (graph.scramble && lit.size() > 2 && lit[0] % 4 == 0) std::rotate(lit.begin(), lit.begin() + 1, lit.end());
    write_cos(writer, lit, dark, layer.bytes, layer.cos);
    for (std::size_t o = 0; o < parts.size(); ++o)
      for (auto& rounds : parts[o]) {
        Part part;
        part.shard = static_cast<std::uint32_t>(o);
        const std::uint8_t width = slot_width(graph.keys[graph.global(graph.rank_of(g), o)].size());
        for (int section = 0; section < 3; ++section) {
          std::vector<Row>& rows = rounds[section];
          std::sort(rows.begin(), rows.end());
          writer.start(section == 0 ? 0 : width);
          for (const auto& [a, b, sign] : rows) section == 0 ? writer.birth(a, sign) : writer.pair(a, b, sign);
          Section& out = section == 0 ? part.births : section == 1 ? part.pairs : part.halves;
          writer.append_to(layer.bytes, out);
          if (section == 0 && !rows.empty()) out.base = std::get<1>(rows[0]);
        }
        if (part.births.count + part.pairs.count + part.halves.count) layer.parts.push_back(part);
      }
    SectionWriter::finish(layer.bytes);
    graph.graphs[g].push_back(std::move(layer));
  }
}

// Files layer l's entries whose terms live on two ranks as remote layers of both.
inline void remote_layer(RandomGraph& graph, std::size_t l) {
  const auto R = static_cast<std::size_t>(graph.ranks);
  // by (lower rank, higher rank): the entries filed under the lower one, then the higher one's
  std::map<std::pair<int, int>, std::vector<const GraphEntry*>> shared;
  for (int side = 0; side < 2; ++side)
    for (const GraphEntry& e : graph.entries[l]) {
      if (e.kind == GraphEntry::Cos || e.kind == GraphEntry::Dark) continue;
      const int x = graph.rank_of(e.sa), y = graph.rank_of(e.sb);
      if (x == y || (x < y) != (side == 0)) continue;
      shared[{std::min(x, y), std::max(x, y)}].push_back(&e);
    }
  for (std::size_t r = 0; r < R; ++r) {
    RemoteLayer layer;
    for (std::size_t p = 0; p < R; ++p) {
      const auto found = shared.find({static_cast<int>(std::min(r, p)), static_cast<int>(std::max(r, p))});
      if (p == r || found == shared.end()) continue;
      RemoteBlock block;
      block.peer = static_cast<int>(p);
      block.counts = r < p;
      block.start = layer.entries;
      for (const GraphEntry* e : found->second) {
        const bool own_a = graph.rank_of(e->sa) == static_cast<int>(r);
        block.shards.push_back((own_a ? e->sa : e->sb) % static_cast<std::uint32_t>(graph.shards));
        block.slots.push_back(own_a ? e->a : e->b);
        // A pair: the other side applies -s; a half: 2 s where this term rotates, 3 s where it receives.
        const int code = e->kind == GraphEntry::Pair ? (own_a ? e->sign : -e->sign) : (own_a ? 2 : 3) * e->sign;
        block.codes.push_back(static_cast<std::int8_t>(code));
      }
      layer.entries += block.size();
      layer.blocks.push_back(std::move(block));
    }
    layer.offset = graph.remote[r].empty() ? 0 : graph.remote[r].back().offset + graph.remote[r].back().entries;
    graph.remote[r].push_back(std::move(layer));
  }
}

// A graph of `layers` layers over `ranks` ranks of `shards` shards, on
// `qubits` qubits (3 to 32), from `initial` random terms, growing to about
// `most` terms. With `loose`, each layer also gives that share of the terms
// that commute with its generator a cos entry (as no build does, but any
// entries make a graph).
inline RandomGraph random_graph(std::mt19937& rng, int ranks, int shards, int qubits, int layers, int initial,
                                std::size_t most, double loose = 0.0) {
  RandomGraph graph;
  graph.ranks = ranks;
  graph.shards = shards;
  graph.positions = 2 * qubits;
  const std::size_t G = static_cast<std::size_t>(ranks * shards);
  graph.keys.assign(G, {});
  graph.graphs.assign(G, {});
  graph.remote.assign(static_cast<std::size_t>(ranks), {});
  const std::uint64_t mask = qubits == 32 ? ~std::uint64_t{0} : (std::uint64_t{1} << (2 * qubits)) - 1;
  std::map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> where;  // key -> (shard, slot)
  auto home = [&](std::uint64_t key) { return static_cast<std::uint32_t>(Monomial<1>::splitmix64(key) % G); };
  auto add = [&](std::uint64_t key) {
    const std::uint32_t g = home(key);
    where[key] = {g, static_cast<std::uint32_t>(graph.keys[g].size())};
    graph.keys[g].push_back(key);
  };
  while (where.size() < static_cast<std::size_t>(initial)) {
    const std::uint64_t key = (std::uint64_t{rng()} << 32 | rng()) & mask;
    if (!where.count(key)) add(key);
  }
  std::uniform_real_distribution<double> angle(-3.0, 3.0);
  for (int l = 0; l < layers; ++l) {
    const std::uint64_t G_key = random_generator(rng, qubits);
    const int top = 63 - std::countl_zero(G_key);
    const PauliAlgebra::Generator<1> gen(Monomial<1>{{G_key}});
    graph.generators.push_back(G_key);
    // A quarter turn now and then, whose cos is tiny: the reverse sweeps keep inputs there.
    graph.angles.push_back(rng() % 5 == 0 ? 1.5707963 + 1e-4 * angle(rng) : angle(rng));
    std::vector<GraphEntry>& entries = graph.entries.emplace_back();
    std::map<std::uint64_t, bool> used;
    struct Born {
      std::uint64_t key;
      std::size_t entry;
    };
    std::vector<Born> born;
    const std::size_t held = where.size();
    auto sign_of = [&](std::uint64_t key) { return rotation_sign<PauliAlgebra>(Monomial<1>{{key}}, gen); };
    auto upper = [&](std::uint64_t key) { return static_cast<int>((key >> top) & 1); };
    for (std::uint32_t g = 0; g < G; ++g)
      for (std::uint32_t i = 0; i < graph.keys[g].size(); ++i) {
        const std::uint64_t p = graph.keys[g][i], q = p ^ G_key;
        if (loose > 0.0 && !used[p] && sign_of(p) == 0 && std::bernoulli_distribution(loose)(rng))
          entries.push_back({GraphEntry::Cos, g, i, 0, 0, 0, false, 0});
        if (used[p] || sign_of(p) == 0) continue;
        used[p] = true;
        const unsigned pick = rng() % 10;
        const auto it = where.find(q);
        if (it != where.end()) {
          used[q] = true;
          const auto [h, j] = it->second;
          if (pick < 6) {
            // A pair or a half, filed under either term.
            const bool p_files = rng() % 2;
            const std::uint64_t a_key = p_files ? p : q;
            const auto [sa, a] = p_files ? std::pair{g, i} : std::pair{h, j};
            const auto [sb, b] = p_files ? std::pair{h, j} : std::pair{g, i};
            entries.push_back(
                {pick < 4 ? GraphEntry::Pair : GraphEntry::Half, sa, a, sb, b, sign_of(a_key), false, upper(a_key)});
          } else if (pick < 8) {
            for (const auto& [s, x] : {std::pair{g, i}, std::pair{h, j}})
              entries.push_back({rng() % 8 ? GraphEntry::Cos : GraphEntry::Dark, s, x, 0, 0, 0, false, 0});
          } else if (pick == 8) {
            entries.push_back({GraphEntry::Cos, g, i, 0, 0, 0, false, 0});
          }
        } else if (pick < 5 && held + born.size() < most) {
          born.push_back({q, entries.size()});
          entries.push_back({GraphEntry::Pair, g, i, home(q), 0, sign_of(p), false, upper(p)});
        } else if (pick < 8) {
          entries.push_back({rng() % 8 ? GraphEntry::Cos : GraphEntry::Dark, g, i, 0, 0, 0, false, 0});
        }
      }
    // New slots in the order the engine appends them: a shard's births of
    // this rank by round, then by asking shard, each part's in ascending a
    // (so a part's are consecutive); then those asked from other ranks.
    std::stable_sort(born.begin(), born.end(), [&](const Born& x, const Born& y) {
      const GraphEntry &ex = entries[x.entry], &ey = entries[y.entry];
      const bool far_x = graph.rank_of(ex.sa) != graph.rank_of(ex.sb),
                 far_y = graph.rank_of(ey.sa) != graph.rank_of(ey.sb);
      return std::tuple{ex.sb, far_x, ex.round, ex.sa, ex.a} < std::tuple{ey.sb, far_y, ey.round, ey.sa, ey.a};
    });
    for (const Born& n : born) {
      GraphEntry& e = entries[n.entry];
      add(n.key);
      e.b = where[n.key].second;
      e.birth = graph.rank_of(e.sa) == graph.rank_of(e.sb);
    }
    encode_layer(graph, static_cast<std::size_t>(l));
    remote_layer(graph, static_cast<std::size_t>(l));
  }
  return graph;
}

// The textbook formulas of each entry (graph.h), layer after layer, on
// c[global shard][slot], written apart from rotation.h.
inline void plain_replay(const RandomGraph& graph, std::vector<std::vector<double>>& c) {
  for (std::size_t l = 0; l < graph.layers(); ++l) {
    const double cs = std::cos(graph.angles[l]), sn = std::sin(graph.angles[l]);
    for (const GraphEntry& e : graph.entries[l]) {
      double& x = c[e.sa][e.a];
      if (e.kind == GraphEntry::Cos || e.kind == GraphEntry::Dark) {
        x *= cs;
        continue;
      }
      double& y = c[e.sb][e.b];
      const double xa = x, yb = y;
      if (e.kind == GraphEntry::Pair) {
        x = cs * xa - e.sign * sn * yb;
        y = cs * yb + e.sign * sn * xa;
      } else {
        x = cs * xa;
        y = yb + e.sign * sn * xa;
      }
    }
  }
}

}  // namespace monoprop_test
