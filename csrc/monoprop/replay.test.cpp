// Replaying graph layers (replay.h) forward and backward against the plain
// formulas and central differences; dark cos entries and what a bounded
// sweep counts of them.
#include "monoprop/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpp/check.h"
#include "cpp/plain_graph.h"
#include "monoprop/graph.h"

using namespace monoprop;
using namespace monoprop_test;

// Replays of random layers split over shards (cross parts, births, halves),
// forward and backward, against the plain formulas and central differences.
static void test_replay_against_plain(std::mt19937& rng) {
  for (const std::uint32_t shards : {1u, 3u}) {
    const std::uint32_t n = 40;
    const int L = 6;
    const auto plain = random_layers(rng, shards, n, L);
    std::vector<std::vector<ShardLayer>> graph(shards);
    for (const auto& entries : plain)
      for (std::uint32_t s = 0; s < shards; ++s) graph[s].push_back(encode(entries, s, shards, n));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<std::vector<double>> c0(shards, std::vector<double>(n)), w = c0;
    for (std::uint32_t s = 0; s < shards; ++s)
      for (std::uint32_t i = 0; i < n; ++i) c0[s][i] = u(rng), w[s][i] = u(rng);
    const std::vector<double> freq = {2.0, -1.4, 0.6, 1.0, -0.5, 0.9}, theta = {0.37, -0.81, 1.1, 0.2, 0.6, -0.3};
    auto value = [&](const std::vector<double>& th) {
      auto c = c0;
      for (int l = 0; l < L; ++l) plain_forward(plain[l], c, freq[l] * th[l]);
      double f = 0;
      for (std::uint32_t s = 0; s < shards; ++s)
        for (std::uint32_t i = 0; i < n; ++i) f += w[s][i] * c[s][i];
      return f;
    };
    for (const double pare : {0.0, 0.3}) {
      std::vector<std::vector<double>> packed = c0, state(shards);
      std::vector<double*> ptr(shards);
      std::vector<ReplayTape> tapes(shards);
      for (std::uint32_t s = 0; s < shards; ++s) {
        ptr[s] = packed[s].data();
        tapes[s].begin(n, true);
      }
      for (int l = 0; l < L; ++l)
        for (std::uint32_t s = 0; s < shards; ++s)
          forward_layer(graph[s][l], std::cos(freq[l] * theta[l]), std::sin(freq[l] * theta[l]), ptr.data(),
                        static_cast<int>(s), pare, &tapes[s]);
      // The reverse sweep's (c, lambda) pairs: the forward sweep's output, and lambda = w.
      for (std::uint32_t s = 0; s < shards; ++s) {
        for (std::uint32_t i = 0; i < n; ++i) state[s].insert(state[s].end(), {packed[s][i], w[s][i]});
        ptr[s] = state[s].data();
      }
      if (pare == 0.0) {  // the exact sweep matches the plain one
        auto c = c0;
        for (int l = 0; l < L; ++l) plain_forward(plain[l], c, freq[l] * theta[l]);
        bool same = true;
        for (std::uint32_t s = 0; s < shards; ++s)
          for (std::uint32_t i = 0; i < n; ++i) same &= std::abs(state[s][2 * i] - c[s][i]) < 1e-14;
        CHECK(same);
      }
      std::vector<double> grad(L, 0.0);
      for (std::uint32_t s = 0; s < shards; ++s) tapes[s].cursor = tapes[s].flags.size();
      for (int l = L; l-- > 0;) {
        const double phi = freq[l] * theta[l];
        for (std::uint32_t s = 0; s < shards; ++s) {
          if (pare > 0.0) tapes[s].cursor -= pare_flags(graph[s][l]);
          grad[l] += freq[l] *
                     adjoint_layer(graph[s][l], rotation_turn(phi), ptr.data(), static_cast<int>(s), pare, &tapes[s]);
        }
      }
      bool rewound = true;  // the reverse sweep ends where the forward one began
      for (std::uint32_t s = 0; s < shards; ++s)
        for (std::uint32_t i = 0; i < n; ++i) rewound &= std::abs(state[s][2 * i] - c0[s][i]) < 1e-12;
      CHECK(rewound);
      if (pare > 0.0) continue;  // paring approximates; the gradient is checked exact only
      for (int l = 0; l < L; ++l) {
        auto hi = theta, lo = theta;
        hi[l] += 1e-6;
        lo[l] -= 1e-6;
        CHECK(std::abs((value(hi) - value(lo)) / 2e-6 - grad[l]) < 1e-7);
      }
    }
  }
}

// Dark cos entries go last in the cos section (base counts them); decode()
// parts them again, and a bounded sweep counts them as the rule says.
static void test_dark_cos_entries(std::mt19937& rng) {
  const std::uint32_t n = 300;
  std::vector<std::uint32_t> slots(n);
  for (std::uint32_t i = 0; i < n; ++i) slots[i] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<std::uint32_t> lit(slots.begin(), slots.begin() + 120), dark(slots.begin() + 120, slots.begin() + 170);
  std::sort(lit.begin(), lit.end());
  std::sort(dark.begin(), dark.end());
  ShardLayer layer;
  SectionWriter writer;
  write_cos(writer, lit, dark, layer.bytes, layer.cos);
  SectionWriter::finish(layer.bytes);
  const DecodedLayer decoded = decode(layer);
  CHECK(decoded.cos == lit && decoded.dark == dark && layer.cos.base == dark.size());
  std::vector<double> c(n);
  for (double& x : c) x = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
  const double phi = 0.3, cs = std::cos(phi), sn = std::sin(phi);
  double lit_sum = 0.0, lit_squares = 0.0, dark_sum = 0.0, dark_squares = 0.0;
  for (const std::uint32_t a : lit) lit_sum += std::abs(sn * c[a]), lit_squares += sn * sn * c[a] * c[a];
  for (const std::uint32_t a : dark) dark_sum += std::abs(sn * c[a]), dark_squares += sn * sn * c[a] * c[a];
  for (const bool counts_dark : {false, true}) {
    std::vector<double> x = c;
    double* state[] = {x.data()};
    Dropped dropped;
    forward_layer(layer, cs, sn, state, 0, 0.0, nullptr, &dropped, nullptr, DropRule{0.25, counts_dark});
    const double sum = lit_sum + (counts_dark ? dark_sum : 0.0);
    const double squares = 0.25 * lit_squares + (counts_dark ? dark_squares : 0.0);
    CHECK(std::abs(dropped.sum - sum) <= 1e-12 * sum && std::abs(dropped.squares - squares) <= 1e-12 * squares);
    CHECK(std::abs(dropped.plain_sum - (lit_sum + dark_sum)) <= 1e-12 * (lit_sum + dark_sum));
    bool scaled = true;
    for (std::uint32_t a = 0; a < n; ++a) {
      const bool listed =
          std::binary_search(lit.begin(), lit.end(), a) || std::binary_search(dark.begin(), dark.end(), a);
      scaled = scaled && x[a] == (listed ? c[a] * cs : c[a]);
    }
    CHECK(scaled);
  }
}

TEST(test_replay) {
  std::mt19937 rng(31);
  test_replay_against_plain(rng);
}

TEST(test_dark_cos) {
  std::mt19937 rng(32);
  test_dark_cos_entries(rng);
}
