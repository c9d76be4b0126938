// The two algebras (algebra.h) against slow references: Majorana products
// by sorting index lists, Pauli products letter by letter; and the
// reference-state overlaps.
#include "monoprop/algebra.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

#include "cpp/algebra_reference.h"
#include "cpp/check.h"

using namespace monoprop;
using namespace monoprop_test;

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

TEST(test_reference_overlap) {
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

// One generator through every width, seeded as when these tests were one file.
TEST(test_algebras_against_references) {
  std::mt19937 rng(12345);
  majorana_against_reference<1>(12, rng);
  majorana_against_reference<2>(128, rng);
  majorana_against_reference<4>(200, rng);
  pauli_against_reference<1>(5, rng);
  pauli_against_reference<2>(64, rng);
  pauli_against_reference<4>(100, rng);
}
