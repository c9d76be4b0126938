// The byte encoding of graph layers (graph.h): decode() gives back the
// entries a plain list encoded, in a few bytes an entry.
#include "monoprop/graph.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "cpp/check.h"
#include "cpp/plain_graph.h"

using namespace monoprop;
using namespace monoprop_test;

static void test_codec_round_trip(std::mt19937& rng) {
  for (const std::uint32_t n : {3u, 200u, 70000u}) {
    std::vector<PlainEntry> entries;
    std::vector<std::uint32_t> slots(n);
    for (std::uint32_t i = 0; i < n; ++i) slots[i] = i;
    std::shuffle(slots.begin(), slots.end(), rng);
    for (std::uint32_t e = 0; e + 1 < n; e += 2) {
      const int kind = static_cast<int>(rng() % 3);
      entries.push_back({kind, slots[e], 0, 0, kind ? slots[e + 1] : 0, rng() % 2 ? 1 : -1});
    }
    std::sort(entries.begin(), entries.end(), [](const PlainEntry& x, const PlainEntry& y) { return x.a < y.a; });
    ShardLayer layer = encode(entries, 0, 1, n);
    // Births: b implicit, from the section's base on.
    Part born;
    born.shard = 0;
    SectionWriter births;
    births.start();
    for (std::uint32_t a = 1; a < n; a += 5) births.birth(a, a % 2 ? 1 : -1);
    births.append_to(layer.bytes, born.births);
    born.births.base = n;
    SectionWriter::finish(layer.bytes);
    layer.parts.push_back(born);
    const DecodedLayer decoded = decode(layer);
    for (std::uint32_t a = 1, k = 0; a < n; a += 5, ++k) entries.push_back({1, a, 0, 0, n + k, a % 2 ? 1 : -1});
    std::vector<std::uint32_t> cos;
    std::vector<std::tuple<std::uint32_t, std::uint32_t, int>> pairs, halves;
    // decode() lists the pairs part by part: the encoded ones, then the births.
    for (const auto& e : entries) {
      if (e.kind == 0) cos.push_back(e.a);
      if (e.kind == 1) pairs.emplace_back(e.a, e.b, e.sign);
      if (e.kind == 2) halves.emplace_back(e.a, e.b, e.sign);
    }
    CHECK(decoded.cos == cos);
    bool same = decoded.pairs.size() == pairs.size() && decoded.halves.size() == halves.size();
    for (std::size_t i = 0; same && i < pairs.size(); ++i)
      same = std::make_tuple(decoded.pairs[i].a, decoded.pairs[i].b, decoded.pairs[i].sign) == pairs[i];
    for (std::size_t i = 0; same && i < halves.size(); ++i)
      same = std::make_tuple(decoded.halves[i].a, decoded.halves[i].b, decoded.halves[i].sign) == halves[i];
    CHECK(same);
    CHECK(layer.n_cos() + layer.n_rotations() == entries.size());
    // A few bytes an entry (a record of slots would take nine).
    CHECK(layer.bytes.size() <= 7 * entries.size() + 8);
  }
}

TEST(test_codec) {
  std::mt19937 rng(21);
  test_codec_round_trip(rng);
}
