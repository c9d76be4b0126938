// One shard's terms, addressed by a dense slot index, with an open-addressing
// hash index from monomial to slot.
//
// Keys are stored by column: word k of every term lies in one array, beside
// an array of term lengths. A gate scan reads only the words its generator
// touches (one word of eight bytes for a few-qubit gate) instead of whole
// keys: every gate streams the whole store, so bytes per term matter.
//
// The index stores, per entry, the slot and 32 bits of the key's hash, so a
// probe rarely has to read a key that does not match.
//
// Terms are only ever appended (a rotation never removes a term: the cos
// branch is always kept), so slots are stable for the life of the store and
// the propagation graph can refer to them. Coefficients live outside the
// store, in vectors indexed by slot, so that several coefficient vectors
// (base operator, seed work vector, replay) can share one set of keys.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "errors.h"
#include "monomial.h"

namespace monoprop {

template <int W, typename Index = std::uint32_t>
class Store {
 public:
  using Key = Monomial<W>;
  static constexpr Index kEmpty = std::numeric_limits<Index>::max();
  // The empty marker takes the largest index, so a shard holds one fewer.
  static constexpr std::size_t kCeiling = static_cast<std::size_t>(kEmpty);

  Store() { rehash(16); }

  std::size_t size() const { return lengths_.size(); }
  Key key(std::size_t slot) const {
    Key k;
    for (int w = 0; w < W; ++w) k.words[w] = columns_[w][slot];
    return k;
  }
  int length(std::size_t slot) const { return lengths_[slot]; }
  const std::uint64_t* column(int w) const { return columns_[w].data(); }
  const std::uint16_t* lengths() const { return lengths_.data(); }

  // Slot of `k` (whose hash is `h`), or kEmpty.
  Index find(const Key& k, std::uint64_t h) const {
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t pos = h & mask_;; pos = (pos + 1) & mask_) {
      const Entry& e = table_[pos];
      if (e.slot == kEmpty) return kEmpty;
      // The tag settles almost every mismatch without touching the key array.
      if (e.tag == tag && matches(e.slot, k)) return e.slot;
    }
  }
  Index find(const Key& k) const { return find(k, k.hash()); }

  // Lookup in two halves, for pipelines that overlap their cache misses:
  // `candidate` reads only the index (whose line a prefetch brought in) and
  // returns the first slot whose tag matches, or kEmpty (surely absent);
  // `prefetch_key` then asks for that slot's key, and `confirm` finishes.
  Index candidate(std::uint64_t h) const {
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t pos = h & mask_;; pos = (pos + 1) & mask_) {
      const Entry& e = table_[pos];
      if (e.slot == kEmpty || e.tag == tag) return e.slot;
    }
  }
  void prefetch_key(Index slot) const {
    if (slot == kEmpty) return;
    for (int w = 0; w < std::min(W, 4); ++w) __builtin_prefetch(&columns_[w][slot]);
  }
  // find(k, h), given candidate(h): a tag that matched another key (rare) falls
  // back to the full probe.
  Index confirm(const Key& k, std::uint64_t h, Index candidate) const {
    if (candidate == kEmpty || matches(candidate, k)) return candidate;
    return find(k, h);
  }

  // Hints the cache to load the table line a lookup of hash `h` starts at.
  void prefetch(std::uint64_t h) const { __builtin_prefetch(&table_[h & mask_]); }

  // Refuses, before changing anything, when `extra` more terms would not fit.
  void reserve_for(std::size_t extra) {
    if (size() + extra > kCeiling)
      throw ShardCeilingError("a shard addresses at most " + std::to_string(kCeiling) +
                              " terms (its index ceiling); it holds " + std::to_string(size()) +
                              " and this step would add up to " + std::to_string(extra) +
                              ". Run more shards (monoprop_NUM_THREADS or MPI ranks) or raise lower_atol.");
    const std::size_t need = size() + extra;
    if (need * 2 > table_.size()) rehash(grow_to(need * 2));
    // Geometric growth: a layer adds a few terms at a time.
    if (need > lengths_.capacity()) {
      const std::size_t capacity = std::max(need, lengths_.capacity() + lengths_.capacity() / 2);
      for (auto& column : columns_) column.reserve(capacity);
      lengths_.reserve(capacity);
    }
  }

  // Appends a key known to be absent; reserve_for must have made room.
  Index append(const Key& k, std::uint64_t h) {
    const auto slot = static_cast<Index>(size());
    for (int w = 0; w < W; ++w) columns_[w].push_back(k.words[w]);
    lengths_.push_back(static_cast<std::uint16_t>(k.length()));
    place(slot, h);
    return slot;
  }
  Index append(const Key& k) { return append(k, k.hash()); }

  // Drops every slot >= n (undo of a failed operation).
  void truncate(std::size_t n) {
    if (n >= size()) return;
    for (auto& column : columns_) column.resize(n);
    lengths_.resize(n);
    rehash(table_.size());
  }

  // The raw index: `capacity` entries of {tag, slot}, slot kEmpty when free.
  const void* table_data() const { return table_.data(); }
  std::size_t table_capacity() const { return table_.size(); }

  std::size_t index_bytes() const { return table_.capacity() * sizeof(Entry); }
  std::size_t key_bytes() const { return lengths_.capacity() * (sizeof(Key) + sizeof(std::uint16_t)); }

 private:
  struct Entry {
    std::uint32_t tag;  // high half of the key's hash
    Index slot;
  };

  bool matches(Index slot, const Key& k) const {
    std::uint64_t diff = 0;
    for (int w = 0; w < W; ++w) diff |= columns_[w][slot] ^ k.words[w];
    return diff == 0;
  }
  static std::size_t grow_to(std::size_t n) {
    std::size_t c = 16;
    while (c < n) c <<= 1;
    return c;
  }
  void place(Index slot, std::uint64_t h) {
    std::size_t pos = h & mask_;
    while (table_[pos].slot != kEmpty) pos = (pos + 1) & mask_;
    table_[pos] = {static_cast<std::uint32_t>(h >> 32), slot};
  }
  void rehash(std::size_t capacity) {
    table_.assign(capacity, Entry{0, kEmpty});
    mask_ = capacity - 1;
    for (std::size_t s = 0; s < size(); ++s) place(static_cast<Index>(s), key(s).hash());
  }

  std::array<std::vector<std::uint64_t>, W> columns_;
  std::vector<std::uint16_t> lengths_;  // set slots per term
  std::vector<Entry> table_;
  std::size_t mask_ = 0;
};

}  // namespace monoprop
