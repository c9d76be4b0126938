// Bit columns (bit_columns.h): the terms' slots transposed into one bit
// column per slot, dense and sparse, against columns built bit by bit.
#include "monoprop/bit_columns.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "cpp/check.h"

using namespace monoprop;
using namespace monoprop_test;

// Bit columns: runs appended at once (transposed 64 terms at a time) equal the
// same terms appended one by one, bit for bit, at every offset in a word.
TEST(test_bit_columns) {
  std::mt19937_64 rng(11);
  for (const bool parity : {false, true}) {
    BitColumns one(120, parity), runs(120, parity);
    std::vector<std::uint64_t> keys;
    std::size_t total = 0;
    for (const std::size_t n : {3, 64, 17, 100, 1, 200, 63}) {
      keys.clear();
      for (std::size_t j = 0; j < n; ++j) {
        keys.push_back(rng());
        keys.push_back(rng() & ((std::uint64_t{1} << 56) - 1));  // slots 120..127 stay empty
      }
      for (std::size_t j = 0; j < n; ++j) one.append<2>(keys.data() + 2 * j);
      runs.append<2>(keys.data(), n);
      total += n;
    }
    bool same = one.size() == total && runs.size() == total && one.words() == runs.words();
    for (int s = 0; s < 120 + (parity ? 1 : 0); ++s)
      for (std::size_t w = 0; w < one.words(); ++w) same &= one.word(s, w) == runs.word(s, w);
    CHECK(same);
  }
}

// Sparse bit columns against dense ones built from the same keys: every word,
// and the xor of every set of columns a gate reads (few and many columns),
// through sparse and dense regions, truncation at and inside word boundaries,
// and appends after truncation.
TEST(test_sparse_columns) {
  std::mt19937_64 rng(5);
  constexpr int kSlots = 190;
  BitColumns bits(kSlots, true);
  std::vector<std::array<std::uint64_t, 3>> keys;
  auto add = [&](std::size_t n, int region) {  // terms touching a few slots near `region`
    std::vector<std::uint64_t> run;
    for (std::size_t j = 0; j < n; ++j) {
      std::array<std::uint64_t, 3> k{};
      for (int b = 0; b < 4; ++b) {
        const int s = (region + static_cast<int>(rng() % 24)) % kSlots;
        k[static_cast<std::size_t>(s / 64)] |= std::uint64_t{1} << (s % 64);
      }
      keys.push_back(k);
      run.insert(run.end(), k.begin(), k.end());
    }
    if (n % 2)
      for (std::size_t j = 0; j < n; ++j) bits.append<3>(run.data() + 3 * j);
    else
      bits.append<3>(run.data(), n);
  };
  auto dense = [&](int c, std::size_t w) {
    std::uint64_t x = 0;
    for (std::size_t i = 64 * w; i < std::min(keys.size(), 64 * w + 64); ++i) {
      int length = 0;
      for (const std::uint64_t k : keys[i]) length += std::popcount(k);
      const bool bit = c == kSlots ? length & 1 : (keys[i][static_cast<std::size_t>(c / 64)] >> (c % 64)) & 1;
      x |= static_cast<std::uint64_t>(bit) << (i % 64);
    }
    return x;
  };
  auto agrees = [&] {
    bool same = bits.size() == keys.size();
    for (int c = 0; c <= kSlots; ++c)
      for (std::size_t w = 0; w < bits.words(); ++w) same &= bits.word(c, w) == dense(c, w);
    for (const std::size_t m : {1, 2, 5, 17, 40}) {
      std::vector<int> cols;
      for (std::size_t k = 0; k < m; ++k) cols.push_back(static_cast<int>(rng() % (kSlots + 1)));
      std::vector<std::uint64_t> got(bits.words(), 0);
      std::size_t last = 0;
      bool ascending = true;
      bits.xor_words(cols.data(), cols.size(), [&](std::size_t w, std::uint64_t x) {
        ascending &= w >= last && w < got.size();
        last = w + 1;
        got[std::min(w, got.size() - 1)] = x;
      });
      for (std::size_t w = 0; w < got.size(); ++w) {
        std::uint64_t want = 0;
        for (const int c : cols) want ^= dense(c, w);
        same &= got[w] == want;
      }
      same &= ascending;
    }
    return same;
  };
  add(5000, 0);
  add(70, 100);
  add(9000, 150);
  CHECK(agrees());
  for (const std::size_t n : {9000, 8192, 4097, 4096, 130}) {
    bits.truncate(n);
    keys.resize(n);
    CHECK(agrees());
    add(333, static_cast<int>(n % kSlots));
    CHECK(agrees());
  }
}
