// The propagation graph: what each generator layer did to the slots of every
// shard, so that it can be replayed at any parameter vector with no hashing
// and no algebra.
//
// A layer with generator G, parameter index p and frequency f acts at angle
// phi = f * theta[p] (f = 2h for a Heisenberg layer exp(+i theta h G), -2h in
// the Schrodinger picture) on the coefficients of the terms that anticommute
// with G; every term that commutes with G is untouched. Each such term is in
// exactly one entry of the layer:
//   cos (a):         a is only scaled: c_a <- cos c_a
//   pair (a, b, s):  a and b rotate into each other
//                      c_a <- cos c_a - s sin c_b,  c_b <- cos c_b + s sin c_a
//   birth (a, b, s): a pair whose b was born in the layer (b starts at 0)
//   half (a, b, s):  only a rotates; b receives its sine branch
//                      c_b <- c_b + s sin c_a,      c_a <- cos c_a
//                    (b is too long to rotate: only_rotate_len_k)
// a is a slot of the shard the entry is filed under; b is a slot of the
// shard its part names (the same shard or another one of the rank). Since
// every slot appears at most once per layer, the entries are independent and
// the threads of a team replay their shards' parts of a layer at once.
//
// Layout. A shard's part of a layer is one byte string holding sections of
// entries in ascending a. Each entry starts with a variable-length integer
// (LEB128, 7 bits a byte): cos entries hold the gap to the previous a; the
// others hold (gap << 1) | (s < 0). A pair or half then holds b in `width`
// little-endian bytes; a birth's b is implicit: the k-th birth of a section
// is slot base + k of the part's shard, which appended its births in that
// order. Example: cos entries at slots 3, 5, 300 are the bytes 03 02 a7 02.
// Births cost one or two bytes an entry, cos entries about one, pairs three
// to six: a graph entry costs two to three bytes where a record of slots
// would take nine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace monoprop {

// A layer as the circuit gave it, the same on every shard.
struct LayerInfo {
  std::int32_t parameter = 0;
  std::int32_t gate = 0;  // authoring gate, for per-gate parameter mappings
  double frequency = 0.0;
};

// `count` entries at bytes [offset, offset + length) of the part's string.
struct Section {
  std::uint32_t count = 0;
  std::uint32_t offset = 0, length = 0;
  std::uint32_t base = 0;  // births: the slot of the first one
  std::uint8_t width = 0;  // pairs and halves: bytes of b
};

// The entries whose b lives in one shard.
struct Part {
  std::uint32_t shard = 0;
  Section births, pairs, halves;
};

// One shard's part of a layer.
struct ShardLayer {
  Section cos;
  std::vector<Part> parts;  // by ascending owner shard
  std::vector<std::uint8_t> bytes;

  std::size_t n_cos() const { return cos.count; }
  std::size_t n_rotations() const {
    std::size_t n = 0;
    for (const Part& p : parts) n += p.births.count + p.pairs.count + p.halves.count;
    return n;
  }
  std::size_t memory() const { return sizeof(ShardLayer) + bytes.capacity() + parts.capacity() * sizeof(Part); }
};

using Graph = std::vector<ShardLayer>;  // one shard's layers, in application order

// Bytes of an explicit slot below `limit`.
inline std::uint8_t slot_width(std::size_t limit) {
  std::uint8_t w = 1;
  while (w < 4 && limit > (std::size_t{1} << (8 * w))) ++w;
  return w;
}

// Appends the entries of one section, in ascending a.
class SectionWriter {
 public:
  SectionWriter(std::vector<std::uint8_t>& bytes, Section& section, std::uint8_t width = 0)
      : bytes_(bytes), section_(section) {
    section_ = Section{};
    section_.offset = static_cast<std::uint32_t>(bytes.size());
    section_.width = width;
  }
  ~SectionWriter() { section_.length = static_cast<std::uint32_t>(bytes_.size()) - section_.offset; }
  SectionWriter(const SectionWriter&) = delete;
  SectionWriter& operator=(const SectionWriter&) = delete;

  void cos(std::uint32_t a) { varint(gap(a)); }
  void birth(std::uint32_t a, int sign) { varint(std::uint64_t{gap(a)} << 1 | (sign < 0)); }
  void pair(std::uint32_t a, std::uint32_t b, int sign) {
    birth(a, sign);
    for (int k = 0; k < section_.width; ++k) bytes_.push_back(static_cast<std::uint8_t>(b >> (8 * k)));
  }

 private:
  std::uint32_t gap(std::uint32_t a) {
    const std::uint32_t g = a - previous_;
    previous_ = a;
    ++section_.count;
    return g;
  }
  void varint(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) bytes_.push_back(static_cast<std::uint8_t>(v | 0x80));
    bytes_.push_back(static_cast<std::uint8_t>(v));
  }

  std::vector<std::uint8_t>& bytes_;
  Section& section_;
  std::uint32_t previous_ = 0;
};

// Walks one section's entries in order.
class SectionReader {
 public:
  SectionReader(const ShardLayer& layer, const Section& section)
      : p_(layer.bytes.data() + section.offset), width_(section.width) {}

  std::uint32_t cos() { return previous_ += static_cast<std::uint32_t>(varint()); }
  // a, and s through `negative`.
  std::uint32_t next(bool& negative) {
    const std::uint64_t v = varint();
    negative = v & 1;
    return previous_ += static_cast<std::uint32_t>(v >> 1);
  }
  std::uint32_t partner() {
    std::uint32_t b = p_[0];
    for (int k = 1; k < width_; ++k) b |= std::uint32_t{p_[k]} << (8 * k);
    p_ += width_;
    return b;
  }

 private:
  std::uint64_t varint() {
    std::uint64_t v = *p_++;
    if (v < 0x80) return v;
    v &= 0x7f;
    for (int shift = 7;; shift += 7) {
      const std::uint64_t byte = *p_++;
      v |= (byte & 0x7f) << shift;
      if (byte < 0x80) return v;
    }
  }

  const std::uint8_t* p_;
  std::uint8_t width_;
  std::uint32_t previous_ = 0;
};

// A layer's entries spelled out (tests, the raw graph() accessor): b of a
// birth is explicit here; `other` is the shard of b.
struct DecodedEntry {
  std::uint32_t a, other, b;
  int sign;
};
struct DecodedLayer {
  std::vector<std::uint32_t> cos;
  std::vector<DecodedEntry> pairs, halves;  // births are pairs
};
DecodedLayer decode(const ShardLayer& layer);

}  // namespace monoprop
