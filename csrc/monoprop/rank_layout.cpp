#include "rank_layout.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

#include "layer_recode.h"

namespace monoprop {
namespace {

// What a layer that crosses ranks costs beyond its entries, in entries: a
// round trip between ranks (tens of microseconds) each way of a replay.
constexpr double kCrossingCost = 20000.0;
// What an entry that spans two ranks costs against one inside a rank: both
// inputs are gathered, sent, received and applied on both sides, forward and
// back.
constexpr double kSharedPrice = 4.0;
// A layout is made where its estimated replay takes at most this share of the
// shards' own graph's, and no rank's work is more than this much over the
// mean: a rank's part of the layout is memory too, which its budget must hold.
constexpr double kLargestShare = 0.8;
constexpr double kMostUneven = 1.25;

// A slot's place in the layout: its rank, shard and index there.
struct Place {
  static std::uint64_t make(std::size_t rank, std::size_t shard, std::size_t index) {
    return std::uint64_t{rank} << 48 | std::uint64_t{shard} << 32 | index;
  }
  static std::size_t rank(std::uint64_t p) { return static_cast<std::size_t>(p >> 48); }
  static std::uint32_t shard(std::uint64_t p) { return static_cast<std::uint32_t>(p >> 32) & 0xffffu; }
  static std::uint32_t index(std::uint64_t p) { return static_cast<std::uint32_t>(p); }
};

// An entry on the way to the rank of its terms: term x and, unless it is a
// cos entry (code 0, or kDarkCos for a dark one), term y, with code s (a pair:
// x and y rotate into each other) or 2 s (a half: x rotates, y receives),
// s = +-1 as graph.h has it.
constexpr std::int64_t kDarkCos = 4;
struct Record {
  std::uint64_t x, y;
  std::int64_t code;
};

// A value for a slot: its place and the value.
struct Value {
  std::uint64_t place;
  double value;
};

// Sends out[r] to every other rank r and returns what every rank sent here
// (out[me] included), in ascending rank order.
template <typename T>
std::vector<T> all_to_all(const mpi::Comm& comm, std::vector<std::vector<T>>& out) {
  const auto me = static_cast<std::size_t>(comm.rank());
  std::vector<std::vector<std::byte>> received(out.size());
  std::vector<mpi::Parcel> parcels;
  for (std::size_t r = 0; r < out.size(); ++r)
    if (r != me) parcels.push_back({static_cast<int>(r), out[r].data(), out[r].size(), nullptr, 0, &received[r]});
  comm.exchange(parcels, sizeof(T));
  std::vector<T> in;
  for (std::size_t r = 0; r < out.size(); ++r) {
    if (r == me) {
      in.insert(in.end(), out[r].begin(), out[r].end());
      continue;
    }
    const std::size_t n = received[r].size() / sizeof(T);
    if (n == 0) continue;  // memcpy from an empty message's null pointer is undefined, even of 0 bytes
    const std::size_t at = in.size();
    in.resize(at + n);
    std::memcpy(static_cast<void*>(in.data() + at), received[r].data(), n * sizeof(T));
  }
  for (auto& o : out) o.clear();
  return in;
}

}  // namespace

void RankLayout::clear() {
  graphs_ = {};
  bases_ = {};
  weights_ = {};
  remote_ = {};
  remote_entries_ = 0;
}

std::size_t RankLayout::memory() const {
  std::size_t n = 0;
  for (const Graph& graph : graphs_)
    for (const ShardLayer& layer : graph) n += layer.memory();
  for (const auto& b : bases_) n += b.capacity() * sizeof(double);
  for (const auto& w : weights_) n += w.capacity() * sizeof(w[0]);
  for (const RemoteLayer& layer : remote_) n += layer.bytes();
  return n;
}

bool RankLayout::assign(const mpi::Comm& comm, const std::vector<const Graph*>& graphs,
                        const std::vector<RemoteLayer>& remote, const std::vector<SlotKeys>& keys, int words,
                        int positions, const std::vector<const double*>& bases, const std::vector<const List*>& weights,
                        bool always) {
  clear();
  const auto R = static_cast<std::size_t>(comm.size()), me = static_cast<std::size_t>(comm.rank());
  const std::size_t S = graphs.size(), L = S ? graphs[0]->size() : 0;
  if (R < 2 || R > 256 || !std::has_single_bit(R) || L == 0 || S > 0xffff) return false;
  auto row = [&](std::size_t s, std::size_t i) { return keys[s].rows + std::size_t(words) * i; };

  // The statistics of the split over every rank's slots: this rank's, with
  // the work of its shared entries, then summed (counts, exact in any order,
  // so every rank sees the same numbers and makes the same choice).
  std::vector<std::vector<std::uint32_t>> work;
  SplitStats stats = split_stats(graphs, keys, words, 0.0, work);
  double shared = 0.0;  // entries that span two ranks now, each counted once
  for (std::size_t l = 0; l < L; ++l)
    for (const RemoteBlock& b : remote[l].blocks) {
      for (std::size_t e = 0; e < b.size(); ++e) ++work[b.shards[e]][b.slots[e]];
      if (b.counts) {
        stats.layer_cost[l] += static_cast<double>(b.size());
        shared += static_cast<double>(b.size());
      }
    }
  // Every slot also costs a rank its buffers (a coefficient, a state, a
  // weight), entries or none: one more unit of work each, so that the ranks'
  // memory evens out with their work.
  for (auto& w : work)
    for (std::uint32_t& x : w) ++x;
  add_work(stats, keys, positions, work);
  // A layer whose entries all span two ranks shows its generator as the keys
  // of a shared entry's two terms: the first of each block, swapped with the peer.
  {
    std::vector<std::vector<std::uint64_t>> ours(R), theirs(R);
    for (std::size_t l = 0; l < L; ++l)
      for (const RemoteBlock& b : remote[l].blocks) {
        const std::uint64_t* key = row(b.shards[0], b.slots[0]);
        ours[static_cast<std::size_t>(b.peer)].insert(ours[static_cast<std::size_t>(b.peer)].end(), key, key + words);
      }
    std::vector<mpi::Parcel> parcels;
    for (std::size_t p = 0; p < R; ++p)
      if (!ours[p].empty()) {
        theirs[p].resize(ours[p].size());
        parcels.push_back(
            {static_cast<int>(p), ours[p].data(), ours[p].size(), theirs[p].data(), theirs[p].size(), nullptr});
      }
    comm.exchange(parcels, sizeof(std::uint64_t));
    std::vector<std::size_t> at(R, 0);
    for (std::size_t l = 0; l < L; ++l)
      for (const RemoteBlock& b : remote[l].blocks) {
        const auto p = static_cast<std::size_t>(b.peer);
        for (int w = 0; w < words; ++w, ++at[p]) stats.flips[l * words + w] = ours[p][at[p]] ^ theirs[p][at[p]];
      }
  }
  std::vector<std::uint64_t> crossing_now(L, 0);  // whether a layer has shared entries on some rank
  for (std::size_t l = 0; l < L; ++l) crossing_now[l] = remote[l].empty() ? 0 : 1;
  comm.max(crossing_now.data(), L);
  comm.max(stats.flips.data(), stats.flips.size());  // a layer's generator, as any rank with an entry saw it
  comm.sum(stats.layer_cost.data(), L);
  comm.sum(stats.position_work.data(), stats.position_work.size());
  double totals[2] = {stats.total_work, shared};
  comm.sum(totals, 2);
  stats.total_work = totals[0];
  shared = totals[1];
  if (stats.total_work == 0.0) return false;
  const std::vector<double> entries = stats.layer_cost;  // rotating entries by layer
  for (double& cost : stats.layer_cost)
    if (cost > 0.0) cost += kCrossingCost;
  std::vector<int> candidates = Split::candidates(stats, kSharedPrice);
  if (candidates.empty()) return false;
  std::vector<double> pattern_work = Split::pattern_work(candidates, keys, words, work);
  work = {};
  comm.sum(pattern_work.data(), pattern_work.size());
  const Split split(stats, std::move(candidates), pattern_work, static_cast<int>(R), kSharedPrice);
  // Estimated replay times, in entries: the layout's (its largest rank's
  // share of the layers inside the ranks, its crossing layers at the price
  // of shared entries and of a round trip), and the shards' graph's (whose
  // every layer with shared entries crosses).
  double laid_out = 0.0, now = 0.0;
  for (std::size_t l = 0; l < L; ++l) {
    laid_out += split.crosses(l) ? kSharedPrice * entries[l] + kCrossingCost : split.uneven() * entries[l];
    now += entries[l] + (crossing_now[l] ? kCrossingCost : 0.0);
  }
  now += (kSharedPrice - 1.0) * shared;
  if (!always && (laid_out > kLargestShare * now || split.uneven() > kMostUneven)) return false;

  // Places: each rank numbers the slots it sends to rank n's shard s after
  // those of the ranks below it, in ascending slot order.
  std::vector<std::uint64_t> counts(R * R * S, 0);  // [from * R * S + to * S + shard]
  std::vector<std::vector<std::uint64_t>> place(S);
  for (std::size_t s = 0; s < S; ++s) {
    place[s].resize(keys[s].size);
    for (std::size_t i = 0; i < keys[s].size; ++i) {
      const auto n = static_cast<std::size_t>(split.block(row(s, i)));
      place[s][i] = n;  // the rank for now
      ++counts[(me * R + n) * S + s];
    }
  }
  comm.max(counts.data(), counts.size());  // each rank filled its own row
  std::vector<std::uint64_t> next(R * S, 0);
  for (std::size_t n = 0; n < R; ++n)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t r = 0; r < me; ++r) next[n * S + s] += counts[(r * R + n) * S + s];
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = 0; i < keys[s].size; ++i) {
      const std::size_t n = place[s][i];
      place[s][i] = Place::make(n, s, next[n * S + s]++);
    }
  // Every rank's shards, so that all ranks agree where one would overflow an index.
  std::vector<std::size_t> sizes(R * S, 0);
  for (std::size_t n = 0; n < R; ++n)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t r = 0; r < R; ++r) sizes[n * S + s] += counts[(r * R + n) * S + s];
  if (*std::max_element(sizes.begin(), sizes.end()) > 0xffffffffu) return false;

  // Each layer: the places of the shared entries' other terms, then every
  // entry to the ranks of its terms, once (a shared entry from its lower rank).
  graphs_.assign(S, Graph(L));
  remote_.assign(L, RemoteLayer{});
  std::vector<std::uint8_t> width(S);
  for (std::size_t s = 0; s < S; ++s) width[s] = slot_width(sizes[me * S + s]);
  std::vector<std::vector<Record>> out(R);
  std::vector<std::uint64_t> mine, theirs;
  for (std::size_t l = 0; l < L; ++l) {
    const RemoteLayer& shared_layer = remote[l];
    mine.resize(shared_layer.entries);
    theirs.resize(shared_layer.entries);
    std::vector<mpi::Parcel> parcels;
    for (const RemoteBlock& b : shared_layer.blocks) {
      for (std::size_t e = 0; e < b.size(); ++e) mine[b.start + e] = place[b.shards[e]][b.slots[e]];
      parcels.push_back({b.peer, mine.data() + b.start, b.size(), theirs.data() + b.start, b.size(), nullptr});
    }
    comm.exchange(parcels, sizeof(std::uint64_t));
    auto send = [&](const Record& r) {
      out[Place::rank(r.x)].push_back(r);
      if (r.code != 0 && r.code != kDarkCos && Place::rank(r.y) != Place::rank(r.x)) out[Place::rank(r.y)].push_back(r);
    };
    for (std::size_t s = 0; s < S; ++s) {
      const DecodedLayer d = decode((*graphs[s])[l]);
      for (const std::uint32_t a : d.cos) send({place[s][a], 0, 0});
      for (const std::uint32_t a : d.dark) send({place[s][a], 0, kDarkCos});
      for (const DecodedEntry& e : d.pairs) send({place[s][e.a], place[e.other][e.b], e.sign});
      for (const DecodedEntry& e : d.halves) send({place[s][e.a], place[e.other][e.b], 2 * e.sign});
    }
    for (const RemoteBlock& b : shared_layer.blocks) {
      if (!b.counts) continue;
      for (std::size_t e = 0; e < b.size(); ++e) {
        const int code = b.codes[e], sign = code < 0 ? -1 : 1;
        const std::uint64_t x = mine[b.start + e], y = theirs[b.start + e];
        // A shared entry as remote.h has it, from this rank's side.
        if (code == 1 || code == -1)
          send({x, y, sign});
        else if (code == 2 || code == -2)
          send({x, y, 2 * sign});
        else
          send({y, x, 2 * sign});  // the peer's term rotates into this one
      }
    }
    const std::vector<Record> in = all_to_all(comm, out);

    // This rank's part of the layer: its entries by shard, and by peer those
    // it shares, each rank's side in the order of (x, y).
    std::vector<DecodedLayer> decoded(S);
    std::vector<std::vector<Record>> spanning(R);
    for (const Record& r : in) {
      if (r.code == 0 || r.code == kDarkCos) {
        (r.code == 0 ? decoded[Place::shard(r.x)].cos : decoded[Place::shard(r.x)].dark).push_back(Place::index(r.x));
      } else if (Place::rank(r.x) == me && Place::rank(r.y) == me) {
        const DecodedEntry e{Place::index(r.x), Place::shard(r.y), Place::index(r.y), r.code < 0 ? -1 : 1};
        (r.code == 1 || r.code == -1 ? decoded[Place::shard(r.x)].pairs : decoded[Place::shard(r.x)].halves)
            .push_back(e);
      } else {
        spanning[Place::rank(r.x) == me ? Place::rank(r.y) : Place::rank(r.x)].push_back(r);
      }
    }
    // Records came in by sending rank: recode() sorts each section's runs.
    recoding::recode(decoded, l, graphs_, width, [](std::size_t s, std::uint32_t i) {
      return std::pair<std::uint32_t, std::uint32_t>{static_cast<std::uint32_t>(s), i};
    });
    RemoteLayer& layer = remote_[l];
    for (std::size_t p = 0; p < R; ++p) {
      std::vector<Record>& list = spanning[p];
      if (list.empty()) continue;
      std::sort(list.begin(), list.end(),
                [](const Record& a, const Record& b) { return a.x != b.x ? a.x < b.x : a.y < b.y; });
      RemoteBlock block;
      block.peer = static_cast<int>(p);
      block.counts = me < p;
      block.start = layer.entries;
      for (const Record& r : list) {
        const bool x_here = Place::rank(r.x) == me;
        const std::uint64_t here = x_here ? r.x : r.y;
        const int sign = r.code < 0 ? -1 : 1;
        const bool pair = r.code == 1 || r.code == -1;
        // Pair: x applies s, y applies -s; half: x rotates (2 s), y receives (3 s).
        const int code = pair ? (x_here ? sign : -sign) : (x_here ? 2 : 3) * sign;
        block.shards.push_back(Place::shard(here));
        block.slots.push_back(Place::index(here));
        block.codes.push_back(static_cast<std::int8_t>(code));
      }
      layer.entries += block.size();
      layer.blocks.push_back(std::move(block));
    }
    layer.offset = remote_entries_;
    remote_entries_ += layer.entries;
  }

  // Starting coefficients and weights to the slots' new places.
  std::vector<std::vector<Value>> values(R);
  auto deliver = [&](auto&& each_value, auto&& take) {
    for (std::size_t s = 0; s < S; ++s)
      each_value(s, [&](std::size_t i, double v) { values[Place::rank(place[s][i])].push_back({place[s][i], v}); });
    for (const Value& v : all_to_all(comm, values)) take(v);
  };
  bases_.assign(S, {});
  for (std::size_t s = 0; s < S; ++s) bases_[s].assign(sizes[me * S + s], 0.0);
  deliver(
      [&](std::size_t s, auto&& put) {
        for (std::size_t i = 0; i < keys[s].size; ++i)
          if (bases[s][i] != 0.0) put(i, bases[s][i]);
      },
      [&](const Value& v) { bases_[Place::shard(v.place)][Place::index(v.place)] = v.value; });
  weights_.assign(S, {});
  deliver(
      [&](std::size_t s, auto&& put) {
        for (const auto& [i, w] : *weights[s]) put(i, w);
      },
      [&](const Value& v) { weights_[Place::shard(v.place)].emplace_back(Place::index(v.place), v.value); });
  for (List& w : weights_) std::sort(w.begin(), w.end());
  return true;
}

}  // namespace monoprop
