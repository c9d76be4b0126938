// C++ unit tests for the algebras, the store and the graph replay, each
// against a slow, plainly written reference. Prints "N passed, N failed".
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "monoprop/algebra.h"
#include "monoprop/bit_columns.h"
#include "monoprop/column.h"
#include "monoprop/graph.h"
#include "monoprop/propagator.h"
#include "monoprop/reach.h"
#include "monoprop/replay.h"
#include "monoprop/routing.h"
#include "monoprop/store.h"

using namespace monoprop;

static int passed = 0, failed = 0;
#define CHECK(cond)                                                 \
  do {                                                              \
    if (cond) {                                                     \
      ++passed;                                                     \
    } else {                                                        \
      ++failed;                                                     \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                               \
  } while (0)

using cd = std::complex<double>;

// --- Majorana reference: bare products of sorted index lists -----------------
// m_a m_b = -m_b m_a (a != b), m_a^2 = 1; returns the sign and the sorted result.
static int bare_product(std::vector<int> seq, std::vector<int>& out) {
  int sign = 1;
  // Bubble sort counting swaps, then cancel equal neighbours.
  for (std::size_t i = 0; i < seq.size(); ++i)
    for (std::size_t j = 0; j + 1 < seq.size() - i; ++j)
      if (seq[j] > seq[j + 1]) {
        std::swap(seq[j], seq[j + 1]);
        sign = -sign;
      }
  out.clear();
  for (std::size_t i = 0; i < seq.size(); ++i) {
    if (i + 1 < seq.size() && seq[i] == seq[i + 1]) {
      ++i;
      continue;
    }
    out.push_back(seq[i]);
  }
  return sign;
}
static cd ipow(int k) {
  static const cd p[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  return p[((k % 4) + 4) % 4];
}
static int pairs(int w) { return w * (w - 1) / 2; }

template <int W>
static Monomial<W> key_of(const std::vector<int>& s) {
  Monomial<W> k;
  for (int x : s) k.set(static_cast<std::uint32_t>(x));
  return k;
}

// Whether the bit-column scan (algebra's scan_columns over BitColumns) marks P
// as anticommuting with G; P is the 64th term of its column word, to see bit 63.
template <typename Algebra, int W>
static bool scanned_anticommutes(const Monomial<W>& p, const Monomial<W>& g, int slots) {
  BitColumns bits(slots, Algebra::kParityColumn);
  const Monomial<W> blank;
  for (int i = 0; i < 63; ++i) bits.append<W>(blank.words.data());
  bits.append<W>(p.words.data());
  std::vector<int> columns;
  Algebra::scan_columns(g, slots, columns);
  std::uint64_t x = 0;
  for (const int c : columns) x ^= bits.word(c, 0);
  return (x >> 63) & 1;
}

template <int W>
static void majorana_against_reference(int slots, std::mt19937& rng) {
  std::bernoulli_distribution coin(0.3);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int> P, G;
    for (int s = 0; s < slots; ++s) {
      if (coin(rng)) P.push_back(s);
      if (coin(rng)) G.push_back(s);
    }
    std::vector<int> PG, GP, R;
    std::vector<int> cat = P;
    cat.insert(cat.end(), G.begin(), G.end());
    const int s1 = bare_product(cat, PG);
    cat = G;
    cat.insert(cat.end(), P.begin(), P.end());
    const int s2 = bare_product(cat, GP);
    // Hermitian basis: M = i^{C(w,2)} m. Anticommute iff M_P M_G = -M_G M_P.
    const bool anti = s1 == -s2;
    // i M_P M_G = i * i^{C(p)+C(g)} * s1 * m_R = i^{1+C(p)+C(g)-C(r)} * s1 * M_R
    const cd phase = ipow(1 + pairs(P.size()) + pairs(G.size()) - pairs(PG.size())) * double(s1);
    const MajoranaAlgebra::Generator<W> gen(key_of<W>(G));
    const int got = rotation_sign<MajoranaAlgebra>(key_of<W>(P), gen);
    CHECK(scanned_anticommutes<MajoranaAlgebra>(key_of<W>(P), key_of<W>(G), slots) == anti);
    if (!anti) {
      CHECK(got == 0);
    } else {
      CHECK(std::abs(phase.imag()) < 1e-12);
      CHECK(got == (phase.real() > 0 ? 1 : -1));
    }
  }
}

// --- Pauli reference: single-qubit products ----------------------------------
// letter 0=I 1=X 2=Y 3=Z; XY = iZ etc.
static cd letter_product(int a, int b, int& out) {
  if (a == 0) {
    out = b;
    return 1;
  }
  if (b == 0) {
    out = a;
    return 1;
  }
  if (a == b) {
    out = 0;
    return 1;
  }
  out = 6 - a - b;
  return ((b - a + 3) % 3 == 1) ? cd(0, 1) : cd(0, -1);
}
template <int W>
static Monomial<W> pauli_key(const std::vector<int>& letters) {
  Monomial<W> k;
  for (std::size_t q = 0; q < letters.size(); ++q) {
    const int l = letters[q];
    if (l == 1 || l == 3) k.set(2 * q);
    if (l == 2 || l == 3) k.set(2 * q + 1);
  }
  return k;
}
template <int W>
static void pauli_against_reference(int qubits, std::mt19937& rng) {
  std::uniform_int_distribution<int> letter(0, 3);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int> P(qubits), G(qubits), R(qubits);
    for (int q = 0; q < qubits; ++q) P[q] = letter(rng), G[q] = letter(rng);
    cd pg = 1, gp = 1;
    int tmp;
    for (int q = 0; q < qubits; ++q) {
      pg *= letter_product(P[q], G[q], R[q]);
      gp *= letter_product(G[q], P[q], tmp);
    }
    const bool anti = std::abs(pg + gp) < 1e-12;
    const PauliAlgebra::Generator<W> gen(pauli_key<W>(G));
    const int got = rotation_sign<PauliAlgebra>(pauli_key<W>(P), gen);
    CHECK(scanned_anticommutes<PauliAlgebra>(pauli_key<W>(P), pauli_key<W>(G), 2 * qubits) == anti);
    CHECK((pauli_key<W>(P) ^ pauli_key<W>(G)) == pauli_key<W>(R));
    if (!anti) {
      CHECK(got == 0);
    } else {
      const cd phase = cd(0, 1) * pg;
      CHECK(got == (phase.real() > 0 ? 1 : -1));
    }
  }
}

static void test_reference_overlap() {
  // Majorana: i m0 m1 = -Z0, so <vac| M_{01} |vac> = -1 and <1| .. |1> = +1.
  Monomial<1> occ;
  CHECK(MajoranaAlgebra::reference_overlap(key_of<1>({0, 1}), occ) == -1.0);
  occ.set(0);
  CHECK(MajoranaAlgebra::reference_overlap(key_of<1>({0, 1}), occ) == 1.0);
  // M_{0123} = Z0 Z1; with mode 0 occupied: -1.
  CHECK(MajoranaAlgebra::reference_overlap(key_of<1>({0, 1, 2, 3}), occ) == -1.0);
  CHECK(MajoranaAlgebra::reference_overlap(key_of<1>({0, 2}), occ) == 0.0);
  // Pauli Z0 Z1 (slots 0,1,2,3) with qubit 0 in |1>: -1.
  CHECK(PauliAlgebra::reference_overlap(key_of<1>({0, 1, 2, 3}), occ) == -1.0);
  CHECK(PauliAlgebra::reference_overlap(key_of<1>({0}), occ) == 0.0);
}

// Column: contents survive growth across the mapping threshold, copies are
// independent, shrinking and release work.
static void test_column() {
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

// Bit columns: runs appended at once (transposed 64 terms at a time) equal the
// same terms appended one by one, bit for bit, at every offset in a word.
static void test_bit_columns() {
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
static void test_sparse_columns() {
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

// Store and hash index against a plain list: every key found at its slot,
// absent keys absent, across index rebuilds, batched appends and truncation.
static void test_store_and_ceiling() {
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

// --- Graph layers: the byte encoding and the replay kernels ------------------
// A plain entry list (the reference) and its encoded ShardLayer, for one shard
// or split over several.
struct PlainEntry {
  int kind;                // 0 cos, 1 pair (or birth), 2 half
  std::uint32_t a, shard;  // a in shard
  std::uint32_t other, b;  // b in shard other
  int sign;
};

// Encodes shard `self`'s entries.
static ShardLayer encode(const std::vector<PlainEntry>& entries, std::uint32_t self, std::uint32_t shards,
                         std::size_t limit) {
  ShardLayer layer;
  SectionWriter writer;
  writer.start();
  for (const auto& e : entries)
    if (e.kind == 0 && e.shard == self) writer.cos(e.a);
  writer.append_to(layer.bytes, layer.cos);
  for (std::uint32_t o = 0; o < shards; ++o) {
    Part part;
    part.shard = o;
    writer.start(slot_width(limit));
    for (const auto& e : entries)
      if (e.kind == 1 && e.shard == self && e.other == o) writer.pair(e.a, e.b, e.sign);
    writer.append_to(layer.bytes, part.pairs);
    writer.start(slot_width(limit));
    for (const auto& e : entries)
      if (e.kind == 2 && e.shard == self && e.other == o) writer.pair(e.a, e.b, e.sign);
    writer.append_to(layer.bytes, part.halves);
    if (part.births.count + part.pairs.count + part.halves.count) layer.parts.push_back(part);
  }
  SectionWriter::finish(layer.bytes);
  return layer;
}

// Random layers over `shards` shards of `n` slots each: every slot in at most
// one entry a layer.
static std::vector<std::vector<PlainEntry>> random_layers(std::mt19937& rng, std::uint32_t shards, std::uint32_t n,
                                                          int layers) {
  std::vector<std::vector<PlainEntry>> out;
  for (int l = 0; l < layers; ++l) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> slots;  // (shard, slot)
    for (std::uint32_t s = 0; s < shards; ++s)
      for (std::uint32_t i = 0; i < n; ++i) slots.emplace_back(s, i);
    std::shuffle(slots.begin(), slots.end(), rng);
    std::vector<PlainEntry> entries;
    for (std::size_t e = 0; e + 1 < slots.size(); e += 2) {
      const int kind = static_cast<int>(rng() % 4);
      if (kind == 3) continue;  // commuting: untouched
      const auto [sa, a] = slots[e];
      const auto [sb, b] = slots[e + 1];
      const int sign = rng() % 2 ? 1 : -1;
      if (kind == 0) {
        entries.push_back({0, a, sa, 0, 0, 0});
        entries.push_back({0, b, sb, 0, 0, 0});
      } else {
        entries.push_back({kind, a, sa, sb, b, sign});
      }
    }
    std::sort(entries.begin(), entries.end(), [](const PlainEntry& x, const PlainEntry& y) { return x.a < y.a; });
    out.push_back(entries);
  }
  return out;
}

// One layer of the plain list forward, or backwards on (c, lambda) with the
// recorded inputs: the textbook formulas, written independently of rotation.h.
static void plain_forward(const std::vector<PlainEntry>& entries, std::vector<std::vector<double>>& c, double phi) {
  const double cs = std::cos(phi), sn = std::sin(phi);
  for (const auto& e : entries) {
    double& x = c[e.shard][e.a];
    if (e.kind == 0) {
      x *= cs;
      continue;
    }
    double& y = c[e.other][e.b];
    const double xa = x, yb = y;
    if (e.kind == 1) {
      x = cs * xa - e.sign * sn * yb;
      y = cs * yb + e.sign * sn * xa;
    } else {
      x = cs * xa;
      y = yb + e.sign * sn * xa;
    }
  }
}

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

// The shard ceiling through the propagator's own path, with 8-bit shard
// indices (255 terms a shard) and two shards: a build or propagation that
// would cross it is refused, and the propagator is left as it was and usable.
static void test_propagator_ceiling() {
  setenv("monoprop_NUM_THREADS", "2", 1);
  Config config;
  config.family = Family::Pauli;
  config.num_modes = 6;
  config.initial_operator = {Term{{0, 1}, 1.0}};  // Z0
  config.truncation.cutoff = 12;
  using Small = Propagator<PauliAlgebra, 1, std::uint8_t>;
  // Every qubit rotated by X and Y, then ZZ and XX on neighbours, six times:
  // 4094 terms at the end, far past two shards of 255.
  CircuitSpec big;
  auto add = [&](std::vector<std::uint32_t> slots) {
    big.layers.push_back({std::move(slots), 0.5, big.n_parameters++, big.n_gates++});
  };
  for (int rep = 0; rep < 6; ++rep)
    for (std::uint32_t q = 0; q < 6; ++q) {
      add({2 * q});
      add({2 * q + 1});
      if (q + 1 < 6) {
        add({2 * q, 2 * q + 1, 2 * q + 2, 2 * q + 3});
        add({2 * q, 2 * q + 2});
      }
    }
  CircuitSpec small;
  small.layers.push_back({{0}, 0.5, 0, 0});
  small.n_parameters = small.n_gates = 1;

  Small p(config, {}, 6, Family::Pauli);
  CHECK(p.num_threads() == 2);
  p.build_graph(small, std::nullopt, std::nullopt);
  const std::vector<double> theta = {0.3};
  const double value = p.expectation_value(theta, 0.0, nullptr);
  const std::size_t size = p.size();
  const auto graph = p.graph_size();
  bool refused = false;
  try {
    p.build_graph(big, std::nullopt, std::nullopt);
  } catch (const ShardCeilingError& e) {
    refused = std::string(e.what()).find("at most 255") != std::string::npos;
  }
  CHECK(refused);
  CHECK(p.valid() && p.size() == size && p.graph_size() == graph && p.graph_layers() == 1);
  CHECK(p.expectation_value(theta, 0.0, nullptr) == value);

  Small q(config, {}, 6, Family::Pauli);
  const std::vector<double> angles(static_cast<std::size_t>(big.n_parameters), 0.4);
  refused = false;
  try {
    q.propagate(big, angles, std::nullopt);
  } catch (const ShardCeilingError&) {
    refused = true;
  }
  CHECK(refused);
  CHECK(q.valid() && q.size() == 1 && q.expectation_value({}, 0.0, nullptr) == 1.0);
  q.propagate(small, theta, std::nullopt);  // still usable: exp(+i 0.3 * 0.5 X0) takes <Z0> to cos 0.3
  CHECK(q.size() == 2 && std::abs(q.expectation_value({}, 0.0, nullptr) - std::cos(0.3)) < 1e-15);
  unsetenv("monoprop_NUM_THREADS");
}

// An interrupt check that says stop at its k-th question (asked at every poll:
// interval 0, stride 1): a build or propagation throws Interrupted and leaves
// the propagator as it was, a replay changes nothing; all stay usable.
static void test_interrupt() {
  setenv("monoprop_NUM_THREADS", "2", 1);
  Config config;
  config.family = Family::Pauli;
  config.num_modes = 4;
  config.initial_operator = {Term{{0, 1}, 1.0}};  // Z0
  config.truncation.cutoff = 8;
  CircuitSpec circuit;
  for (int rep = 0; rep < 3; ++rep)
    for (std::uint32_t q = 0; q < 4; ++q) {
      circuit.layers.push_back({{2 * q}, 0.5, circuit.n_parameters++, circuit.n_gates++});
      if (q + 1 < 4) circuit.layers.push_back({{2 * q, 2 * q + 3}, 0.5, circuit.n_parameters++, circuit.n_gates++});
    }
  const std::vector<double> theta(static_cast<std::size_t>(circuit.n_parameters), 0.4);
  int asked = 0, stop_at = 0;
  auto check = [&] { return ++asked == stop_at; };
  auto interrupted = [&](int k, auto&& call) {
    asked = 0;
    stop_at = k;
    try {
      call();
    } catch (const Interrupted&) {
      return true;
    }
    return false;
  };

  using P = Propagator<PauliAlgebra, 1>;
  P p(config, {}, 4, Family::Pauli), reference(config, {}, 4, Family::Pauli);
  p.set_interrupt_check(check, std::chrono::steady_clock::duration::zero(), 1);
  p.build_graph(circuit, theta, std::nullopt);  // never stopped: stop_at = 0
  reference.build_graph(circuit, theta, std::nullopt);
  const std::vector<double> both(2 * theta.size(), 0.3);
  const std::size_t size = p.size();
  const double value = p.expectation_value(theta, 0.0, nullptr);
  CHECK(interrupted(5, [&] { p.build_graph(circuit, both, std::nullopt); }));
  CHECK(p.valid() && p.size() == size && p.graph_layers() == circuit.layers.size());
  CHECK(p.expectation_value(theta, 0.0, nullptr) == value);
  std::vector<double> gradient, expected;
  CHECK(interrupted(3, [&] { p.expectation_value_and_gradient(theta, gradient, 0.0, nullptr); }));
  CHECK(p.valid() && p.expectation_value_and_gradient(theta, gradient, 0.0, nullptr) ==
                         reference.expectation_value_and_gradient(theta, expected, 0.0, nullptr));
  CHECK(gradient == expected);
  p.build_graph(circuit, both, std::nullopt);  // usable: as if never interrupted
  reference.build_graph(circuit, both, std::nullopt);
  CHECK(p.size() == reference.size() &&
        p.expectation_value(both, 0.0, nullptr) == reference.expectation_value(both, 0.0, nullptr));

  P q(config, {}, 4, Family::Pauli), fresh(config, {}, 4, Family::Pauli);
  q.set_interrupt_check(check, std::chrono::steady_clock::duration::zero(), 1);
  CHECK(interrupted(7, [&] { q.propagate(circuit, theta, std::nullopt); }));
  CHECK(q.valid() && q.size() == 1 && q.expectation_value({}, 0.0, nullptr) == 1.0);
  q.propagate(circuit, theta, std::nullopt);  // stop_at 7 passed: runs to the end
  fresh.propagate(circuit, theta, std::nullopt);
  CHECK(q.size() == fresh.size() && q.expectation_value({}, 0.0, nullptr) == fresh.expectation_value({}, 0.0, nullptr));
  unsetenv("monoprop_NUM_THREADS");
}

// A thread count whose empty shards would pass the memory budget is refused
// at construction with MemoryBudgetError, before the shards exist: the
// resident memory does not grow by their size. 999999 threads would take
// 48 TB (lists of lookups for every shard in every shard); 64 fit.
static void test_thread_count_past_budget() {
  const std::uint64_t held = resident_bytes();
  const std::string limit = std::to_string(held + (std::uint64_t{64} << 20));
  setenv("monoprop_MEMORY_LIMIT", limit.c_str(), 1);
  setenv("monoprop_NUM_THREADS", "999999", 1);
  Config config;
  config.family = Family::Pauli;
  config.num_modes = 4;
  config.initial_operator = {Term{{0, 1}, 1.0}};  // Z0
  config.truncation.cutoff = 8;
  using P = Propagator<PauliAlgebra, 1>;
  std::string message;
  try {
    P p(config, {}, 4, Family::Pauli);
  } catch (const MemoryBudgetError& e) {
    message = e.what();
  }
  auto has = [&](const char* part) { return message.find(part) != std::string::npos; };
  CHECK(has("monoprop_NUM_THREADS=999999") && has("999999 shards") && has("48.0 TB"));
  CHECK(has("monoprop_MEMORY_LIMIT") && has("fewer threads") && has("Nothing was allocated"));
  CHECK(resident_bytes() < held + (std::uint64_t{16} << 20));
  // The message names the largest count that fits (about 1160 in 64 MB); 64 constructs.
  const std::size_t at = message.find("at most ");
  const long long most = at == std::string::npos ? 0 : std::stoll(message.substr(at + 8));
  CHECK(most >= 64 && most < 999999);
  setenv("monoprop_NUM_THREADS", "64", 1);
  bool built = false;
  try {
    P p(config, {}, 4, Family::Pauli);
    built = p.num_threads() == 64 && p.size() == 1;
  } catch (const MemoryBudgetError&) {
  }
  CHECK(built);
  // The bound is T (b + 2T v): from the T = 1 and T = 2 values, T^2 grows it.
  const std::uint64_t one = P::empty_shards_bytes(1, 1, 8), two = P::empty_shards_bytes(2, 1, 8);
  CHECK(P::empty_shards_bytes(999999, 1, 8) > std::uint64_t{47} * 1000000000000);
  CHECK(two > 2 * one &&
        P::empty_shards_bytes(std::uint64_t{1} << 31, 1, 8) == std::numeric_limits<std::uint64_t>::max());
  unsetenv("monoprop_NUM_THREADS");
  unsetenv("monoprop_MEMORY_LIMIT");
}

// The default memory budget: MemAvailable parsed from /proc/meminfo's text
// (kB, on its own line), then resident + 80% of it, at most 90% of the
// physical memory; the message names where the limit comes from.
static void test_memory_budget_default() {
  const std::string meminfo =
      "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   12000000 kB\n"
      "Buffers:          100 kB\nSwapCached:   5 kB\n";
  CHECK(meminfo_available(meminfo) == std::uint64_t{12000000} * 1024);
  CHECK(meminfo_available("MemTotal: 5 kB\n") == 0);
  CHECK(meminfo_available("XMemAvailable: 7 kB\n") == 0);  // a line of its own only
  CHECK(meminfo_available("A: 1 kB\nMemAvailable: 7 kB\n") == 7 * 1024);
  MemoryBudget budget(std::uint64_t{1} << 40);  // a given limit: the default is not read
  CHECK(budget.limit() == std::uint64_t{1} << 40 && budget.given());
  CHECK(budget.describe().find("memory_limit=1099511627776") != std::string::npos);
  const std::uint64_t GB = 1000000000;
  unsetenv("monoprop_MEMORY_LIMIT");
  budget = MemoryBudget();  // the default, whose readings the test sets
  budget.set_default(GB, 10 * GB, 24 * GB);
  CHECK(budget.limit() == 9 * GB);  // 1 GB held + 80% of 10 GB
  const std::string text = budget.describe();
  CHECK(text.find("memory budget of 9.0 GB") == 0 && text.find("1.0 GB this process held") != std::string::npos &&
        text.find("80% of the 10.0 GB then available") != std::string::npos &&
        text.find("monoprop_MEMORY_LIMIT") != std::string::npos);
  budget.set_default(GB, 30 * GB, 24 * GB);  // capped at 90% of the physical memory
  CHECK(budget.limit() == 24 * GB / 10 * 9 && budget.describe().find("90% of the physical") != std::string::npos);
  budget.set_default(GB, 0, 24 * GB);  // available unknown
  CHECK(budget.limit() == 24 * GB / 10 * 9);
  budget.set_default(0, 0, 0);  // nothing known: no budget
  CHECK(budget.limit() == ~std::uint64_t{0});
  // This machine: the process fits now.
  MemoryBudget here;
  CHECK(available_bytes() > 0 && here.limit() > resident_bytes());
}

// Routing::span against the size of the set of all xor combinations (2^span);
// then the strict parsing of the routing variables, which a serial run checks too.
static void test_routing(std::mt19937& rng) {
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::uint64_t> shifts(rng() % 6);
    for (auto& s : shifts) s = rng() & 0x3F;  // few bits: dependent sets are common
    std::vector<std::uint64_t> reach{0};
    for (const std::uint64_t s : shifts) {
      const std::size_t n = reach.size();
      for (std::size_t i = 0; i < n; ++i) reach.push_back(reach[i] ^ s);
    }
    std::sort(reach.begin(), reach.end());
    reach.erase(std::unique(reach.begin(), reach.end()), reach.end());
    CHECK(std::size_t{1} << Routing::span(shifts) == reach.size());
  }
  const mpi::Comm serial;
  auto refused = [&](const char* variable, const char* value) {
    setenv(variable, value, 1);
    bool threw = false;
    try {
      Routing(serial, 2, 8);
    } catch (const UsageError& e) {
      threw = std::string(e.what()).find(variable) != std::string::npos;
    }
    unsetenv(variable);
    return threw;
  };
  CHECK(refused("monoprop_ROUTING", "Linear"));
  CHECK(refused("monoprop_ROUTING", ""));
  CHECK(refused("monoprop_ROUTING_SEED", "-1"));
  CHECK(refused("monoprop_ROUTING_SEED", "18446744073709551616"));  // 2^64
  CHECK(!refused("monoprop_ROUTING", "splitmix"));
  CHECK(!refused("monoprop_ROUTING_SEED", "18446744073709551615"));
  const Routing one(serial, 3, 8);
  CHECK(one.ranks() == 1 && one.bits() == 0);
  for (std::uint64_t q = 0; q < 1000; ++q) CHECK(one.shard_of(q * 0x9E3779B97F4A7C15ULL) < 3);
}

// The team's barrier against what a barrier promises: after it, every
// thread sees what every other wrote before it, phase after phase, also with
// more threads than cores (the waiters then sleep); and a thread that fails
// takes the whole team out at its next barrier, its exception rethrown.
static void test_team_barrier() {
  for (const int threads : {2, 3, 8}) {
    std::vector<int> written(static_cast<std::size_t>(threads), -1);
    std::vector<int> wrong(static_cast<std::size_t>(threads), 0);
    Team::run(threads, false, [&](int t, Team& team) {
      for (int phase = 0; phase < 2000; ++phase) {
        written[static_cast<std::size_t>(t)] = phase;
        team.sync(t);
        for (const int w : written) wrong[static_cast<std::size_t>(t)] += w != phase;
        team.sync(t);
      }
    });
    for (const int w : wrong) CHECK(w == 0);
    bool rethrown = false;
    std::vector<int> phases(static_cast<std::size_t>(threads), 0);
    try {
      Team::run(threads, false, [&](int t, Team& team) {
        for (int phase = 0; phase < 100; ++phase) {
          if (t == 1 && phase == 7) throw std::runtime_error("thread 1 stops");
          phases[static_cast<std::size_t>(t)] = phase;
          team.sync(t);
        }
      });
    } catch (const std::runtime_error& e) {
      rethrown = std::string(e.what()) == "thread 1 stops";
    }
    CHECK(rethrown);
    for (int t = 0; t < threads; ++t) CHECK(phases[static_cast<std::size_t>(t)] == (t == 1 ? 6 : 7));
  }
}

// --- Reach (reach.h) -----------------------------------------------------------
// ReachSpace walked back through random rotations and quarter turns of 3
// modes, against the set of monomials from which some choice of branches (P or
// P xor G at each rotation; the quarter turn's image at each turn) ends fully
// paired, enumerated over all 64 monomials.
template <typename Algebra, bool Majorana>
static void reach_space_against_enumeration(std::mt19937& rng) {
  constexpr int modes = 3, slots = 2 * modes;
  constexpr unsigned count = 1u << slots;
  auto key = [](unsigned bits) {
    Monomial<1> k;
    k.words[0] = bits;
    return k;
  };
  for (int trial = 0; trial < 300; ++trial) {
    struct Move {
      bool turn;
      unsigned key;
    };
    std::vector<Move> moves(1 + rng() % 7);
    for (Move& m : moves) m = {rng() % 3 == 0, 1 + static_cast<unsigned>(rng() % (count - 1))};
    std::vector<bool> reach(count);
    for (unsigned p = 0; p < count; ++p) {
      bool paired = true;
      for (int q = 0; q < modes; ++q) paired = paired && ((p >> (2 * q)) & 1) == ((p >> (2 * q + 1)) & 1);
      reach[p] = paired;
    }
    ReachSpace<1> space = ReachSpace<1>::paired(modes);
    for (std::size_t i = moves.size(); i-- > 0;) {
      const Move m = moves[i];
      std::vector<bool> before(count);
      for (unsigned p = 0; p < count; ++p) {
        const bool anti = scanned_anticommutes<Algebra>(key(p), key(m.key), slots);
        before[p] = m.turn ? reach[anti ? p ^ m.key : p] : reach[p] || reach[p ^ m.key];
      }
      reach = before;
      if (m.turn)
        space.turn(key(m.key), anticommutation_vector<Majorana>(key(m.key), slots));
      else
        space.add(key(m.key));
    }
    bool same = true;
    for (unsigned p = 0; p < count; ++p) same = same && space.contains(key(p)) == reach[p];
    CHECK(same);
    if (space.everything()) CHECK(std::all_of(reach.begin(), reach.end(), [](bool r) { return r; }));
  }
}

// The mean weight of a tally: x^2-weighed, to 16 bits, from the branches
// counted where taking some back cancels the sums.
static void test_reach_tally() {
  ReachTally none;
  CHECK(none.reach() == 1.0);
  ReachTally t;
  t.add(3.0, 0.2);
  t.add(4.0, 1.0);
  const double mean = (9.0 * 0.04 + 16.0) / 25.0;
  CHECK(std::abs(t.reach() - mean) <= mean * 0x1p-16);
  CHECK(t.count == 2 && t.sum == 7.0 && std::abs(t.reached - (3.0 * std::sqrt(0.2) + 4.0)) < 1e-15);
  t.add(4.0, 1.0, -1.0);  // taken back: the rest is the branch of weight 0.2
  CHECK(std::abs(t.reach() - 0.04) <= 0.04 * 0x1p-16);
  ReachTally cancelled;  // a branch of weight 0.2 beside a large one, taken back a few ulps off
  cancelled.add(1.0, 0.2);
  cancelled.add(1e3, 1.0);
  cancelled.add(1e3 * (1.0 + 1e-12), 1.0, -1.0);
  // The net sums keep 1 part in 1e6 of what was counted, and that only to a few
  // bits: the mean of the branches counted stands in for it.
  const double counted = (0.04 + 1e6) / (1.0 + 1e6);
  CHECK(std::abs(cancelled.reach() - counted) <= counted * 0x1p-16);
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

int main() {
  std::mt19937 rng(12345);
  majorana_against_reference<1>(12, rng);
  majorana_against_reference<2>(128, rng);
  majorana_against_reference<4>(200, rng);
  pauli_against_reference<1>(5, rng);
  pauli_against_reference<2>(64, rng);
  pauli_against_reference<4>(100, rng);
  test_reference_overlap();
  test_column();
  test_bit_columns();
  test_sparse_columns();
  test_store_and_ceiling();
  test_codec_round_trip(rng);
  test_replay_against_plain(rng);
  test_propagator_ceiling();
  test_interrupt();
  test_thread_count_past_budget();
  test_memory_budget_default();
  test_routing(rng);
  test_team_barrier();
  reach_space_against_enumeration<PauliAlgebra, false>(rng);
  reach_space_against_enumeration<MajoranaAlgebra, true>(rng);
  test_reach_tally();
  test_dark_cos_entries(rng);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
