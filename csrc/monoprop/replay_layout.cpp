#include "replay_layout.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace monoprop {
namespace {

// What a layer that crosses blocks costs beyond its entries, in entries: the
// handover's two barriers and its walk over every block's parts.
constexpr double kCrossingCost = 512.0;
// The positions a split is made of are chosen among this many.
constexpr unsigned kCandidates = 16;
// What an entry of a crossing layer costs against one inside a block: its
// partner is copied over and back.
constexpr double kHandoverPrice = 1.5;
// A split is taken where it makes a replay at most this much slower than
// the work over T (the shards' own graph: every layer crosses, kHandoverPrice).
constexpr double kLargestEstimate = 1.25;

struct Entry {
  std::uint32_t a, b;
  int sign;
  bool operator<(const Entry& other) const { return a < other.a; }
};

// Sorts v, ascending runs one after another, by merging neighbouring runs
// round after round: a block's entries of a layer arrive as one ascending run
// for each section of each shard (n log runs, where sorting is n log n).
template <typename T>
void sort_runs(std::vector<T>& v) {
  std::vector<std::size_t> bounds{0};
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1]) bounds.push_back(i);
  bounds.push_back(v.size());
  while (bounds.size() > 2) {
    std::vector<std::size_t> next{0};
    std::size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(v.begin() + bounds[k], v.begin() + bounds[k + 1], v.begin() + bounds[k + 2]);
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

}  // namespace

void ReplayLayout::clear() {
  graphs_ = {};
  origin_ = {};
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

bool ReplayLayout::assign(const std::vector<const Graph*>& graphs, const std::vector<Keys>& keys, int words,
                          int positions, int blocks, bool always) {
  clear();
  const std::size_t S = graphs.size();
  const std::size_t L = S ? graphs[0]->size() : 0;
  if (blocks < 2 || blocks > 256 || L == 0) return false;
  std::size_t widest = 0;  // an origin (s, i) must fit one word
  for (const Keys& k : keys) widest = std::max(widest, k.size);
  if (std::bit_width(S - 1) + std::bit_width(widest) > 32) return false;
  auto row = [&](std::size_t s, std::size_t i) { return keys[s].rows + std::size_t(words) * i; };
  auto bit = [&](const std::uint64_t* key, int p) { return static_cast<unsigned>(key[p >> 6] >> (p & 63)) & 1u; };

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

  // Each layer again, per block.
  std::vector<std::uint8_t> width(static_cast<std::size_t>(blocks));
  for (std::size_t b = 0; b < width.size(); ++b) width[b] = slot_width(origin_[b].size());
  graphs_.assign(static_cast<std::size_t>(blocks), Graph(L));
  crossing_.assign(L, 0);
  std::vector<DecodedLayer> decoded(S);
  for (std::size_t l = 0; l < L; ++l) {
    for (std::size_t s = 0; s < S; ++s) decoded[s] = decode((*graphs[s])[l]);
    crossing_[l] = recode(decoded, l, graphs_, width, [&](std::size_t s, std::uint32_t i) {
      return std::pair<std::uint32_t, std::uint32_t>{block[s][i], index[s][i]};
    });
  }
  return true;
}

}  // namespace monoprop
