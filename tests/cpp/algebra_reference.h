// Reference helpers the algebra and reach tests share: monomials from slot
// lists, and the bit-column scan's answer for one term.
#pragma once

#include <cstdint>
#include <vector>

#include "monoprop/bit_columns.h"
#include "monoprop/monomial.h"

namespace monoprop_test {

// The monomial with the listed slots set.
template <int W>
monoprop::Monomial<W> key_of(const std::vector<int>& s) {
  monoprop::Monomial<W> k;
  for (int x : s) k.set(static_cast<std::uint32_t>(x));
  return k;
}

// Whether the bit-column scan (algebra's scan_columns over monoprop::BitColumns) marks P
// as anticommuting with G; P is the 64th term of its column word, to see bit 63.
template <typename Algebra, int W>
bool scanned_anticommutes(const monoprop::Monomial<W>& p, const monoprop::Monomial<W>& g, int slots) {
  monoprop::BitColumns bits(slots, Algebra::kParityColumn);
  const monoprop::Monomial<W> blank;
  for (int i = 0; i < 63; ++i) bits.append<W>(blank.words.data());
  bits.append<W>(p.words.data());
  std::vector<int> columns;
  Algebra::scan_columns(g, slots, columns);
  std::uint64_t x = 0;
  for (const int c : columns) x ^= bits.word(c, 0);
  return (x >> 63) & 1;
}

}  // namespace monoprop_test
