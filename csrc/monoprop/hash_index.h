// The hash index of a shard: monomial hash -> slot, in cache-line groups.
//
// A group is one 64-byte line holding up to 12 entries: a one-byte tag (eight
// bits of the hash, never 0) and the slot. A key's home group is chosen by the
// high bits of its hash; a full group spills into the next (linear probing by
// groups). Entries are never removed, so a group that is not full ends every
// probe: a lookup reads one line in the common case, and only a tag match
// (one in 255 per entry) costs a look at a key. The table keeps at most 7/8 of
// its entries in use and grows by half when it would pass that. (Doubling
// rehashes less often, about 10% faster on large propagations, but its
// emptier tables cost about 8% more peak memory.)
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "column.h"

namespace monoprop {

template <typename Index>
class HashIndex {
 public:
  static constexpr int kGroup = 12;
  // One cache line for 32-bit slots (a mapped table is page-aligned).
  struct Group {
    std::uint8_t tags[kGroup];
    std::uint8_t used;  // entries 0 .. used-1 are taken
    std::uint8_t spare[3];
    Index slots[kGroup];
  };

  HashIndex() { groups_.resize(1, Group{}); }
  // Bytes an empty index writes beside the object (its first group).
  static constexpr std::size_t kEmptyBytes = sizeof(Group);

  std::size_t groups() const { return groups_.size(); }
  std::size_t bytes() const { return groups_.bytes(); }
  const Group* data() const { return groups_.data(); }

  static std::uint8_t tag_of(std::uint64_t h) {
    const auto t = static_cast<std::uint8_t>(h);
    return t ? t : 1;
  }
  std::size_t home(std::uint64_t h) const {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(h) * groups_.size()) >> 64);
  }
  void prefetch(std::uint64_t h) const { __builtin_prefetch(&groups_[home(h)]); }

  // Calls match(slot) for each entry whose tag matches h, in probe order,
  // until it returns true; returns that slot, or `none` when the probe ends.
  template <typename Match>
  Index probe(std::uint64_t h, Index none, Match&& match) const {
    const std::uint8_t tag = tag_of(h);
    for (std::size_t g = home(h);; g = g + 1 == groups_.size() ? 0 : g + 1) {
      const Group& group = groups_[g];
      for (unsigned hits = matches(group, tag); hits; hits &= hits - 1) {
        const Index slot = group.slots[std::countr_zero(hits)];
        if (match(slot)) return slot;
      }
      if (group.used < kGroup) return none;
    }
  }
  // The first slot in h's home group whose tag matches, or `none`: the
  // candidate a pipelined lookup fetches the key of (see Store::candidate).
  // A full home without one sends the probe on to the next group, which is
  // asked for now (at 7/8 load up to a quarter of the groups are full).
  Index first_candidate(std::uint64_t h, Index none) const {
    const std::size_t g = home(h);
    const Group& group = groups_[g];
    const unsigned hits = matches(group, tag_of(h));
    if (hits) return group.slots[std::countr_zero(hits)];
    if (group.used == kGroup) __builtin_prefetch(&groups_[g + 1 == groups_.size() ? 0 : g + 1]);
    return none;
  }

  bool home_full(std::uint64_t h) const { return groups_[home(h)].used == kGroup; }

  // Bit e set for each used entry e of the group whose tag is `tag`: the
  // twelve tags compared at once, as the bytes of two words.
  static unsigned matches(const Group& group, std::uint8_t tag) {
    static_assert(offsetof(Group, tags) == 0 && offsetof(Group, slots) >= 16, "a group starts with 16 tag bytes");
    const auto* bytes = reinterpret_cast<const unsigned char*>(&group);
    std::uint64_t lo, hi;
    std::memcpy(&lo, bytes, 8);
    std::memcpy(&hi, bytes + 8, 8);  // tags 8..11, then `used` and spare bytes
    const std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    auto zero_bytes = [&](std::uint64_t x) {  // the high bit of each byte of x that is 0
      return (x - ones) & ~x & highs;
    };
    const std::uint64_t spread = ones * tag;
    std::uint64_t z = zero_bytes(lo ^ spread), y = zero_bytes(hi ^ spread) & 0x80808080ULL;
    // Gather the high bits (one per byte) into bits 0..7 and 8..11.
    auto gather = [](std::uint64_t bits) { return static_cast<unsigned>(((bits >> 7) * 0x0102040810204080ULL) >> 56); };
    const unsigned found = gather(z) | (gather(y) << 8);
    return found & ((1u << group.used) - 1);
  }

  // Whether `entries` entries fit without growing.
  bool fits(std::size_t entries) const { return entries * 8 <= groups_.size() * kGroup * 7; }
  // Group count for `entries` entries after growth.
  std::size_t groups_for(std::size_t entries) const {
    std::size_t g = groups_.size();
    while (entries * 8 > g * kGroup * 7) g += g / 2 + 1;
    return g;
  }

  // Rebuilds with `groups` groups, hash_of(slot) for slots 0 .. n-1.
  template <typename HashOf>
  void rebuild(std::size_t groups, std::size_t n, HashOf&& hash_of) {
    groups_.release();
    groups_.resize(groups, Group{});
    place_all(0, n, hash_of);
  }

  // Places slots first .. last-1, hash_of(slot) each, asking for the home
  // groups a few slots ahead so that their cache misses overlap.
  template <typename HashOf>
  void place_all(std::size_t first, std::size_t last, HashOf&& hash_of) {
    constexpr std::size_t ahead = 16;
    std::uint64_t hashes[ahead];
    for (std::size_t s = first; s < last + ahead; ++s) {
      if (s >= first + ahead) place(static_cast<Index>(s - ahead), hashes[(s - ahead) % ahead]);
      if (s < last) {
        hashes[s % ahead] = hash_of(s);
        prefetch(hashes[s % ahead]);
      }
    }
  }

  void place(Index slot, std::uint64_t h) {
    for (std::size_t g = home(h);; g = g + 1 == groups_.size() ? 0 : g + 1) {
      Group& group = groups_[g];
      if (group.used == kGroup) continue;
      group.tags[group.used] = tag_of(h);
      group.slots[group.used++] = slot;
      return;
    }
  }

 private:
  Column<Group> groups_;
};

}  // namespace monoprop
