// Graph layers spelled out as plain entry lists, the reference the graph and
// replay tests encode and replay: random layers over a few shards, their
// encoding as ShardLayers (graph.h), and the textbook formulas forward.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "monoprop/graph.h"

namespace monoprop_test {
using namespace monoprop;

// A plain entry list (the reference) and its encoded ShardLayer, for one shard
// or split over several.
struct PlainEntry {
  int kind;                // 0 cos, 1 pair (or birth), 2 half
  std::uint32_t a, shard;  // a in shard
  std::uint32_t other, b;  // b in shard other
  int sign;
};

// Encodes shard `self`'s entries.
inline ShardLayer encode(const std::vector<PlainEntry>& entries, std::uint32_t self, std::uint32_t shards,
                         std::size_t limit) {
  ShardLayer layer;
  SectionWriter writer;
  writer.start();
  for (const auto& e : entries)
    if (e.kind == 0 && e.shard == self) writer.cos(e.a);
  writer.append_to(layer.bytes, layer.cos);
  for (std::uint32_t o = 0; o < shards; ++o) {
    Part part;
    part.shard = o;
    writer.start(slot_width(limit));
    for (const auto& e : entries)
      if (e.kind == 1 && e.shard == self && e.other == o) writer.pair(e.a, e.b, e.sign);
    writer.append_to(layer.bytes, part.pairs);
    writer.start(slot_width(limit));
    for (const auto& e : entries)
      if (e.kind == 2 && e.shard == self && e.other == o) writer.pair(e.a, e.b, e.sign);
    writer.append_to(layer.bytes, part.halves);
    if (part.births.count + part.pairs.count + part.halves.count) layer.parts.push_back(part);
  }
  SectionWriter::finish(layer.bytes);
  return layer;
}

// Random layers over `shards` shards of `n` slots each: every slot in at most
// one entry a layer.
inline std::vector<std::vector<PlainEntry>> random_layers(std::mt19937& rng, std::uint32_t shards, std::uint32_t n,
                                                          int layers) {
  std::vector<std::vector<PlainEntry>> out;
  for (int l = 0; l < layers; ++l) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> slots;  // (shard, slot)
    for (std::uint32_t s = 0; s < shards; ++s)
      for (std::uint32_t i = 0; i < n; ++i) slots.emplace_back(s, i);
    std::shuffle(slots.begin(), slots.end(), rng);
    std::vector<PlainEntry> entries;
    for (std::size_t e = 0; e + 1 < slots.size(); e += 2) {
      const int kind = static_cast<int>(rng() % 4);
      if (kind == 3) continue;  // commuting: untouched
      const auto [sa, a] = slots[e];
      const auto [sb, b] = slots[e + 1];
      const int sign = rng() % 2 ? 1 : -1;
      if (kind == 0) {
        entries.push_back({0, a, sa, 0, 0, 0});
        entries.push_back({0, b, sb, 0, 0, 0});
      } else {
        entries.push_back({kind, a, sa, sb, b, sign});
      }
    }
    std::sort(entries.begin(), entries.end(), [](const PlainEntry& x, const PlainEntry& y) { return x.a < y.a; });
    out.push_back(entries);
  }
  return out;
}

// One layer of the plain list forward, or backwards on (c, lambda) with the
// recorded inputs: the textbook formulas, written independently of rotation.h.
inline void plain_forward(const std::vector<PlainEntry>& entries, std::vector<std::vector<double>>& c, double phi) {
  const double cs = std::cos(phi), sn = std::sin(phi);
  for (const auto& e : entries) {
    double& x = c[e.shard][e.a];
    if (e.kind == 0) {
      x *= cs;
      continue;
    }
    double& y = c[e.other][e.b];
    const double xa = x, yb = y;
    if (e.kind == 1) {
      x = cs * xa - e.sign * sn * yb;
      y = cs * yb + e.sign * sn * xa;
    } else {
      x = cs * xa;
      y = yb + e.sign * sn * xa;
    }
  }
}

}  // namespace monoprop_test
