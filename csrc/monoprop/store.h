// One shard's terms: keys in a flat array, addressed by a dense slot index,
// with an open-addressing hash index from monomial to slot.
//
// Terms are only ever appended (a rotation never removes a term: the cos
// branch is always kept), so slots are stable for the life of the store and
// the propagation graph can refer to them. Coefficients live outside the
// store, in vectors indexed by slot, so that several coefficient vectors
// (base operator, seed work vector, replay) can share one set of keys.
#pragma once

#include <algorithm>
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

  std::size_t size() const { return keys_.size(); }
  const Key& key(std::size_t slot) const { return keys_[slot]; }
  const std::vector<Key>& keys() const { return keys_; }

  // Slot of `k`, or kEmpty.
  Index find(const Key& k) const {
    std::size_t pos = k.hash() & mask_;
    while (true) {
      const Index s = table_[pos];
      if (s == kEmpty || keys_[s] == k) return s;
      pos = (pos + 1) & mask_;
    }
  }

  // Refuses, before changing anything, when `extra` more terms would not fit.
  void reserve_for(std::size_t extra) {
    if (keys_.size() + extra > kCeiling)
      throw ShardCeilingError("a shard addresses at most " + std::to_string(kCeiling) +
                              " terms (its index ceiling); it holds " + std::to_string(keys_.size()) +
                              " and this step would add up to " + std::to_string(extra) +
                              ". Run more shards (monoprop_NUM_THREADS or MPI ranks) or raise lower_atol.");
    const std::size_t need = keys_.size() + extra;
    if (need * 2 > table_.size()) rehash(grow_to(need * 2));
    // Geometric growth: a layer adds a few terms at a time.
    if (need > keys_.capacity()) keys_.reserve(std::max(need, keys_.capacity() + keys_.capacity() / 2));
  }

  // Appends a key known to be absent; reserve_for must have made room.
  Index append(const Key& k) {
    const auto slot = static_cast<Index>(keys_.size());
    keys_.push_back(k);
    std::size_t pos = k.hash() & mask_;
    while (table_[pos] != kEmpty) pos = (pos + 1) & mask_;
    table_[pos] = slot;
    return slot;
  }

  // Drops every slot >= n (undo of a failed operation).
  void truncate(std::size_t n) {
    if (n >= keys_.size()) return;
    keys_.resize(n);
    rehash(table_.size());
  }

  std::size_t index_bytes() const { return table_.capacity() * sizeof(Index); }
  std::size_t key_bytes() const { return keys_.capacity() * sizeof(Key); }

 private:
  static std::size_t grow_to(std::size_t n) {
    std::size_t c = 16;
    while (c < n) c <<= 1;
    return c;
  }
  void rehash(std::size_t capacity) {
    table_.assign(capacity, kEmpty);
    mask_ = capacity - 1;
    for (std::size_t s = 0; s < keys_.size(); ++s) {
      std::size_t pos = keys_[s].hash() & mask_;
      while (table_[pos] != kEmpty) pos = (pos + 1) & mask_;
      table_[pos] = static_cast<Index>(s);
    }
  }

  std::vector<Key> keys_;
  std::vector<Index> table_;
  std::size_t mask_ = 0;
};

}  // namespace monoprop
