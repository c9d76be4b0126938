// Column (column.h): a vector of plain values that maps its pages.
#include "monoprop/column.h"

#include <cstdint>

#include "cpp/check.h"

using namespace monoprop;
using namespace monoprop_test;

// Column: contents survive growth across the mapping threshold, copies are
// independent, shrinking and release work.
TEST(test_column) {
  Column<std::uint32_t> c;
  for (std::uint32_t i = 0; i < 200000; ++i) c.push_back(i * 7);
  bool same = c.size() == 200000;
  for (std::uint32_t i = 0; i < c.size(); ++i) same &= c[i] == i * 7;
  CHECK(same);
  Column<std::uint32_t> d = c;
  d[5] = 1;
  CHECK(c[5] == 35 && d[5] == 1 && d.size() == c.size());
  c.resize(10);
  c.shrink_to_fit();
  CHECK(c.size() == 10 && c[9] == 63);
  c.resize(300000, 9);
  CHECK(c[9] == 63 && c[10] == 9 && c[299999] == 9);
  c.release();
  CHECK(c.empty() && c.bytes() == 0);
}
