// The 2x2 rotation kernels a graph entry applies, forward and in reverse,
// shared by the per-shard sweeps (replay.cpp) and the entries that span two
// ranks (remote.cpp). See graph.h for what each entry does.
//
// The reverse sweep needs each entry's inputs. A rotation is inverted by its
// transpose. A scaling by cos is inverted by dividing by cos, or from the
// input the forward sweep kept where dividing would lose it (ReplayTape in
// replay.h); a pared replay (pare > 0) also keeps one flag an entry: whether
// it was pared.
#pragma once

#include <algorithm>
#include <cmath>

namespace monoprop::rotation {

// Two doubles in one SIMD register (SSE2 on x86-64, NEON on arm64).
using V2 = double __attribute__((vector_size(16)));

// Whether paring reduces an entry with inputs (ca, cb) to its cos scaling.
inline bool pared(double pare, double sn, double ca, double cb) {
  return pare > 0.0 && std::abs(sn) * std::max(std::abs(ca), std::abs(cb)) < pare;
}

inline void rotate(double& x, double& y, double cs, double sn, double s) {
  const double ca = x, cb = y;
  x = cs * ca - s * sn * cb;
  y = cs * cb + s * sn * ca;
}
inline void receive(double& x, double& y, double cs, double sn, double s) {
  y += s * sn * x;
  x *= cs;
}

// The derivative of a rotation is the rotation by a further quarter turn, so
// d f / d phi reads the outputs; then (c, lambda) of both slots rewind through
// the transpose together, as 2-vectors. x and y point at (c, lambda).
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

// A cos scaling backwards, given its input ca (the output times 1 / cos, or
// the one kept): restores it and returns d f along the layer's
// scalar, whose derivative of cos is dcs (-sin for a rotation).
inline double unscale(double* x, double ca, double cs, double dcs) {
  x[0] = ca;
  const double d = x[1] * dcs * ca;
  x[1] *= cs;
  return d;
}

// A half backwards (x rotated, y received), given x's input ca as in unscale.
// A Transfer's entries are halves with cs = 1.
inline double rewind_half(double* x, double* y, double ca, double cs, double sn, double s, double dcs, double dsn) {
  x[0] = ca;
  y[0] -= s * sn * ca;
  const double d = x[1] * dcs * ca + y[1] * s * dsn * ca;
  x[1] = cs * x[1] + s * sn * y[1];
  return d;
}

}  // namespace monoprop::rotation
