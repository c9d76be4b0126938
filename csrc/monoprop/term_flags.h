// Two flags per term of a shard during one gate layer, packed 32 terms to a
// word (a quarter of a byte a term, where a byte each would cost a shard as
// much as a sixth of its keys on a wide register).
#pragma once

#include <cstddef>
#include <cstdint>

#include "column.h"

namespace monoprop {

class TermFlags {
 public:
  static constexpr unsigned kAsking = 1;  // asked for its partner
  static constexpr unsigned kMarked = 2;  // quiet, but another term's lookup found it

  // Terms the flags cover (those held when the layer began); new ones read 0.
  std::size_t size() const { return size_; }
  void resize(std::size_t n) {
    words_.resize((n + 31) / 32, 0);
    size_ = n;
  }
  void release() {
    words_.release();
    size_ = 0;
  }
  std::size_t bytes() const { return words_.bytes(); }

  bool test(std::size_t i, unsigned flag) const { return (words_[i / 32] >> shift(i)) & flag; }
  void set(std::size_t i, unsigned flag) { words_[i / 32] |= std::uint64_t{flag} << shift(i); }
  void clear(std::size_t i) { words_[i / 32] &= ~(std::uint64_t{3} << shift(i)); }

 private:
  static unsigned shift(std::size_t i) { return 2 * static_cast<unsigned>(i % 32); }

  Column<std::uint64_t> words_;
  std::size_t size_ = 0;
};

}  // namespace monoprop
