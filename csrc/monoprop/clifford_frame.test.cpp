// The Clifford frame (clifford_frame.h) against explicit matrices: on three
// qubits or modes, every monomial is an 8 x 8 matrix (Pauli strings as
// tensor products; Majoranas by Jordan-Wigner, M_S = i^{C(w,2)} m_S), a
// quarter turn exp(+i k pi/4 C) is cos(k pi/4) + i sin(k pi/4) C, and after
// turns U_1, ..., U_n the frame must send every monomial Y to V^dagger Y V
// (V = U_1 ... U_n: the operand's terms pass through each turn in order) and
// back by V X V^dagger; its other read-outs must agree with those. Wider
// frames, where no matrix fits, are checked against the rule of one turn
// and against the algebra's products (a frame maps products to products).
#include "monoprop/clifford_frame.h"

#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "cpp/check.h"
#include "monoprop/algebra.h"
#include "monoprop/monomial.h"

using namespace monoprop;

namespace {

using cd = std::complex<double>;
constexpr int kQubits = 3, kSlots = 2 * kQubits, kDim = 1 << kQubits;
using Matrix = std::array<cd, kDim * kDim>;

Matrix identity() {
  Matrix m{};
  for (int i = 0; i < kDim; ++i) m[i * kDim + i] = 1.0;
  return m;
}
Matrix operator*(const Matrix& a, const Matrix& b) {
  Matrix m{};
  for (int i = 0; i < kDim; ++i)
    for (int k = 0; k < kDim; ++k)
      for (int j = 0; j < kDim; ++j) m[i * kDim + j] += a[i * kDim + k] * b[k * kDim + j];
  return m;
}
Matrix operator*(cd x, Matrix m) {
  for (cd& v : m) v *= x;
  return m;
}
Matrix operator+(Matrix a, const Matrix& b) {
  for (int i = 0; i < kDim * kDim; ++i) a[i] += b[i];
  return a;
}
Matrix dagger(const Matrix& a) {
  Matrix m{};
  for (int i = 0; i < kDim; ++i)
    for (int j = 0; j < kDim; ++j) m[i * kDim + j] = std::conj(a[j * kDim + i]);
  return m;
}
bool close(const Matrix& a, const Matrix& b) {
  for (int i = 0; i < kDim * kDim; ++i)
    if (std::abs(a[i] - b[i]) > 1e-12) return false;
  return true;
}

// Letter l (0 I, 1 X, 2 Y, 3 Z) on qubit q, the identity elsewhere.
Matrix on_qubit(int q, int l) {
  static const cd letters[4][4] = {{1, 0, 0, 1}, {0, 1, 1, 0}, {0, cd(0, -1), cd(0, 1), 0}, {1, 0, 0, -1}};
  Matrix m{};
  for (int i = 0; i < kDim; ++i)
    for (int j = 0; j < kDim; ++j) {
      cd v = 1.0;
      for (int r = 0; r < kQubits; ++r) {
        const int bi = (i >> r) & 1, bj = (j >> r) & 1;
        v *= r == q ? letters[l][bi * 2 + bj] : cd(bi == bj ? 1.0 : 0.0);
      }
      m[i * kDim + j] = v;
    }
  return m;
}

// A key as its matrix: a Pauli string letter by letter ((1,0) X, (0,1) Y,
// (1,1) Z), or the Majorana monomial i^{C(w,2)} m_{s1} ... m_{sw} with
// m_{2q} = Z..Z X_q and m_{2q+1} = Z..Z Y_q.
template <typename Algebra>
Matrix dense(std::uint64_t key) {
  Matrix m = identity();
  if constexpr (Algebra::family == Family::Pauli) {
    for (int q = 0; q < kQubits; ++q) {
      const int a = (key >> (2 * q)) & 1, b = (key >> (2 * q + 1)) & 1;
      if (a | b) m = m * on_qubit(q, a && b ? 3 : a ? 1 : 2);
    }
  } else {
    int w = 0;
    for (int s = 0; s < kSlots; ++s) {
      if (!((key >> s) & 1)) continue;
      ++w;
      Matrix factor = on_qubit(s / 2, s % 2 ? 2 : 1);
      for (int q = 0; q < s / 2; ++q) factor = on_qubit(q, 3) * factor;
      m = m * factor;
    }
    static const cd powers[4] = {1.0, cd(0, 1), -1.0, cd(0, -1)};
    m = powers[(w * (w - 1) / 2) % 4] * m;
  }
  return m;
}

// Every key's matrix, made once.
template <typename Algebra>
const Matrix& matrix(std::uint64_t key) {
  static const std::vector<Matrix> all = [] {
    std::vector<Matrix> out;
    for (std::uint64_t k = 0; k < (1u << kSlots); ++k) out.push_back(dense<Algebra>(k));
    return out;
  }();
  return all[key];
}

template <typename Algebra, int W>
Matrix matrix(const typename CliffordFrame<Algebra, W>::Signed& x) {
  return static_cast<double>(x.sign) * matrix<Algebra>(x.key.words[0]);
}

Monomial<1> key1(std::uint64_t bits) { return Monomial<1>{{bits}}; }

template <typename Algebra>
void frame_against_matrices(std::mt19937_64& rng) {
  using Frame = CliffordFrame<Algebra, 1>;
  for (int trial = 0; trial < 12; ++trial) {
    Frame frame(kSlots);
    CHECK(frame.identity());
    Matrix V = identity();
    for (int turn = 0; turn < 8; ++turn) {
      const std::uint64_t c = 1 + rng() % ((1u << kSlots) - 1);
      const int k = 1 + static_cast<int>(rng() % 3);
      frame.apply(key1(c), k);
      const double phi = k * std::acos(-1.0) / 4;
      V = V * (std::cos(phi) * identity() + cd(0, std::sin(phi)) * matrix<Algebra>(c));
      const Matrix Vd = dagger(V);
      bool forward = !frame.identity(), backward = true, image = true, inverse = true, paired = true;
      for (std::uint64_t y = 0; y < (1u << kSlots); ++y) {
        const auto f = frame.forward(key1(y));
        forward = forward && close(matrix<Algebra, 1>(f), Vd * matrix<Algebra>(y) * V);
        backward = backward && close(matrix<Algebra, 1>(frame.backward(key1(y))), V * matrix<Algebra>(y) * Vd);
        image = image && frame.image(key1(y)) == f.key;
        const auto back = frame.backward(f.key);
        inverse = inverse && back.key == key1(y) && back.sign == f.sign;
        int single = 0;  // modes of F(y) with one slot
        for (int q = 0; q < kQubits; ++q)
          single += ((f.key.words[0] >> (2 * q)) & 1) != ((f.key.words[0] >> (2 * q + 1)) & 1);
        paired = paired && frame.paired(key1(y)) == f.key.fully_paired() && frame.unpaired_modes(key1(y)) == single;
      }
      CHECK(forward);
      CHECK(backward);
      CHECK(image);
      CHECK(inverse);
      CHECK(paired);
    }
    // The tables are the images of the single slots.
    bool tables = frame.forward_table().size() == kSlots && frame.backward_table().size() == kSlots;
    for (std::uint32_t s = 0; tables && s < kSlots; ++s) {
      const auto f = frame.forward(key1(1u << s)), b = frame.backward(key1(1u << s));
      tables = frame.forward_table()[s].key == f.key && frame.forward_table()[s].sign == f.sign &&
               frame.backward_table()[s].key == b.key && frame.backward_table()[s].sign == b.sign;
    }
    CHECK(tables);
    // Saved tables restore the same frame; inconsistent ones are refused and
    // leave the frame as it was.
    Frame copy(kSlots);
    CHECK(copy.restore(frame.forward_table(), frame.backward_table()));
    bool same = true;
    for (std::uint64_t y = 0; y < (1u << kSlots); ++y) {
      const auto x = frame.forward(key1(y)), z = copy.forward(key1(y));
      same = same && x.key == z.key && x.sign == z.sign && copy.paired(key1(y)) == frame.paired(key1(y));
    }
    CHECK(same);
    Frame fresh(kSlots);
    auto bad = frame.backward_table();
    bad[rng() % kSlots].sign *= -1;
    CHECK(!fresh.restore(frame.forward_table(), bad) && fresh.identity());
    bad = frame.backward_table();
    bad.pop_back();
    CHECK(!fresh.restore(frame.forward_table(), bad) && fresh.identity());
    bad = frame.backward_table();
    bad[0].key.set(kSlots);  // a slot past the frame's
    CHECK(!fresh.restore(frame.forward_table(), bad) && fresh.identity());
    bad = frame.backward_table();
    bad[0].key = Monomial<1>{};
    CHECK(!fresh.restore(frame.forward_table(), bad) && fresh.identity());
    CHECK(copy.restore({}, {}) && copy.identity() && copy.forward(key1(0b1011)).key == key1(0b1011));
  }
}

// Wide frames: one turn follows the rule (P anticommuting with C goes to
// +-s (P xor C) for k odd, -P for k = 2, with i P C = s (P xor C); the others
// stay), and many turns keep F a map of products: F(P) F(Q) = i^e F(P xor Q)
// where P Q = i^e (P xor Q), and F^-1 undoes F.
template <typename Algebra>
void wide_frame(std::mt19937_64& rng) {
  constexpr int W = 2, slots = 100;
  using Key = Monomial<W>;
  using Frame = CliffordFrame<Algebra, W>;
  auto random_key = [&](int density) {
    Key k;
    for (int s = 0; s < slots; ++s)
      if (rng() % density == 0) k.set(static_cast<std::uint32_t>(s));
    return k;
  };
  bool rule = true;
  for (int trial = 0; trial < 200; ++trial) {
    Frame frame(slots);
    const Key c = random_key(20);
    if (c.is_identity()) continue;
    const int k = 1 + static_cast<int>(rng() % 3);
    frame.apply(c, k);
    const typename Algebra::template Generator<W> g(c);
    for (int i = 0; i < 20; ++i) {
      const Key p = random_key(4);
      const auto f = frame.forward(p);
      const int s = rotation_sign<Algebra>(p, g);
      if (s == 0)
        rule = rule && f.key == p && f.sign == 1;
      else if (k == 2)
        rule = rule && f.key == p && f.sign == -1;
      else
        rule = rule && f.key == (p ^ c) && f.sign == (k == 1 ? s : -s);
    }
  }
  CHECK(rule);
  Frame frame(slots);
  for (int turn = 0; turn < 40; ++turn) {
    const Key c = random_key(25);
    if (!c.is_identity()) frame.apply(c, 1 + static_cast<int>(rng() % 3));
  }
  bool products = true, inverse = true;
  auto power_of_sign = [](int sign) { return sign > 0 ? 0 : 2; };
  for (int i = 0; i < 500; ++i) {
    const Key p = random_key(5), q = random_key(5);
    const auto fp = frame.forward(p), fq = frame.forward(q), fpq = frame.forward(p ^ q);
    const int e = Algebra::product_power(p, q), image_e = Algebra::product_power(fp.key, fq.key);
    products = products && (fp.key ^ fq.key) == fpq.key &&
               ((power_of_sign(fp.sign) + power_of_sign(fq.sign) + image_e - e - power_of_sign(fpq.sign)) & 3) == 0;
    const auto back = frame.backward(fp.key);
    inverse = inverse && back.key == p && back.sign == fp.sign;
  }
  CHECK(products);
  CHECK(inverse);
}

// The matrices are the algebra's monomials: Hermitian, and multiplied as
// product_power says (M_P M_Q = i^e M_{P xor Q}).
template <typename Algebra>
bool matrices_are_the_algebra() {
  static const cd powers[4] = {1.0, cd(0, 1), -1.0, cd(0, -1)};
  bool same = true;
  for (std::uint64_t p = 0; p < (1u << kSlots); ++p) {
    same = same && close(matrix<Algebra>(p), dagger(matrix<Algebra>(p)));
    for (std::uint64_t q = 0; q < (1u << kSlots); ++q) {
      const int e = Algebra::product_power(key1(p), key1(q));
      same = same && close(matrix<Algebra>(p) * matrix<Algebra>(q), powers[e & 3] * matrix<Algebra>(p ^ q));
    }
  }
  return same;
}

}  // namespace

TEST(test_clifford_reference_matrices) {
  CHECK(matrices_are_the_algebra<PauliAlgebra>());
  CHECK(matrices_are_the_algebra<MajoranaAlgebra>());
}

TEST(test_clifford_frame_against_matrices) {
  std::mt19937_64 rng(91);
  frame_against_matrices<PauliAlgebra>(rng);
  frame_against_matrices<MajoranaAlgebra>(rng);
}

TEST(test_clifford_frame_wide) {
  std::mt19937_64 rng(92);
  wide_frame<PauliAlgebra>(rng);
  wide_frame<MajoranaAlgebra>(rng);
}
