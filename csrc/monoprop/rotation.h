// The 2x2 rotation kernels a graph entry applies, forward and in reverse,
// shared by the per-shard sweeps (graph.cpp) and the entries that span two
// ranks (remote.cpp). See graph.h for what each entry does.
#pragma once

#include <algorithm>
#include <cmath>

namespace monoprop::rotation {

// Two doubles in one SIMD register (SSE2 on x86-64, NEON on arm64).
using V2 = double __attribute__((vector_size(16)));

inline bool pared(double pare, double sn, double ca, double cb) {
  return pare > 0.0 && std::abs(sn) * std::max(std::abs(ca), std::abs(cb)) < pare;
}

// Forward through a rotation of (x, y); with paring, tapes the inputs first.
inline void forward_pair(double& x, double& y, double cs, double sn, double s, double*& t, double pare) {
  const double ca = x, cb = y;
  if (pare > 0.0) {
    if (t) {
      *t++ = ca;
      *t++ = cb;
    }
    if (pared(pare, sn, ca, cb)) {
      x = cs * ca;
      y = cs * cb;
      return;
    }
  }
  x = cs * ca - s * sn * cb;
  y = cs * cb + s * sn * ca;
}

inline void forward_half(double& x, double& y, double cs, double sn, double s, double*& t, double pare) {
  const double ca = x;
  if (t) *t++ = ca;
  if (!pared(pare, sn, ca, 0.0)) y += s * sn * ca;
  x = cs * ca;
}

// The derivative of a rotation is the rotation by a further quarter turn, so
// d f / d phi reads the outputs; then (c, lambda) of both slots rewind through
// the transpose together, as 2-vectors.
inline double rewind(double* x, double* y, double cs, double sn, double s) {
  const double d = s * (y[1] * x[0] - x[1] * y[0]);
  const V2 X = {x[0], x[1]}, Y = {y[0], y[1]};
  const double ss = s * sn;
  const V2 nx = cs * X + ss * Y, ny = cs * Y - ss * X;
  x[0] = nx[0];
  x[1] = nx[1];
  y[0] = ny[0];
  y[1] = ny[1];
  return d;
}

// Rewinds a pair that was taped (paring on); returns d f / d phi.
inline double rewind_taped(double* x, double* y, double cs, double sn, double s, const double*& t, double pare) {
  const double cb = *--t, ca = *--t;
  if (!pared(pare, sn, ca, cb)) return rewind(x, y, cs, sn, s);
  x[0] = ca;
  y[0] = cb;
  const double d = -sn * (x[1] * ca + y[1] * cb);
  x[1] *= cs;
  y[1] *= cs;
  return d;
}

inline double rewind_half(double* x, double* y, double cs, double sn, double s, const double*& t, double pare) {
  const double ca = *--t;
  x[0] = ca;
  if (pared(pare, sn, ca, 0.0)) {
    const double d = -x[1] * sn * ca;
    x[1] *= cs;
    return d;
  }
  y[0] -= s * sn * ca;
  const double d = -x[1] * sn * ca + y[1] * s * cs * ca;
  x[1] = cs * x[1] + s * sn * y[1];
  return d;
}
}  // namespace monoprop::rotation
