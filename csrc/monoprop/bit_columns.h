// A shard's keys transposed: for every slot, one bit per term.
//
// Whether a term P anticommutes with a generator G is the parity of a few of
// P's bits (algebra.h, scan_columns): for Pauli, one or two of the two slots of
// every qubit G acts on; for Majorana, the slots of G and, when G has odd
// length, the parity of P's length. With the bits of one slot for 64 terms in
// a word, a gate decides 64 terms with a few loads and xors, reading an eighth
// of a byte per term and slot instead of a whole key word. Word w of column s
// holds bit s of terms 64w .. 64w + 63 (term i at bit i mod 64).
//
// Columns are sparse. A term touches few of the slots of a wide register (a
// kicked-Ising term on 115 qubits has about 11 qubits in its support), so most
// words of most columns are zero. A column stores only the words that were
// ever set, in ascending order, with a presence bitmap of one bit a word; a
// scan walks the presence bitmaps of the gate's columns and reads only the
// stored words. On 115 qubits that is a fifth of the words: a fifth of the
// memory and of the reads.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "column.h"

namespace monoprop {

class BitColumns {
 public:
  // `slots` key slots, plus one column of length parities when `parity`.
  BitColumns(int slots, bool parity) : slots_(slots), columns_(static_cast<std::size_t>(slots + (parity ? 1 : 0))) {}

  // Bytes that empty columns take beside the object: one header per column.
  static std::size_t empty_bytes(int slots, bool parity) {
    return static_cast<std::size_t>(slots + (parity ? 1 : 0)) * sizeof(Sparse);
  }

  std::size_t size() const { return size_; }
  std::size_t words() const { return (size_ + 63) / 64; }
  int slots() const { return slots_; }
  bool has_parity() const { return columns_.size() > static_cast<std::size_t>(slots_); }

  // Word w of column c (the length-parity column is c = slots()); 0 where none
  // is stored. A walk over the presence bitmap: for tests and spot checks.
  std::uint64_t word(int c, std::size_t w) const {
    const Sparse& column = columns_[static_cast<std::size_t>(c)];
    if (w >= words() || !column.has(w)) return 0;
    std::size_t rank = 0;
    for (std::size_t b = 0; b < w / 64; ++b) rank += static_cast<std::size_t>(std::popcount(column.present[b]));
    rank += static_cast<std::size_t>(std::popcount(column.present[w / 64] & ((std::uint64_t{1} << (w % 64)) - 1)));
    return column.words[rank];
  }

  // Calls visit(w, x) in ascending w for every word w at which one of the
  // columns cols[0 .. m-1] stores a word, x being the xor of the columns'
  // words at w (which can be 0). Every other word's xor is 0.
  template <typename Visit>
  void xor_words(const int* cols, std::size_t m, Visit&& visit) const {
    constexpr std::size_t kMax = 16;  // columns walked together; more are folded in passes
    if (m > kMax) return xor_many(cols, m, visit);
    const Sparse* column[kMax];
    std::size_t at[kMax] = {};
    for (std::size_t k = 0; k < m; ++k) column[k] = &columns_[static_cast<std::size_t>(cols[k])];
    for (std::size_t b = 0; b < blocks_; ++b) {
      std::uint64_t present[kMax], any = 0;
      for (std::size_t k = 0; k < m; ++k) any |= present[k] = column[k]->present[b];
      for (; any; any &= any - 1) {
        const int j = std::countr_zero(any);
        std::uint64_t x = 0;
        for (std::size_t k = 0; k < m; ++k)
          if ((present[k] >> j) & 1) x ^= column[k]->words[at[k]++];
        visit(64 * b + static_cast<std::size_t>(j), x);
      }
    }
  }

  // Calls visit(w, x) in ascending w, x marking the terms of word w whose
  // bits at columns cols[0 .. m-1] (m <= 4) form one of `patterns` (bit p set
  // for pattern p; column k is bit k of p). Every word is visited when
  // pattern 0 is among them, else only the words a column stores.
  template <typename Visit>
  void pattern_words(const int* cols, std::size_t m, std::uint32_t patterns, Visit&& visit) const {
    constexpr std::size_t kMax = 4;
    const Sparse* column[kMax];
    std::size_t at[kMax] = {};
    for (std::size_t k = 0; k < m; ++k) column[k] = &columns_[static_cast<std::size_t>(cols[k])];
    const std::size_t n = words();
    for (std::size_t b = 0; b < blocks_; ++b) {
      std::uint64_t present[kMax], any = 0;
      for (std::size_t k = 0; k < m; ++k) any |= present[k] = column[k]->present[b];
      if (patterns & 1) {  // every word of the block below the end
        const std::size_t end = std::min<std::size_t>(64, n - 64 * b);
        any = end == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << end) - 1;
      }
      for (; any; any &= any - 1) {
        const int j = std::countr_zero(any);
        std::uint64_t v[kMax];
        for (std::size_t k = 0; k < m; ++k) v[k] = (present[k] >> j) & 1 ? column[k]->words[at[k]++] : 0;
        std::uint64_t x = 0;
        for (std::uint32_t p = patterns; p; p &= p - 1) {
          const int pattern = std::countr_zero(p);
          std::uint64_t match = ~std::uint64_t{0};
          for (std::size_t k = 0; k < m; ++k) match &= (pattern >> k) & 1 ? v[k] : ~v[k];
          x |= match;
        }
        const std::size_t w = 64 * b + static_cast<std::size_t>(j);
        if (w + 1 == n && size_ % 64) x &= (std::uint64_t{1} << (size_ % 64)) - 1;  // no terms past the end
        visit(w, x);
      }
    }
  }

  // pattern_words for bits that are each the xor of several columns: bit k of
  // a term is the xor of its columns probes[k] (a Clifford frame spreads one
  // slot of the term a key stands for over many slots of the key). Gathers
  // each probe's words in a dense array first.
  template <typename Visit>
  void probe_words(const std::vector<std::vector<int>>& probes, std::uint32_t patterns, Visit&& visit) const {
    const std::size_t n = words(), m = probes.size();
    std::vector<std::uint64_t> bits(m * n, 0), touched((n + 63) / 64, 0);
    for (std::size_t k = 0; k < m; ++k)
      for (const int c : probes[k]) {
        const Sparse& column = columns_[static_cast<std::size_t>(c)];
        std::size_t at = 0;
        for (std::size_t b = 0; b < column.present.size(); ++b) {
          touched[b] |= column.present[b];
          for (std::uint64_t p = column.present[b]; p; p &= p - 1)
            bits[k * n + 64 * b + static_cast<std::size_t>(std::countr_zero(p))] ^= column.words[at++];
        }
      }
    for (std::size_t w = 0; w < n; ++w) {
      if (!(patterns & 1) && !((touched[w / 64] >> (w % 64)) & 1)) continue;
      std::uint64_t x = 0;
      for (std::uint32_t p = patterns; p; p &= p - 1) {
        const int pattern = std::countr_zero(p);
        std::uint64_t match = ~std::uint64_t{0};
        for (std::size_t k = 0; k < m; ++k) match &= (pattern >> k) & 1 ? bits[k * n + w] : ~bits[k * n + w];
        x |= match;
      }
      if (w + 1 == n && size_ % 64) x &= (std::uint64_t{1} << (size_ % 64)) - 1;
      visit(w, x);
    }
  }

  // Makes room in the presence bitmaps for `terms` terms.
  void reserve(std::size_t terms) {
    for (Sparse& column : columns_) column.present.reserve((terms + 4095) / 4096);
  }

  // Appends a term given by its key words.
  template <int W>
  void append(const std::uint64_t* key) {
    grow_to(size_ + 1);
    const std::size_t w = size_ / 64;
    const std::uint64_t bit = std::uint64_t{1} << (size_ % 64);
    int length = 0;
    for (int k = 0; k < W; ++k) {
      length += std::popcount(key[k]);
      for (std::uint64_t x = key[k]; x; x &= x - 1) add_word(64 * k + std::countr_zero(x), w, bit);
    }
    if (has_parity() && (length & 1)) add_word(slots_, w, bit);
    ++size_;
  }

  // Appends n terms given by their keys, W words each, one after another.
  // A run of 64 terms is a 64 x 64 bit matrix per key word, and its transpose
  // holds the run's word of each column: a few instructions a term and word,
  // against several a set bit when terms go in one by one.
  template <int W>
  void append(const std::uint64_t* keys, std::size_t n) {
    constexpr std::size_t kTranspose = 16;  // shorter runs go in bit by bit
    for (std::size_t done = 0; done < n;) {
      const std::size_t at = size_ % 64, take = std::min(64 - at, n - done);
      if (take < kTranspose) {
        for (std::size_t j = 0; j < take; ++j) append<W>(keys + W * (done + j));
        done += take;
        continue;
      }
      grow_to(size_ + take);
      const std::size_t w = size_ / 64;
      const std::uint64_t* run = keys + W * done;
      for (int k = 0; k < W; ++k) {
        std::uint64_t block[64] = {};
        for (std::size_t j = 0; j < take; ++j) block[at + j] = run[W * j + static_cast<std::size_t>(k)];
        transpose(block);
        for (int b = 0; b < 64 && 64 * k + b < slots_; ++b) add_word(64 * k + b, w, block[b]);
      }
      if (has_parity()) {
        std::uint64_t parity = 0;
        for (std::size_t j = 0; j < take; ++j) {
          int length = 0;
          for (int k = 0; k < W; ++k) length += std::popcount(run[W * j + static_cast<std::size_t>(k)]);
          parity |= static_cast<std::uint64_t>(length & 1) << (at + j);
        }
        add_word(slots_, w, parity);
      }
      size_ += take;
      done += take;
    }
  }

  // Drops every term from n on.
  void truncate(std::size_t n) {
    if (n >= size_) return;
    const std::size_t words = (n + 63) / 64, blocks = (words + 63) / 64;
    const std::uint64_t keep = n % 64 ? (std::uint64_t{1} << (n % 64)) - 1 : ~std::uint64_t{0};
    for (Sparse& column : columns_) {
      column.present.resize(blocks);
      if (words % 64) column.present[blocks - 1] &= (std::uint64_t{1} << (words % 64)) - 1;
      std::size_t stored = 0;
      for (const std::uint64_t p : column.present) stored += static_cast<std::size_t>(std::popcount(p));
      column.words.resize(stored);
      if (words && column.has(words - 1)) column.words.back() &= keep;
    }
    blocks_ = blocks;
    size_ = n;
  }

  std::size_t bytes() const {
    std::size_t n = 0;
    for (const Sparse& column : columns_) n += column.present.bytes() + column.words.bytes();
    return n;
  }

 private:
  struct Sparse {
    Column<std::uint64_t> present;  // bit w % 64 of present[w / 64]: word w is stored
    Column<std::uint64_t> words;    // the stored words, ascending w
    bool has(std::size_t w) const { return (present[w / 64] >> (w % 64)) & 1; }
  };

  // Presence bitmaps long enough for n terms.
  void grow_to(std::size_t n) {
    const std::size_t blocks = (n + 4095) / 4096;
    if (blocks_ >= blocks) return;
    for (Sparse& column : columns_) column.present.resize(blocks, 0);
    blocks_ = blocks;
  }

  // Sets `bits` in word w of column c, the last word a term can be appended to.
  void add_word(int c, std::size_t w, std::uint64_t bits) {
    if (bits == 0) return;
    Sparse& column = columns_[static_cast<std::size_t>(c)];
    if (column.has(w)) {
      column.words.back() |= bits;
      return;
    }
    column.present[w / 64] |= std::uint64_t{1} << (w % 64);
    column.words.push_back(bits);
  }

  // xor_words over more columns than one pass takes: the xor of each word is
  // gathered in a dense scratch array, then visited.
  template <typename Visit>
  void xor_many(const int* cols, std::size_t m, Visit&& visit) const {
    std::vector<std::uint64_t> x(words(), 0), touched((words() + 63) / 64, 0);
    for (std::size_t k = 0; k < m; ++k) {
      const Sparse& column = columns_[static_cast<std::size_t>(cols[k])];
      std::size_t at = 0;
      for (std::size_t b = 0; b < column.present.size(); ++b) {
        touched[b] |= column.present[b];
        for (std::uint64_t p = column.present[b]; p; p &= p - 1)
          x[64 * b + static_cast<std::size_t>(std::countr_zero(p))] ^= column.words[at++];
      }
    }
    for (std::size_t b = 0; b < touched.size(); ++b)
      for (std::uint64_t p = touched[b]; p; p &= p - 1) {
        const std::size_t w = 64 * b + static_cast<std::size_t>(std::countr_zero(p));
        visit(w, x[w]);
      }
  }

  // In place: bit j of word i moves to bit i of word j (swapping ever smaller
  // off-diagonal blocks: 32 x 32, then 16 x 16, ..., then single bits).
  static void transpose(std::uint64_t a[64]) {
    std::uint64_t mask = 0x00000000FFFFFFFFull;
    for (int j = 32; j != 0; j >>= 1, mask ^= mask << j)
      for (int k = 0; k < 64; k = ((k | j) + 1) & ~j) {
        const std::uint64_t t = ((a[k] >> j) ^ a[k | j]) & mask;
        a[k] ^= t << j;
        a[k | j] ^= t;
      }
  }

  int slots_;
  std::vector<Sparse> columns_;
  std::size_t size_ = 0;
  std::size_t blocks_ = 0;  // length of every presence bitmap
};

}  // namespace monoprop
