// The store of a shard's terms (store.h) and its hash index (hash_index.h).
#include "monoprop/store.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpp/check.h"
#include "monoprop/errors.h"

using namespace monoprop;
using namespace monoprop_test;

// Store and hash index against a plain list: every key found at its slot,
// absent keys absent, across index rebuilds, batched appends and truncation.
TEST(test_store_and_ceiling) {
  Store<2> store(128, false);
  std::mt19937 rng(7);
  std::vector<Monomial<2>> added;
  for (int round = 0; round < 40; ++round) {
    std::vector<Monomial<2>> fresh;
    for (int i = 0; i < 300; ++i) {
      Monomial<2> k;
      k.words[0] = rng();
      k.words[1] = rng() & 0xFF;
      if (store.find(k) == Store<2>::kEmpty && std::find(fresh.begin(), fresh.end(), k) == fresh.end())
        fresh.push_back(k);
    }
    store.reserve_for(fresh.size());
    const std::size_t first = store.size();
    for (const auto& k : fresh) {
      if (round % 2) {
        CHECK(store.append(k) == added.size());
      } else {
        CHECK(store.append_unindexed(k) == added.size());
      }
      added.push_back(k);
    }
    if (round % 2 == 0) store.index_appended(first, [&](std::size_t s) { return added[s].hash(); });
  }
  bool all_found = true, rows = true;
  for (std::size_t i = 0; i < added.size(); ++i) {
    all_found &= store.find(added[i]) == i;
    rows &= store.key(i) == added[i] && store.length(i) == added[i].length();
  }
  CHECK(all_found);
  CHECK(rows);
  // The staged lookup gives the same answers as find.
  std::vector<Monomial<2>> asked(added.begin(), added.begin() + 500);
  for (int i = 0; i < 100; ++i) asked[static_cast<std::size_t>(i) * 5].words[1] ^= 0x100;  // absent ones
  bool staged = true;
  lookup_all(
      store, asked.size(), [&](std::size_t i) -> const Monomial<2>& { return asked[i]; },
      [&](std::size_t i, std::uint32_t slot, std::uint64_t h) {
        staged &= slot == store.find(asked[i]) && h == asked[i].hash();
      });
  CHECK(staged);
  store.truncate(100);
  CHECK(store.size() == 100);
  CHECK(store.find(added[150]) == Store<2>::kEmpty);
  CHECK(store.find(added[50]) == 50);
  CHECK(store.bits().size() == 100);

  // The same code path with an 8-bit index: 255 terms fit, the 256th is refused
  // before anything changes.
  Store<1, std::uint8_t> small(64, false);
  for (std::uint64_t i = 1; i <= 255; ++i) {
    Monomial<1> k;
    k.words[0] = i;
    small.reserve_for(1);
    small.append(k);
  }
  bool refused = false;
  try {
    small.reserve_for(1);
  } catch (const ShardCeilingError& e) {
    refused = std::string(e.what()).find("at most 255") != std::string::npos;
  }
  CHECK(refused);
  CHECK(small.size() == 255);
  Monomial<1> last;
  last.words[0] = 255;
  CHECK(small.find(last) == 254);
}
