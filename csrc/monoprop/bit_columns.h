// A shard's keys transposed: for every slot, one bit per term.
//
// Whether a term P anticommutes with a generator G is the parity of a few of
// P's bits (algebra.h, scan_columns): for Pauli, one or two of the two slots of
// every qubit G acts on; for Majorana, the slots of G and, when G has odd
// length, the parity of P's length. With the bits of one slot for 64 terms in
// a word, a gate decides 64 terms with a few loads and xors, reading an eighth
// of a byte per term and slot instead of a whole key word. Word w of column s
// holds bit s of terms 64w .. 64w + 63 (term i at bit i mod 64).
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

  std::size_t size() const { return size_; }
  std::size_t words() const { return (size_ + 63) / 64; }
  // Column of slot s; the length-parity column is index slots().
  const std::uint64_t* column(int s) const { return columns_[static_cast<std::size_t>(s)].data(); }
  int slots() const { return slots_; }
  bool has_parity() const { return columns_.size() > static_cast<std::size_t>(slots_); }

  void reserve(std::size_t terms) {
    for (auto& column : columns_) column.reserve((terms + 63) / 64);
  }

  // Appends a term given by its key words.
  template <int W>
  void append(const std::uint64_t* key) {
    const std::size_t w = size_ / 64;
    if (size_ % 64 == 0)
      for (auto& column : columns_) column.push_back(0);
    const std::uint64_t bit = std::uint64_t{1} << (size_ % 64);
    int length = 0;
    for (int k = 0; k < W; ++k) {
      length += std::popcount(key[k]);
      for (std::uint64_t x = key[k]; x; x &= x - 1)
        columns_[64 * static_cast<std::size_t>(k) + std::countr_zero(x)][w] |= bit;
    }
    if (has_parity() && (length & 1)) columns_.back()[w] |= bit;
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
      const std::uint64_t* run = keys + W * done;
      for (int k = 0; k < W; ++k) {
        std::uint64_t block[64] = {};
        for (std::size_t j = 0; j < take; ++j) block[at + j] = run[W * j + static_cast<std::size_t>(k)];
        transpose(block);
        for (int b = 0; b < 64 && 64 * k + b < slots_; ++b) add_word(64 * k + b, at, block[b]);
      }
      if (has_parity()) {
        std::uint64_t parity = 0;
        for (std::size_t j = 0; j < take; ++j) {
          int length = 0;
          for (int k = 0; k < W; ++k) length += std::popcount(run[W * j + static_cast<std::size_t>(k)]);
          parity |= static_cast<std::uint64_t>(length & 1) << (at + j);
        }
        add_word(slots_, at, parity);
      }
      size_ += take;
      done += take;
    }
  }

  // Drops every term from n on.
  void truncate(std::size_t n) {
    if (n >= size_) return;
    const std::size_t words = (n + 63) / 64;
    const std::uint64_t keep = n % 64 ? (std::uint64_t{1} << (n % 64)) - 1 : ~std::uint64_t{0};
    for (auto& column : columns_) {
      column.resize(words);
      if (words) column[words - 1] &= keep;
    }
    size_ = n;
  }

  std::size_t bytes() const {
    std::size_t n = 0;
    for (const auto& column : columns_) n += column.bytes();
    return n;
  }

 private:
  // Adds a run's word to column c, whose last word it starts at bit `at` of.
  void add_word(int c, std::size_t at, std::uint64_t bits) {
    Column<std::uint64_t>& column = columns_[static_cast<std::size_t>(c)];
    if (at == 0)
      column.push_back(bits);
    else
      column.back() |= bits;
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
  std::vector<Column<std::uint64_t>> columns_;
  std::size_t size_ = 0;
};

}  // namespace monoprop
