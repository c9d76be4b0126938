// One shard's terms, addressed by a dense slot index.
//
// Three views of the same keys: rows (the W words of term i at W*i), which a
// lookup compares and a birth copies in one cache line; bit columns
// (bit_columns.h), which a gate scans; and the hash index (hash_index.h) from
// monomial to slot. Coefficients live outside the store, in arrays indexed by
// slot, so that several coefficient vectors (the operand a replay starts
// from, a build's working values, replay buffers) share one set of keys.
//
// Terms are only ever appended (a rotation never removes a term: the cos
// branch is always kept), so slots are stable for the life of the store and
// the propagation graph can refer to them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "bit_columns.h"
#include "column.h"
#include "errors.h"
#include "hash_index.h"
#include "monomial.h"

namespace monoprop {

template <int W, typename Index = std::uint32_t>
class Store {
 public:
  using Key = Monomial<W>;
  static constexpr Index kEmpty = std::numeric_limits<Index>::max();
  // The empty marker takes the largest index, so a shard holds one fewer.
  static constexpr std::size_t kCeiling = static_cast<std::size_t>(kEmpty);

  // `slots` key slots (2n); `parity`: keep a column of length parities.
  Store(int slots, bool parity) : bits_(slots, parity) {}
  // Bytes that an empty store writes beside the object, at least.
  static std::size_t empty_bytes(int slots, bool parity) {
    return BitColumns::empty_bytes(slots, parity) + HashIndex<Index>::kEmptyBytes;
  }

  std::size_t size() const { return size_; }
  const std::uint64_t* row(std::size_t slot) const { return rows_.data() + W * slot; }
  Key key(std::size_t slot) const {
    Key k;
    for (int w = 0; w < W; ++w) k.words[w] = rows_[W * slot + w];
    return k;
  }
  int length(std::size_t slot) const {
    int n = 0;
    for (int w = 0; w < W; ++w) n += std::popcount(rows_[W * slot + w]);
    return n;
  }
  const BitColumns& bits() const { return bits_; }

  Index find(const Key& k, std::uint64_t h) const {
    return index_.probe(h, kEmpty, [&](Index s) { return matches(s, k); });
  }
  Index find(const Key& k) const { return find(k, k.hash()); }

  // A lookup in stages, for pipelines that overlap their cache misses:
  // prefetch(h) asks for the home group; candidate(h) reads it and gives the
  // first slot whose tag matches (kEmpty if none), asking for the next group
  // when a full home has none; prefetch_row asks for the candidate's key;
  // confirm(k, h, candidate) finishes (a full probe when the home group
  // overflowed, or rarely when the candidate was another key).
  void prefetch(std::uint64_t h) const { index_.prefetch(h); }
  Index candidate(std::uint64_t h) const { return index_.first_candidate(h, kEmpty); }
  void prefetch_row(Index slot) const {
    if (slot != kEmpty) __builtin_prefetch(row(slot));
  }
  Index confirm(const Key& k, std::uint64_t h, Index candidate) const {
    if (candidate != kEmpty && matches(candidate, k)) return candidate;
    if (candidate == kEmpty && !index_.home_full(h)) return kEmpty;
    return find(k, h);
  }

  // Refuses, before changing anything, when `extra` more terms would not fit
  // the index type; otherwise makes room for them (the index may be rebuilt).
  void reserve_for(std::size_t extra) {
    if (size_ + extra > kCeiling)
      throw ShardCeilingError("a shard addresses at most " + std::to_string(kCeiling) +
                              " terms (its index ceiling); it holds " + std::to_string(size_) +
                              " and this step would add up to " + std::to_string(extra) +
                              ". Run more shards (monoprop_NUM_THREADS or MPI ranks) or raise lower_atol.");
    const std::size_t need = size_ + extra;
    rows_.reserve(W * need);
    bits_.reserve(need);
    if (!index_.fits(need)) rebuild_index(index_.groups_for(need));
  }
  // Bytes that reserve_for(extra) and the appends would add (for the memory budget).
  std::size_t growth_bytes(std::size_t extra) const {
    const std::size_t need = size_ + extra;
    std::size_t bytes = extra * (W * 8 + static_cast<std::size_t>(bits_.slots() + 8) / 8);
    if (!index_.fits(need)) bytes += index_.groups_for(need) * sizeof(typename HashIndex<Index>::Group);
    return bytes;
  }

  // Appends a key known to be absent; reserve_for must have made room.
  Index append(const Key& k, std::uint64_t h) {
    const Index slot = append_unindexed(k);
    bits_.template append<W>(k.words.data());
    index_.place(slot, h);
    return slot;
  }
  Index append(const Key& k) { return append(k, k.hash()); }
  // Appends a key's row only; index_appended() completes it with the others
  // appended since.
  Index append_unindexed(const Key& k) {
    const auto slot = static_cast<Index>(size_);
    rows_.append(k.words.data(), W);
    ++size_;
    return slot;
  }
  // Completes the slots from .. size()-1 appended with append_unindexed: their
  // bit columns, all at once, and their index entries; hash_of(slot) gives each hash.
  template <typename HashOf>
  void index_appended(std::size_t from, HashOf&& hash_of) {
    bits_.template append<W>(row(from), size_ - from);
    index_.place_all(from, size_, hash_of);
  }

  // Drops every slot >= n (undo of a refused operation).
  void truncate(std::size_t n) {
    if (n >= size_) return;
    rows_.resize(W * n);
    bits_.truncate(n);
    size_ = n;
    rebuild_index(index_.groups());
  }

  const HashIndex<Index>& index() const { return index_; }
  std::size_t key_bytes() const { return rows_.bytes() + bits_.bytes(); }
  std::size_t index_bytes() const { return index_.bytes(); }

 private:
  bool matches(Index slot, const Key& k) const {
    const std::uint64_t* r = row(slot);
    std::uint64_t diff = 0;
    for (int w = 0; w < W; ++w) diff |= r[w] ^ k.words[w];
    return diff == 0;
  }
  void rebuild_index(std::size_t groups) {
    index_.rebuild(groups, size_, [&](std::size_t s) { return key(s).hash(); });
  }

  Column<std::uint64_t> rows_;
  BitColumns bits_;
  HashIndex<Index> index_;
  std::size_t size_ = 0;
};

// Looks up n keys in stages, `ahead` keys apart, so that the cache misses of
// several lookups overlap: key(i) gives key i (by value or reference), and
// found(i, slot, hash) receives its slot or Keys::kEmpty, in order, with the
// key's hash (computed once here).
template <typename Keys, typename KeyAt, typename Found>
void lookup_all(const Keys& keys, std::size_t n, KeyAt&& key, Found&& found) {
  constexpr std::size_t ahead = 32, ring = 2 * ahead;
  using Index = decltype(keys.candidate(0));
  Index candidates[ring];
  std::uint64_t hashes[ring];
  for (std::size_t i = 0; i < n + ring; ++i) {  // the oldest stage first: it frees its place in the rings
    if (i >= ring) {
      const std::size_t j = i - ring;
      found(j, keys.confirm(key(j), hashes[j % ring], candidates[j % ring]), hashes[j % ring]);
    }
    if (i >= ahead && i - ahead < n) {
      const std::size_t j = i - ahead;
      const Index c = keys.candidate(hashes[j % ring]);
      candidates[j % ring] = c;
      keys.prefetch_row(c);
    }
    if (i < n) keys.prefetch(hashes[i % ring] = key(i).hash());
  }
}

}  // namespace monoprop
