// The propagation graph: what each generator layer did to the slots of every
// shard, so that it can be replayed at any parameter vector with no hashing
// and no algebra.
//
// A layer with generator G, parameter index p and frequency f acts at angle
// phi = f * theta[p] (f = 2h for a Heisenberg layer exp(+i theta h G), -2h in
// the Schrodinger picture) on the coefficients of the terms that anticommute
// with G; every term that commutes with G is untouched. Each such term is in
// exactly one entry of the layer:
//   cos (a):         a is only scaled: c_a <- cos c_a. In a rotation its
//                    sine branch is dropped, which truncation_error counts
//                    (a noise scaling drops nothing; in a Transfer, cos = 1:
//                    a keeps c_a and its transfer sin c_a is dropped); a
//                    dark cos entry's branch cannot reach the end of the
//                    propagation (reach.h) and is not counted
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
// entries in ascending a. A section is a stream of variable-length integers
// (LEB128, 7 bits a byte), one an entry: cos entries hold the gap to the
// previous a; the others hold (gap << 1) | (s < 0). The cos section holds
// its dark entries last, a second ascending run whose first gap wraps
// around (a 32-bit difference), and counts them in its `base`. A pair or half section
// then holds the b of every entry in a second stream, `width` little-endian
// bytes each, so that a replay can ask for the partner of an entry a few
// entries ahead without decoding up to it. A birth's b is implicit: the k-th
// birth of a section is slot base + k of the part's shard, which appended its
// births in that order. Example: cos entries at slots 3, 5, 300 are the bytes
// 03 02 a7 02. Births cost one or two bytes an entry, cos entries about one,
// pairs three to six: a graph entry costs two to three bytes where a record of
// slots would take nine. Every byte string ends in kPadding zero bytes, so
// that a partner is read with one four-byte load whatever its width.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "column.h"
#include "noise.h"

namespace monoprop {

// A layer as the circuit gave it, the same on every shard. A noise layer
// (noise.h) has frequency 1: its derivative is taken along its rate.
struct LayerInfo {
  std::int32_t parameter = 0;  // -1: a noise layer of fixed rate
  std::int32_t gate = 0;       // authoring gate, for per-gate parameter mappings
  double frequency = 0.0;
  Noise noise;
  // How truncation_error counts what the layer's cos entries drop: `reach`,
  // the mean reach_weight^2 of its (lit) dropped branches, weighed by their
  // (sn c)^2 at the build's seed (by count in a structural build), scales
  // their squares in the estimate. `stale`: later layers were added after the
  // reach was known (a build that goes on from the graph): every entry then
  // counts, dark ones too, with weight 1, as before reach was known.
  double reach = 1.0;
  bool stale = false;

  // The layer's numbers at parameter value x (any value for a fixed rate).
  Turn turn(double x) const { return noise.rotation() ? rotation_turn(frequency * x) : noise_turn(noise, x); }
};

// `count` entries at bytes [offset, offset + length) of the part's string;
// pairs and halves keep their partners from byte `partners` on.
struct Section {
  std::uint32_t count = 0;
  std::uint32_t offset = 0, length = 0;
  std::uint32_t partners = 0;
  std::uint32_t base = 0;  // births: the slot of the first one; cos: how many of its entries are dark
  std::uint8_t width = 0;  // pairs and halves: bytes of b
};

// Zero bytes after a layer's sections (see Layout).
inline constexpr std::size_t kPadding = 3;
static_assert(std::endian::native == std::endian::little, "partners are read as little-endian words");

// The entries whose b lives in one shard.
struct Part {
  std::uint32_t shard = 0;
  Section births, pairs, halves;
};

// One shard's part of a layer.
struct ShardLayer {
  Section cos;
  std::vector<Part> parts;  // by ascending owner shard (one a round of lookups, layer_step.h)
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

// Encodes one section's entries, in ascending a, into memory of its own;
// append_to() then adds the section to the bytes of a layer, and finish()
// pads the layer once its last section is in. A writer is kept across
// layers (start() begins the next section) so that its memory is reused.
class SectionWriter {
 public:
  // Begins a section whose partners are `width` bytes wide.
  void start(std::uint8_t width = 0) {
    width_ = width;
    count_ = previous_ = 0;
    g_ = gaps_.data();
    p_ = partners_.data();
  }

  // Inlined into the loops of a build, once per entry; growing is the rare call.
  [[gnu::always_inline]] void cos(std::uint32_t a) { varint(gap(a)); }
  [[gnu::always_inline]] void birth(std::uint32_t a, int sign) { varint(std::uint64_t{gap(a)} << 1 | (sign < 0)); }
  [[gnu::always_inline]] void pair(std::uint32_t a, std::uint32_t b, int sign) {
    birth(a, sign);
    if (partners_.end() - p_ < 4) p_ = grow(partners_, p_);
    for (int k = 0; k < width_; ++k) *p_++ = static_cast<std::uint8_t>(b >> (8 * k));
  }
  std::uint32_t count() const { return count_; }

  // Appends the section to `bytes` and describes it in `section` (whose
  // base, for births, the caller sets).
  void append_to(std::vector<std::uint8_t>& bytes, Section& section) const {
    section.count = count_;
    section.width = width_;
    section.offset = static_cast<std::uint32_t>(bytes.size());
    bytes.insert(bytes.end(), gaps_.data(), static_cast<const std::uint8_t*>(g_));
    section.partners = static_cast<std::uint32_t>(bytes.size());
    bytes.insert(bytes.end(), partners_.data(), static_cast<const std::uint8_t*>(p_));
    section.length = static_cast<std::uint32_t>(bytes.size()) - section.offset;
  }
  // Pads a layer's finished bytes (see Layout).
  static void finish(std::vector<std::uint8_t>& bytes) { bytes.resize(bytes.size() + kPadding, 0); }

  void release() {
    gaps_.release();
    partners_.release();
    g_ = p_ = nullptr;
  }

 private:
  [[gnu::always_inline]] std::uint32_t gap(std::uint32_t a) {
    if (gaps_.end() - g_ < 5) g_ = grow(gaps_, g_);  // a varint takes at most 5 bytes here
    const std::uint32_t g = a - previous_;
    previous_ = a;
    ++count_;
    return g;
  }
  void varint(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) *g_++ = static_cast<std::uint8_t>(v | 0x80);
    *g_++ = static_cast<std::uint8_t>(v);
  }
  // Enlarges a buffer written up to `at`; returns where writing goes on.
  [[gnu::noinline, gnu::cold]] static std::uint8_t* grow(Column<std::uint8_t>& buffer, std::uint8_t* at) {
    const auto used = static_cast<std::size_t>(at - buffer.data());
    buffer.resize(std::max<std::size_t>(64, 2 * buffer.size()));
    return buffer.data() + used;
  }

  Column<std::uint8_t> gaps_, partners_;
  std::uint8_t* g_ = nullptr;
  std::uint8_t* p_ = nullptr;
  std::uint32_t previous_ = 0, count_ = 0;
  std::uint8_t width_ = 0;
};

// Writes a cos section from its lit entries and its dark ones, each list
// ascending (see Layout).
inline void write_cos(SectionWriter& writer, const std::vector<std::uint32_t>& lit,
                      const std::vector<std::uint32_t>& dark, std::vector<std::uint8_t>& bytes, Section& section) {
  writer.start();
  for (const std::uint32_t a : lit) writer.cos(a);
  for (const std::uint32_t a : dark) writer.cos(a);
  writer.append_to(bytes, section);
  section.base = static_cast<std::uint32_t>(dark.size());
}

// Walks one section's entries in order; partner(k) reads the b of entry k.
class SectionReader {
 public:
  SectionReader(const ShardLayer& layer, const Section& section)
      : p_(layer.bytes.data() + section.offset),
        partners_(layer.bytes.data() + section.partners),
        mask_(section.width >= 4 ? ~std::uint32_t{0} : (std::uint32_t{1} << (8 * section.width)) - 1),
        width_(section.width) {}

  std::uint32_t cos() { return previous_ += static_cast<std::uint32_t>(varint()); }
  // a, and s through `negative`.
  std::uint32_t next(bool& negative) {
    const std::uint64_t v = varint();
    negative = v & 1;
    return previous_ += static_cast<std::uint32_t>(v >> 1);
  }
  std::uint32_t partner(std::uint32_t k) const {
    std::uint32_t b;
    std::memcpy(&b, partners_ + std::size_t{width_} * k, sizeof b);  // little-endian, like the writer
    return b & mask_;
  }

 private:
  std::uint64_t varint() {
    std::uint64_t v = *p_++;
    if (v < 0x80) [[likely]]
      return v;
    v &= 0x7f;
    for (int shift = 7;; shift += 7) {
      const std::uint64_t byte = *p_++;
      v |= (byte & 0x7f) << shift;
      if (byte < 0x80) return v;
    }
  }

  const std::uint8_t* p_;
  const std::uint8_t* partners_;
  std::uint32_t mask_;
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
  std::vector<std::uint32_t> cos, dark;     // the cos entries, lit and dark
  std::vector<DecodedEntry> pairs, halves;  // births are pairs
};
DecodedLayer decode(const ShardLayer& layer);

}  // namespace monoprop
