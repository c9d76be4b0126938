// C++ unit tests for the algebras, the store and the graph replay, each
// against a slow, plainly written reference. Prints "N passed, N failed".
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "monoprop/algebra.h"
#include "monoprop/graph.h"
#include "monoprop/propagator.h"
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

static void test_store_and_ceiling() {
  Store<2> store;
  std::mt19937 rng(7);
  std::vector<Monomial<2>> added;
  for (int i = 0; i < 5000; ++i) {
    Monomial<2> k;
    k.words[0] = rng();
    k.words[1] = rng() & 0xFF;
    if (store.find(k) != Store<2>::kEmpty) continue;
    store.reserve_for(1);
    CHECK(store.append(k) == added.size());
    added.push_back(k);
  }
  bool all_found = true;
  for (std::size_t i = 0; i < added.size(); ++i) all_found &= store.find(added[i]) == i;
  CHECK(all_found);
  store.truncate(100);
  CHECK(store.size() == 100);
  CHECK(store.find(added[150]) == Store<2>::kEmpty);
  CHECK(store.find(added[50]) == 50);

  // The same code path with an 8-bit index: 255 terms fit, the 256th is refused
  // before anything changes.
  Store<1, std::uint8_t> small;
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

// Replay gradient against central finite differences on a hand-made graph.
static void test_replay_gradient() {
  Graph g(3);
  g[0] = {0, 0, 2.0, {0, 1}, {1}, {0, 2}, {-1}, {}};
  g[1] = {1, 1, -1.4, {1, 2}, {-1}, {}, {}, {0}};
  g[2] = {0, 2, 0.6, {0, 2}, {1}, {1, 3}, {1}, {}};
  const std::vector<double> c0 = {0.7, -0.3, 0.0, 0.2};
  const std::vector<double> w = {1.0, -0.5, 0.25, 2.0};
  auto value = [&](const std::vector<double>& th) {
    std::vector<double> c = c0;
    replay_forward(g, th.data(), c, nullptr);
    double f = 0;
    for (std::size_t i = 0; i < c.size(); ++i) f += w[i] * c[i];
    return f;
  };
  const std::vector<double> theta = {0.37, -0.81};
  std::vector<double> c = c0, tape, grad(2, 0.0);
  replay_forward(g, theta.data(), c, &tape);
  std::vector<double> state;
  for (std::size_t i = 0; i < c.size(); ++i) state.insert(state.end(), {c[i], w[i]});
  replay_adjoint(g, theta.data(), tape, state.data(), grad.data());
  // The reverse sweep rewinds the coefficients to where the forward one began.
  for (std::size_t i = 0; i < c.size(); ++i) CHECK(std::abs(state[2 * i] - c0[i]) < 1e-12);
  for (int p = 0; p < 2; ++p) {
    auto hi = theta, lo = theta;
    hi[p] += 1e-6;
    lo[p] -= 1e-6;
    CHECK(std::abs((value(hi) - value(lo)) / 2e-6 - grad[p]) < 1e-7);
  }
}

// A graph split across two shards (cross entries where the slots land apart)
// replays, forward and backward, exactly as the same graph on one store.
static void test_cross_shard_replay(std::mt19937& rng) {
  const std::uint32_t n = 40;
  std::vector<int> shard_of(n);
  std::vector<std::uint32_t> local(n), count(2, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    shard_of[i] = static_cast<int>(rng() % 2);
    local[i] = count[shard_of[i]]++;
  }
  Graph whole;
  std::vector<Graph> split(2);
  for (int l = 0; l < 6; ++l) {
    std::vector<std::uint32_t> order(n);
    for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    GraphLayer layer;
    layer.parameter = l % 3;
    layer.frequency = 0.5 + l;
    for (auto& g : split) g.push_back(layer);
    // Disjoint slots: pairs, halves, then cos-only entries.
    for (std::uint32_t e = 0; e + 1 < n; e += 2) {
      const std::uint32_t a = order[e], b = order[e + 1];
      const auto sign = static_cast<std::int8_t>(rng() % 2 ? 1 : -1);
      const int kind = static_cast<int>(rng() % 3);
      GraphLayer& part = split[shard_of[a]].back();
      const bool apart = shard_of[a] != shard_of[b];
      const std::uint32_t cross[3] = {local[a], static_cast<std::uint32_t>(shard_of[b]), local[b]};
      // A pair or a half: in the whole graph, and in a's shard (a cross entry
      // when b lies in the other shard).
      auto add = [&](auto GraphLayer::* flat, auto GraphLayer::* signs, auto GraphLayer::* cross_flat,
                     auto GraphLayer::* cross_signs) {
        (layer.*flat).insert((layer.*flat).end(), {a, b});
        (layer.*signs).push_back(sign);
        if (apart) {
          (part.*cross_flat).insert((part.*cross_flat).end(), cross, cross + 3);
          (part.*cross_signs).push_back(sign);
        } else {
          (part.*flat).insert((part.*flat).end(), {local[a], local[b]});
          (part.*signs).push_back(sign);
        }
      };
      if (kind == 0) {
        add(&GraphLayer::pairs, &GraphLayer::pair_signs, &GraphLayer::cross_pairs, &GraphLayer::cross_pair_signs);
      } else if (kind == 1) {
        add(&GraphLayer::halves, &GraphLayer::half_signs, &GraphLayer::cross_halves, &GraphLayer::cross_half_signs);
      } else {
        layer.cos_only.insert(layer.cos_only.end(), {a, b});
        split[shard_of[a]].back().cos_only.push_back(local[a]);
        split[shard_of[b]].back().cos_only.push_back(local[b]);
      }
    }
    whole.push_back(layer);
  }
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> c0(n), w(n);
  for (std::uint32_t i = 0; i < n; ++i) c0[i] = u(rng), w[i] = u(rng);
  const std::vector<double> theta = {0.3, -0.7, 1.1};
  for (const double pare : {0.0, 0.05}) {
    std::vector<double> c = c0, tape, grad(3, 0.0), state;
    replay_forward(whole, theta.data(), c, &tape, pare);
    for (std::uint32_t i = 0; i < n; ++i) state.insert(state.end(), {c[i], w[i]});
    replay_adjoint(whole, theta.data(), tape, state.data(), grad.data(), pare);

    std::vector<std::vector<double>> sc(2), st(2), tapes(2);
    for (std::uint32_t i = 0; i < n; ++i) sc[shard_of[i]].push_back(c0[i]);
    for (int s = 0; s < 2; ++s) {
      std::size_t len = 0;
      for (const GraphLayer& layer : split[s]) len += tape_length(layer, pare > 0.0);
      tapes[s].resize(len);
    }
    double* cs[2] = {sc[0].data(), sc[1].data()};
    double* tp[2] = {tapes[0].data(), tapes[1].data()};
    for (std::size_t l = 0; l < whole.size(); ++l) {
      const double phi = whole[l].frequency * theta[whole[l].parameter];
      for (int s = 0; s < 2; ++s) tp[s] = forward_layer(split[s][l], std::cos(phi), std::sin(phi), cs, s, tp[s], pare);
    }
    bool same = true;
    for (std::uint32_t i = 0; i < n; ++i) same &= std::abs(sc[shard_of[i]][local[i]] - c[i]) < 1e-14;
    CHECK(same);
    for (std::uint32_t i = 0; i < n; ++i)
      st[shard_of[i]].insert(st[shard_of[i]].end(), {sc[shard_of[i]][local[i]], w[i]});
    double* ss[2] = {st[0].data(), st[1].data()};
    const double* back[2] = {tapes[0].data() + tapes[0].size(), tapes[1].data() + tapes[1].size()};
    std::vector<double> split_grad(3, 0.0);
    for (std::size_t l = whole.size(); l-- > 0;) {
      const double phi = whole[l].frequency * theta[whole[l].parameter];
      double d = 0.0;
      for (int s = 0; s < 2; ++s) d += adjoint_layer(split[s][l], std::cos(phi), std::sin(phi), ss, s, back[s], pare);
      split_grad[whole[l].parameter] += whole[l].frequency * d;
    }
    for (int p = 0; p < 3; ++p) CHECK(std::abs(split_grad[p] - grad[p]) < 1e-12);
    bool rewound = true;  // both sweeps rewind to the same start
    for (std::uint32_t i = 0; i < n; ++i) rewound &= std::abs(st[shard_of[i]][2 * local[i]] - c0[i]) < 1e-12;
    CHECK(rewound);
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

int main() {
  std::mt19937 rng(12345);
  majorana_against_reference<1>(12, rng);
  majorana_against_reference<2>(128, rng);
  majorana_against_reference<4>(200, rng);
  pauli_against_reference<1>(5, rng);
  pauli_against_reference<2>(64, rng);
  pauli_against_reference<4>(100, rng);
  test_reference_overlap();
  test_store_and_ceiling();
  test_replay_gradient();
  test_cross_shard_replay(rng);
  test_propagator_ceiling();
  test_routing(rng);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
