// Writing a layer's entries again under new slot numbers, for the replay
// layouts (replay_layout.h, rank_layout.h): each owner's layer is encoded
// afresh from the decoded entries of the old owners.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "graph.h"

namespace monoprop::recoding {

struct Entry {
  std::uint32_t a, b;
  int sign;
  bool operator<(const Entry& other) const { return a < other.a; }
};

// Sorts v, ascending runs one after another, by merging neighbouring runs
// round after round: a block's entries of a layer arrive as one ascending run
// for each section of each shard (n log runs, where sorting is n log n).
template <typename T, typename Less = std::less<T>>
void sort_runs(std::vector<T>& v, Less less = {}) {
  std::vector<std::size_t> bounds{0};
  for (std::size_t i = 1; i < v.size(); ++i)
    if (less(v[i], v[i - 1])) bounds.push_back(i);
  bounds.push_back(v.size());
  while (bounds.size() > 2) {
    std::vector<std::size_t> next{0};
    std::size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(v.begin() + bounds[k], v.begin() + bounds[k + 1], v.begin() + bounds[k + 2], less);
      next.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) next.push_back(bounds.back());  // an odd run left over
    bounds.swap(next);
  }
}

// Encodes layer l of `into` (one graph per owner) from the entries of each
// of its old owners (decoded[s]), each slot moved to place(s, i) = (owner,
// index): its cos entries, then a part for each owner its pairs and halves
// reach into, every section in ascending a. Births become pairs (their
// partners are no longer consecutive). Returns whether some entry crosses
// owners.
template <typename Place>
bool recode(const std::vector<DecodedLayer>& decoded, std::size_t l, std::vector<Graph>& into,
            const std::vector<std::uint8_t>& width, Place&& place) {
  const std::size_t B = into.size();
  std::vector<std::vector<std::uint32_t>> cos(B), dark(B);
  std::vector<std::vector<Entry>> pairs(B * B), halves(B * B);  // [b * B + o]
  bool crossing = false;
  for (std::size_t s = 0; s < decoded.size(); ++s) {
    for (auto [from, to] : {std::pair{&decoded[s].cos, &cos}, std::pair{&decoded[s].dark, &dark}})
      for (const std::uint32_t a : *from) {
        const auto [b, i] = place(s, a);
        (*to)[b].push_back(i);
      }
    for (auto [list, out] : {std::pair{&decoded[s].pairs, &pairs}, std::pair{&decoded[s].halves, &halves}})
      for (const DecodedEntry& e : *list) {
        const auto [b, i] = place(s, e.a);
        const auto [o, j] = place(e.other, e.b);
        (*out)[b * B + o].push_back({i, j, e.sign});
        crossing = crossing || b != o;
      }
  }
  SectionWriter writer;
  for (std::size_t b = 0; b < B; ++b) {
    ShardLayer& layer = into[b][l];
    sort_runs(cos[b]);
    sort_runs(dark[b]);
    write_cos(writer, cos[b], dark[b], layer.bytes, layer.cos);
    for (std::size_t o = 0; o < B; ++o) {
      auto& p = pairs[b * B + o];
      auto& h = halves[b * B + o];
      if (p.empty() && h.empty()) continue;
      Part part;
      part.shard = static_cast<std::uint32_t>(o);
      for (auto [list, section] : {std::pair{&p, &part.pairs}, std::pair{&h, &part.halves}}) {
        sort_runs(*list);
        writer.start(width[o]);
        for (const Entry& e : *list) writer.pair(e.a, e.b, e.sign);
        writer.append_to(layer.bytes, *section);
      }
      layer.parts.push_back(part);
    }
    SectionWriter::finish(layer.bytes);
    layer.bytes.shrink_to_fit();
  }
  return crossing;
}

}  // namespace monoprop::recoding
