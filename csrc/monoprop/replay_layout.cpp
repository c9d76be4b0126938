#include "replay_layout.h"

#include <malloc.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <numeric>

#include "layer_recode.h"
#include "layout_split.h"

namespace monoprop {
namespace {
using recoding::recode;
using recoding::sort_runs;

// What a layer that crosses blocks costs beyond its entries, in entries: the
// handover's two barriers and its walk over every block's parts.
constexpr double kCrossingCost = 512.0;
// Bytes of the shards' layers given up between two trims of the heap.
constexpr std::size_t kTrimBytes = std::size_t{8} << 20;
// What an entry of a crossing layer costs against one inside a block: its
// partner is copied over and back.
constexpr double kHandoverPrice = 1.5;
// A split is taken where it makes a replay at most this much slower than
// the work over T (the shards' own graph: every layer crosses, kHandoverPrice).
constexpr double kLargestEstimate = 1.25;

// Rebuilds the bytes of a shard's layer from its sections (counts, births'
// bases, widths) and its entries, as a build writes them: the cos entries,
// then for each part its births, pairs and halves, each section in ascending
// a. A part holds the entries toward its shard; a birth is the entry whose b
// lies in a part's births; where two parts go to one shard (a layer's two
// rounds of lookups), the second holds the lookups of terms with the
// generator's top slot, upper(a). Returns false where the result would not be
// the layer as recorded (its sections or its bytes).
//
// A layer's quiet terms may be recorded out of order, so its cos section can
// also be given as recorded (`kept`, its bytes), and only the rest rebuilt.
template <typename Upper>
bool rebuild(const ShardLayer& layer, DecodedLayer& entries, Upper&& upper, const std::uint8_t* kept,
             std::vector<std::uint8_t>& bytes) {
  auto& [cos, dark, pairs, halves] = entries;
  auto by_a = [](const DecodedEntry& x, const DecodedEntry& y) { return x.a < y.a; };
  sort_runs(cos);  // each run of a section ascends: merging the runs is enough
  sort_runs(dark);
  sort_runs(pairs, by_a);
  sort_runs(halves, by_a);
  auto same = [](const Section& x, const Section& y) {
    return x.count == y.count && x.offset == y.offset && x.length == y.length && x.partners == y.partners &&
           x.base == y.base && x.width == y.width;
  };
  SectionWriter writer;
  Section section;
  if (kept) {
    bytes.assign(kept, kept + layer.cos.length);
  } else {
    bytes.clear();
    write_cos(writer, cos, dark, bytes, section);
    if (!same(section, layer.cos)) return false;
  }
  // Each entry into its part's births, pairs or halves, in ascending a.
  const std::size_t P = layer.parts.size();
  std::size_t shards = 0;
  for (const Part& part : layer.parts) shards = std::max<std::size_t>(shards, part.shard + 1);
  std::vector<int> first(shards, -1), second(shards, -1);  // the parts toward each shard, by round
  for (std::size_t p = 0; p < P; ++p) (first[layer.parts[p].shard] < 0 ? first : second)[layer.parts[p].shard] = int(p);
  std::vector<std::vector<const DecodedEntry*>> births(P), rotations(P), receives(P);
  for (const auto* list : {&pairs, &halves})
    for (const DecodedEntry& e : *list) {
      if (e.other >= shards || first[e.other] < 0) return false;
      const int lower = first[e.other], upper_part = second[e.other];
      bool birth = false;
      int p = upper_part < 0 || !upper(e.a) ? lower : upper_part;
      if (list == &pairs)
        for (const int q : {lower, upper_part})
          if (q >= 0 && e.b - layer.parts[q].births.base < layer.parts[q].births.count) birth = true, p = q;
      (birth ? births : list == &pairs ? rotations : receives)[p].push_back(&e);
    }
  for (std::size_t p = 0; p < P; ++p) {
    const Part& part = layer.parts[p];
    for (auto [list, recorded] : {std::pair{&births[p], &part.births}, std::pair{&rotations[p], &part.pairs},
                                  std::pair{&receives[p], &part.halves}}) {
      writer.start(recorded->width);
      for (const DecodedEntry* e : *list)
        list == &births[p] ? writer.birth(e->a, e->sign) : writer.pair(e->a, e->b, e->sign);
      section.base = recorded->base;
      writer.append_to(bytes, section);
      if (!same(section, *recorded)) return false;
    }
  }
  SectionWriter::finish(bytes);
  return true;
}

// Whether the layout took a shard's layer's bytes (all of them, or all but
// its cos section): a recorded layer ends in kPadding bytes after its sections.
bool given_up(const ShardLayer& layer) { return layer.bytes.size() <= layer.cos.length; }

}  // namespace

void ReplayLayout::clear() {
  graphs_ = {};
  origin_ = {};
  tops_ = {};
  crossing_ = {};
}

std::size_t ReplayLayout::memory() const {
  std::size_t n = crossing_.capacity();
  for (const Graph& graph : graphs_)
    for (const ShardLayer& layer : graph) n += layer.memory();
  for (const auto& o : origin_) n += o.capacity() * sizeof(o[0]);
  return n;
}

void ReplayLayout::gather(std::size_t b, const double* const* from, double* to) const {
  const auto& origin = origin_[b];
  for (std::size_t j = 0; j < origin.size(); ++j) to[j] = from[origin[j] >> shift_][origin[j] & mask_];
}

void ReplayLayout::scatter(std::size_t b, const double* from, double* const* to) const {
  const auto& origin = origin_[b];
  for (std::size_t j = 0; j < origin.size(); ++j) to[origin[j] >> shift_][origin[j] & mask_] = from[j];
}

std::vector<std::pair<std::uint32_t, double>> ReplayLayout::select(std::size_t b,
                                                                   const std::vector<const List*>& lists) const {
  // Block b meets each shard's slots in ascending order: one merge.
  std::vector<std::size_t> next(lists.size(), 0);
  std::vector<std::pair<std::uint32_t, double>> out;
  const auto& origin = origin_[b];
  for (std::size_t j = 0; j < origin.size(); ++j) {
    const std::uint32_t s = origin[j] >> shift_, i = origin[j] & mask_;
    const List& list = *lists[s];
    std::size_t& k = next[s];
    while (k < list.size() && list[k].first < i) ++k;
    if (k < list.size() && list[k].first == i) out.emplace_back(static_cast<std::uint32_t>(j), list[k].second);
  }
  return out;
}

void ReplayLayout::restore(const std::vector<Graph*>& graphs, const std::vector<Keys>& keys, int words) {
  const std::size_t S = graphs.size(), B = graphs_.size();
  for (std::size_t l = 0; l < crossing_.size(); ++l) {
    bool taken = false;
    for (std::size_t s = 0; s < S; ++s) taken = taken || given_up((*graphs[s])[l]);
    if (taken) {
      std::vector<DecodedLayer> shards(S);
      auto origin = [&](std::size_t b, std::uint32_t j) {
        return std::pair<std::uint32_t, std::uint32_t>{origin_[b][j] >> shift_, origin_[b][j] & mask_};
      };
      for (std::size_t b = 0; b < B; ++b) {
        const DecodedLayer d = decode(graphs_[b][l]);
        for (auto [list, out] : {std::pair{&d.cos, &DecodedLayer::cos}, std::pair{&d.dark, &DecodedLayer::dark}})
          for (const std::uint32_t a : *list) {
            const auto [s, i] = origin(b, a);
            (shards[s].*out).push_back(i);
          }
        for (auto [list, out] :
             {std::pair{&d.pairs, &DecodedLayer::pairs}, std::pair{&d.halves, &DecodedLayer::halves}})
          for (const DecodedEntry& e : *list) {
            const auto [s, i] = origin(b, e.a);
            const auto [o, j] = origin(e.other, e.b);
            (shards[s].*out).push_back({i, o, j, e.sign});
          }
      }
      for (std::size_t s = 0; s < S; ++s) {
        ShardLayer& layer = (*graphs[s])[l];
        if (!given_up(layer)) continue;
        auto upper = [&](std::uint32_t a) {
          return tops_[l] >= 0 && key_bit(keys[s].rows + std::size_t(words) * a, tops_[l]);
        };
        std::vector<std::uint8_t> bytes;  // assign checked that this is the layer as recorded
        rebuild(layer, shards[s], upper, layer.bytes.empty() ? nullptr : layer.bytes.data(), bytes);
        bytes.shrink_to_fit();
        layer.bytes.swap(bytes);
      }
    }
    for (std::size_t b = 0; b < B; ++b) graphs_[b][l] = ShardLayer{};
  }
  clear();
}

bool ReplayLayout::assign(const std::vector<Graph*>& graphs, const std::vector<Keys>& keys, int words, int positions,
                          int blocks, bool always) {
  clear();
  const std::size_t S = graphs.size();
  const std::size_t L = S ? graphs[0]->size() : 0;
  if (blocks < 2 || blocks > 256 || L == 0) return false;
  std::size_t widest = 0;  // an origin (s, i) must fit one word
  for (const Keys& k : keys) widest = std::max(widest, k.size);
  if (std::bit_width(S - 1) + std::bit_width(widest) > 32) return false;
  auto row = [&](std::size_t s, std::size_t i) { return keys[s].rows + std::size_t(words) * i; };

  std::vector<const Graph*> shard_graphs(graphs.begin(), graphs.end());
  std::vector<std::vector<std::uint32_t>> work;
  SplitStats stats = split_stats(shard_graphs, keys, words, kCrossingCost, work);
  add_work(stats, keys, positions, work);
  if (stats.total_work == 0.0) return false;
  std::vector<int> candidates = Split::candidates(stats, kHandoverPrice);
  if (candidates.empty()) return false;
  const std::vector<double> pattern_work = Split::pattern_work(candidates, keys, words, work);
  work = {};
  const Split split(stats, std::move(candidates), pattern_work, blocks, kHandoverPrice);
  if (split.score() > kLargestEstimate && !always) return false;

  // Numbering: slots in the order (slot, shard), which follows the order of
  // birth, each block counting its own.
  std::vector<std::vector<std::uint8_t>> block(S);
  std::vector<std::vector<std::uint32_t>> index(S);
  origin_.assign(blocks, {});
  for (std::size_t s = 0; s < S; ++s) {
    block[s].resize(keys[s].size);
    index[s].resize(keys[s].size);
  }
  // An origin (s, i) is one word: s above `shift_` bits of i.
  shift_ = std::bit_width(widest);
  mask_ = static_cast<std::uint32_t>((std::uint64_t{1} << shift_) - 1);
  for (std::size_t i = 0; i < widest; ++i)
    for (std::size_t s = 0; s < S; ++s) {
      if (i >= keys[s].size) continue;
      const auto b = static_cast<std::uint8_t>(split.block(row(s, i)));
      block[s][i] = b;
      index[s][i] = static_cast<std::uint32_t>(origin_[b].size());
      origin_[b].push_back(static_cast<std::uint32_t>(s << shift_ | i));
    }

  // Each layer again, per block. The layout then takes the shards' copy of
  // the layer over: their bytes go (the sections stay), so that the graph is
  // not held twice, wherever restore() can write them again exactly.
  std::vector<std::uint8_t> width(static_cast<std::size_t>(blocks));
  for (std::size_t b = 0; b < width.size(); ++b) width[b] = slot_width(origin_[b].size());
  graphs_.assign(static_cast<std::size_t>(blocks), Graph(L));
  crossing_.assign(L, 0);
  tops_.assign(L, -1);
  for (std::size_t l = 0; l < L; ++l)
    for (int w = words; w-- > 0 && tops_[l] < 0;)
      if (const std::uint64_t x = stats.flips[l * words + w]) tops_[l] = 64 * w + 63 - std::countl_zero(x);
  std::vector<DecodedLayer> decoded(S);
  std::vector<std::uint8_t> again;
  std::size_t given_back = 0;
  for (std::size_t l = 0; l < L; ++l) {
    for (std::size_t s = 0; s < S; ++s) decoded[s] = decode((*graphs[s])[l]);
    crossing_[l] = recode(decoded, l, graphs_, width, [&](std::size_t s, std::uint32_t i) {
      return std::pair<std::uint32_t, std::uint32_t>{block[s][i], index[s][i]};
    });
    for (std::size_t s = 0; s < S; ++s) {
      ShardLayer& layer = (*graphs[s])[l];
      auto upper = [&](std::uint32_t a) { return tops_[l] >= 0 && key_bit(row(s, a), tops_[l]); };
      if (rebuild(layer, decoded[s], upper, nullptr, again) && again == layer.bytes) {
        given_back += layer.bytes.capacity();
        std::vector<std::uint8_t>().swap(layer.bytes);
      } else if (rebuild(layer, decoded[s], upper, layer.bytes.data(), again) && again == layer.bytes) {
        given_back += layer.bytes.capacity() - layer.cos.length;  // only its cos section stays
        std::vector<std::uint8_t>(layer.bytes.begin(), layer.bytes.begin() + layer.cos.length).swap(layer.bytes);
      }
    }
    // The freed layers leave holes between the blocks' new ones, which the
    // allocator keeps: hand their pages back as they add up, or the process
    // would hold the graph twice after all.
    if (given_back > kTrimBytes) {
      malloc_trim(0);
      given_back = 0;
    }
  }
  malloc_trim(0);
  return true;
}

}  // namespace monoprop
