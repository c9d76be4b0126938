// Noise layers: the channels of a circuit as the engine applies them.
//
// Every channel monoprop offers is a product of three kinds of layer, each
// of which keeps the operand a sum of monomials:
//   Damp      terms that anticommute with the layer's monomial Q are scaled
//             by d. A Pauli-Lindblad generator exp(lambda (Q rho Q - rho))
//             is Damp(Q, exp(-2 lambda)).
//   Select    terms whose bits at the layer's slots (at most four) form one
//             of the layer's patterns are scaled by d. Pattern p reads the
//             k-th slot as bit k of p; for a qubit q at slots (2q, 2q+1),
//             I X Y Z are the patterns 0 1 2 3. A Pauli channel is one Select
//             layer per distinct eigenvalue: P -> sum_Q p_Q Q P Q scales P by
//             1 - 2 (sum of p_Q over the Q that anticommute with P).
//   Transfer  a term a holding the layer's monomial K (Heisenberg) or none
//             of its slots (Schrodinger) gives s * t * c_a to its partner
//             a xor K and keeps its own coefficient. That is the non-unital
//             part of amplitude damping: in the Heisenberg picture
//             Z -> (1 - gamma) Z + gamma I, whose scaling is a Select layer
//             and whose gamma I is a Transfer with t = gamma.
// A layer's number v (d, or t) is a function of the channel's rate r:
// v = f(alpha + beta r) with f the identity, the square root or exp. A rate
// is either fixed (parameter -1, r = 0 and alpha carries it) or a slot of
// the parameter vector, which the reverse sweep differentiates.
//
// After Clifford layers the engine holds a key Y for the term F(Y) of its
// Clifford frame F (clifford_frame.h). A Damp then scales the keys that
// anticommute with F^-1(Q); a Select or Transfer reads slot t of F(Y), which
// is the xor of the slots s of Y whose image F(e_s) holds t; a Transfer's
// partner is Y xor F^-1(K), with the signs of both images (LayerPlan::sign).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace monoprop {

enum class LayerKind : std::uint8_t { Rotation = 0, Damp = 1, Select = 2, Transfer = 3 };
enum class RateForm : std::uint8_t { Linear = 0, Root = 1, Exp = 2 };

struct Noise {
  LayerKind kind = LayerKind::Rotation;
  RateForm form = RateForm::Linear;
  std::uint16_t patterns = 0;  // Select: bit p for pattern p
  double alpha = 0.0, beta = 0.0;
  // The rates the channel is defined for (a rate from the parameter vector is checked).
  double lowest = -std::numeric_limits<double>::infinity();
  double highest = std::numeric_limits<double>::infinity();

  bool rotation() const { return kind == LayerKind::Rotation; }
  bool scales() const { return kind == LayerKind::Damp || kind == LayerKind::Select; }
};

// A layer's 2x2 numbers and their derivative along its scalar (the angle of
// a rotation, the rate of a noise layer): a scaling has (cs, 0) and a
// transfer (1, sn).
struct Turn {
  double cs = 1.0, sn = 0.0;
  double dcs = 0.0, dsn = 0.0;
};

inline Turn rotation_turn(double phi) {
  const double cs = std::cos(phi), sn = std::sin(phi);
  return {cs, sn, -sn, cs};
}

inline Turn noise_turn(const Noise& noise, double rate) {
  const double x = noise.alpha + noise.beta * rate;
  double v = x, dv = noise.beta;
  if (noise.form == RateForm::Root) {
    v = std::sqrt(x);
    dv = noise.beta / (2.0 * v);
  } else if (noise.form == RateForm::Exp) {
    v = std::exp(x);
    dv = noise.beta * v;
  }
  if (noise.kind == LayerKind::Transfer) return {1.0, v, 0.0, dv};
  return {v, 0.0, dv, 0.0};
}

}  // namespace monoprop
