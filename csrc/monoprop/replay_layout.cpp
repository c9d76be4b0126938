#include "replay_layout.h"

#include <malloc.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <numeric>

namespace monoprop {
namespace {

// What a layer that crosses blocks costs beyond its entries, in entries: the
// handover's two barriers and its walk over every block's parts.
constexpr double kCrossingCost = 512.0;
// Bytes of the shards' layers given up between two trims of the heap.
constexpr std::size_t kTrimBytes = std::size_t{8} << 20;
// The positions a split is made of are chosen among this many.
constexpr unsigned kCandidates = 16;
// What an entry of a crossing layer costs against one inside a block: its
// partner is copied over and back.
constexpr double kHandoverPrice = 1.5;
// A split is taken where it makes a replay at most this much slower than
// the work over T (the shards' own graph: every layer crosses, kHandoverPrice).
constexpr double kLargestEstimate = 1.25;

// Bit p of a key.
bool bit(const std::uint64_t* key, int p) { return (key[p >> 6] >> (p & 63)) & 1u; }

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
  std::vector<std::vector<std::uint32_t>> cos(B);
  std::vector<std::vector<Entry>> pairs(B * B), halves(B * B);  // [b * B + o]
  bool crossing = false;
  for (std::size_t s = 0; s < decoded.size(); ++s) {
    for (const std::uint32_t a : decoded[s].cos) {
      const auto [b, i] = place(s, a);
      cos[b].push_back(i);
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
    writer.start();
    for (const std::uint32_t a : cos[b]) writer.cos(a);
    writer.append_to(layer.bytes, layer.cos);
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
bool rebuild(const ShardLayer& layer, std::vector<std::uint32_t>& cos, std::vector<DecodedEntry>& pairs,
             std::vector<DecodedEntry>& halves, Upper&& upper, const std::uint8_t* kept,
             std::vector<std::uint8_t>& bytes) {
  auto by_a = [](const DecodedEntry& x, const DecodedEntry& y) { return x.a < y.a; };
  sort_runs(cos);  // each section ascends: merging its runs is enough
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
    writer.start();
    for (const std::uint32_t a : cos) writer.cos(a);
    writer.append_to(bytes, section);
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
        for (const std::uint32_t a : d.cos) {
          const auto [s, i] = origin(b, a);
          shards[s].cos.push_back(i);
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
          return tops_[l] >= 0 && bit(keys[s].rows + std::size_t(words) * a, tops_[l]);
        };
        std::vector<std::uint8_t> bytes;  // assign checked that this is the layer as recorded
        rebuild(layer, shards[s].cos, shards[s].pairs, shards[s].halves, upper,
                layer.bytes.empty() ? nullptr : layer.bytes.data(), bytes);
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

  // The work filed under each slot (entries whose a it is), and each layer's
  // generator as the bits its first rotating entry flips: the one of least a
  // in the first shard that has one, whatever the order of the entries.
  std::vector<std::vector<std::uint32_t>> work(S);
  for (std::size_t s = 0; s < S; ++s) work[s].assign(keys[s].size, 0);
  std::vector<std::uint64_t> flips(L * std::size_t(words), 0);
  std::vector<double> layer_cost(L, 0.0);
  for (std::size_t l = 0; l < L; ++l) {
    bool found = false;
    for (std::size_t s = 0; s < S; ++s) {
      const DecodedLayer d = decode((*graphs[s])[l]);
      for (const std::uint32_t a : d.cos) ++work[s][a];
      const DecodedEntry* first = nullptr;
      for (const auto* list : {&d.pairs, &d.halves})
        for (const DecodedEntry& e : *list) {
          ++work[s][e.a];
          if (!found && (!first || e.a < first->a)) first = &e;
        }
      if (first)
        for (int w = 0; w < words; ++w) flips[l * words + w] = row(s, first->a)[w] ^ row(first->other, first->b)[w];
      found = found || first != nullptr;
      layer_cost[l] += static_cast<double>(d.pairs.size() + d.halves.size());
    }
    if (found) layer_cost[l] += kCrossingCost;
  }
  // Candidates: the kCandidates positions on which the terms differ that the
  // generators flip least, weighed by the cost of the layers they would cross.
  double total_work = 0.0;
  std::vector<double> position_work(positions, 0.0), position_cost(positions, 0.0);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < keys[s].size; ++i) {
      const double w = work[s][i];
      total_work += w;
      for (int k = 0; k < words; ++k)  // a term has few bits set
        for (std::uint64_t x = row(s, i)[k]; x != 0; x &= x - 1) position_work[64 * k + std::countr_zero(x)] += w;
    }
  if (total_work == 0.0) return false;
  for (std::size_t l = 0; l < L; ++l)
    for (int p = 0; p < positions; ++p)
      if (bit(&flips[l * words], p)) position_cost[p] += layer_cost[l];
  const double total_cost = std::accumulate(layer_cost.begin(), layer_cost.end(), 0.0);
  auto estimate = [&](double uneven, double crossing) {
    return uneven * (total_cost - crossing) + kHandoverPrice * crossing;
  };
  // Half of them the best splits alone, the others the least flipped (a
  // parity of several of those may split evenly where none of them does).
  std::vector<int> varied, candidates;
  for (int p = 0; p < positions; ++p)
    if (position_work[p] > 0.02 * total_work && position_work[p] < 0.98 * total_work) varied.push_back(p);
  auto alone = [&](int p) {
    return estimate(2.0 * std::max(position_work[p], total_work - position_work[p]) / total_work, position_cost[p]);
  };
  std::stable_sort(varied.begin(), varied.end(), [&](int x, int y) { return alone(x) < alone(y); });
  candidates.assign(varied.begin(), varied.begin() + std::min<std::size_t>(varied.size(), kCandidates / 2));
  std::stable_sort(varied.begin(), varied.end(), [&](int x, int y) { return position_cost[x] < position_cost[y]; });
  for (const int p : varied)
    if (candidates.size() < kCandidates && std::find(candidates.begin(), candidates.end(), p) == candidates.end())
      candidates.push_back(p);
  const auto m = static_cast<unsigned>(candidates.size());
  if (m == 0) return false;
  auto pattern = [&](const std::uint64_t* key) {
    std::uint32_t x = 0;
    for (unsigned j = 0; j < m; ++j) x |= bit(key, candidates[j]) << j;
    return x;
  };
  // The work of the terms of each pattern of the candidates' bits, and the
  // pattern each layer's generator flips.
  std::vector<double> pattern_work(std::size_t{1} << m, 0.0);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < keys[s].size; ++i) pattern_work[pattern(row(s, i))] += work[s][i];
  std::vector<std::uint32_t> layer_flip(L);
  for (std::size_t l = 0; l < L; ++l) layer_flip[l] = pattern(&flips[l * words]);
  work = {};

  // The split: k parities v . x of the candidates' bits x, chosen greedily,
  // each the one (of at most three bits) that makes the replay cheapest with
  // the ones before: its estimated time, in entries of one thread, is the
  // largest class's share of the layers that stay inside the blocks, plus the
  // crossing layers at the handover's price.
  auto parity = [](std::uint32_t v, std::uint32_t x) { return static_cast<std::uint32_t>(std::popcount(v & x) & 1); };
  std::vector<std::uint32_t> functionals;
  for (unsigned a = 0; a < m; ++a) {
    functionals.push_back(1u << a);
    for (unsigned b = a + 1; b < m; ++b) {
      functionals.push_back(1u << a | 1u << b);
      for (unsigned c = b + 1; c < m; ++c) functionals.push_back(1u << a | 1u << b | 1u << c);
    }
  }
  struct Split {
    std::vector<std::uint32_t> class_of;  // by pattern
    std::vector<std::uint8_t> block_of_class;
    std::vector<std::uint8_t> crossed;  // by layer
    double uneven = 0.0, crossing = 0.0, score = 0.0;
  };
  // k parities, classes onto at most `blocks` blocks: the heaviest first onto the lightest.
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
  auto split = [&](int k) {
    Split out;
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
          if (out.crossed[l] || parity(v, layer_flip[l])) crossing += layer_cost[l];
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
      if (out.crossed[l]) out.crossing += layer_cost[l];
    out.score = estimate(out.uneven, out.crossing) / total_cost;
    return out;
  };
  // As many parities as make T classes, or one more where T is not a power
  // of two (more classes than blocks even out), whichever is cheaper.
  const int k = std::bit_width(static_cast<unsigned>(blocks - 1));
  Split best = split(k);
  if (!std::has_single_bit(static_cast<unsigned>(blocks)))
    if (Split finer = split(k + 1); finer.score < best.score) best = std::move(finer);
  if (best.score > kLargestEstimate && !always) return false;
  const std::vector<std::uint32_t>& class_of = best.class_of;
  const std::vector<std::uint8_t>& block_of_class = best.block_of_class;

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
      const std::uint8_t b = block_of_class[class_of[pattern(row(s, i))]];
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
      if (const std::uint64_t x = flips[l * words + w]) tops_[l] = 64 * w + 63 - std::countl_zero(x);
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
      auto upper = [&](std::uint32_t a) { return tops_[l] >= 0 && bit(row(s, a), tops_[l]); };
      auto& [cos, pairs, halves] = decoded[s];
      if (rebuild(layer, cos, pairs, halves, upper, nullptr, again) && again == layer.bytes) {
        given_back += layer.bytes.capacity();
        std::vector<std::uint8_t>().swap(layer.bytes);
      } else if (rebuild(layer, cos, pairs, halves, upper, layer.bytes.data(), again) && again == layer.bytes) {
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
