#include "graph.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace monoprop {

namespace {
// What the reverse sweep cannot recover from a layer's outputs: the inputs of
// halves and cos-only entries, and with paring (rotations that may have been
// skipped are no longer invertible) the inputs of pairs too.
std::size_t tape_length(const Graph& graph, bool pairs_too) {
  std::size_t n = 0;
  for (const GraphLayer& layer : graph)
    n += layer.half_signs.size() + layer.cos_only.size() + (pairs_too ? 2 * layer.pair_signs.size() : 0);
  return n;
}
// How many entries ahead a sweep prefetches its scattered slots.
constexpr std::size_t kAhead = 32;

// Two doubles in one SIMD register (SSE2 on x86-64, NEON on arm64).
using V2 = double __attribute__((vector_size(16)));

bool pared(double pare, double sn, double ca, double cb) {
  return pare > 0.0 && std::abs(sn) * std::max(std::abs(ca), std::abs(cb)) < pare;
}
}  // namespace

namespace {
// One layer forward at cos/sin (cs, sn); returns the advanced tape pointer.
double* forward_layer(const GraphLayer& layer, double cs, double sn, std::vector<double>& c, double* t, bool tape_pairs,
                      double pare) {
  const std::size_t np = layer.pair_signs.size(), nh = layer.half_signs.size();
  for (std::size_t e = 0; e < np; ++e) {
    const std::uint32_t a = layer.pairs[2 * e], b = layer.pairs[2 * e + 1];
    if (e + kAhead < np) {
      __builtin_prefetch(&c[layer.pairs[2 * (e + kAhead)]]);
      __builtin_prefetch(&c[layer.pairs[2 * (e + kAhead) + 1]]);
    }
    const double ca = c[a], cb = c[b], s = layer.pair_signs[e] * sn;
    if (tape_pairs) {
      if (t) {
        *t++ = ca;
        *t++ = cb;
      }
      if (pared(pare, sn, ca, cb)) {
        c[a] = cs * ca;
        c[b] = cs * cb;
        continue;
      }
    }
    c[a] = cs * ca - s * cb;
    c[b] = cs * cb + s * ca;
  }
  for (std::size_t e = 0; e < nh; ++e) {
    const std::uint32_t a = layer.halves[2 * e], b = layer.halves[2 * e + 1];
    const double ca = c[a];
    if (t) *t++ = ca;
    if (!pared(pare, sn, ca, 0.0)) c[b] += layer.half_signs[e] * sn * ca;
    c[a] = cs * ca;
  }
  const std::size_t nc = layer.cos_only.size();
  for (std::size_t e = 0; e < nc; ++e) {
    const std::uint32_t a = layer.cos_only[e];
    if (e + kAhead < nc) __builtin_prefetch(&c[layer.cos_only[e + kAhead]]);
    if (t) *t++ = c[a];
    c[a] *= cs;
  }
  return t;
}
}  // namespace

void rotate_layer(const GraphLayer& layer, double phi, std::vector<double>& c) {
  forward_layer(layer, std::cos(phi), std::sin(phi), c, nullptr, false, 0.0);
}

void replay_forward(const Graph& graph, const double* theta, std::vector<double>& c, std::vector<double>* tape,
                    double pare, const std::int32_t* parameters) {
  const bool tape_pairs = pare > 0.0;
  double* t = nullptr;
  if (tape) {
    tape->resize(tape_length(graph, tape_pairs));
    t = tape->data();
  }
  for (std::size_t l = 0; l < graph.size(); ++l) {
    const GraphLayer& layer = graph[l];
    const double phi = layer.frequency * theta[parameters ? parameters[l] : layer.parameter];
    t = forward_layer(layer, std::cos(phi), std::sin(phi), c, t, tape_pairs, pare);
  }
}

void replay_adjoint(const Graph& graph, const double* theta, const std::vector<double>& tape, double* state,
                    double* grad, double pare, const std::int32_t* parameters) {
  const bool tape_pairs = pare > 0.0;
  const double* t = tape.data() + tape.size();
  for (std::size_t l = graph.size(); l-- > 0;) {
    const GraphLayer& layer = graph[l];
    const std::int32_t p = parameters ? parameters[l] : layer.parameter;
    const double phi = layer.frequency * theta[p];
    const double cs = std::cos(phi), sn = std::sin(phi);
    double dphi = 0.0;
    // Entries are independent within a layer: walk them backwards to meet the tape.
    for (std::size_t e = layer.cos_only.size(); e-- > 0;) {
      if (e >= kAhead) __builtin_prefetch(state + 2 * std::size_t{layer.cos_only[e - kAhead]});
      double* x = state + 2 * std::size_t{layer.cos_only[e]};
      const double ca = *--t;
      x[0] = ca;
      dphi -= x[1] * sn * ca;
      x[1] *= cs;
    }
    for (std::size_t e = layer.half_signs.size(); e-- > 0;) {
      double* x = state + 2 * std::size_t{layer.halves[2 * e]};
      double* y = state + 2 * std::size_t{layer.halves[2 * e + 1]};
      const double s = layer.half_signs[e];
      const double ca = *--t;
      x[0] = ca;
      if (pared(pare, sn, ca, 0.0)) {
        dphi -= x[1] * sn * ca;
        x[1] *= cs;
        continue;
      }
      y[0] -= s * sn * ca;
      dphi += -x[1] * sn * ca + y[1] * s * cs * ca;
      x[1] = cs * x[1] + s * sn * y[1];
    }
    // The derivative of a rotation is the rotation by a further quarter turn, so
    // d f / d phi reads the outputs; then (c, lambda) of both slots rewind through
    // the transpose together, as 2-vectors.
    auto rewind = [&](std::size_t e) {
      double* x = state + 2 * std::size_t{layer.pairs[2 * e]};
      double* y = state + 2 * std::size_t{layer.pairs[2 * e + 1]};
      const double s = layer.pair_signs[e];
      const double d = s * (y[1] * x[0] - x[1] * y[0]);
      const V2 X = {x[0], x[1]}, Y = {y[0], y[1]};
      const double ss = s * sn;
      const V2 nx = cs * X + ss * Y, ny = cs * Y - ss * X;
      x[0] = nx[0];
      x[1] = nx[1];
      y[0] = ny[0];
      y[1] = ny[1];
      return d;
    };
    std::size_t e = layer.pair_signs.size();
    if (tape_pairs) {
      for (; e-- > 0;) {
        double* x = state + 2 * std::size_t{layer.pairs[2 * e]};
        double* y = state + 2 * std::size_t{layer.pairs[2 * e + 1]};
        const double cb = *--t, ca = *--t;
        if (!pared(pare, sn, ca, cb)) {
          dphi += rewind(e);
          continue;
        }
        dphi -= sn * (x[1] * ca + y[1] * cb);
        x[0] = ca;
        y[0] = cb;
        x[1] *= cs;
        y[1] *= cs;
      }
    } else {
      // Two running sums: the entries are independent, the additions need not wait.
      // The slots are scattered: ask for the lines a few entries ahead.
      double even = 0.0, odd = 0.0;
      for (; e >= 2; e -= 2) {
        if (e >= 2 + kAhead) {
          __builtin_prefetch(state + 2 * std::size_t{layer.pairs[2 * (e - kAhead)]});
          __builtin_prefetch(state + 2 * std::size_t{layer.pairs[2 * (e - kAhead) + 1]});
          __builtin_prefetch(state + 2 * std::size_t{layer.pairs[2 * (e - kAhead) - 2]});
          __builtin_prefetch(state + 2 * std::size_t{layer.pairs[2 * (e - kAhead) - 1]});
        }
        even += rewind(e - 1);
        odd += rewind(e - 2);
      }
      if (e == 1) even += rewind(0);
      dphi += even + odd;
    }
    grad[p] += layer.frequency * dphi;
  }
}

}  // namespace monoprop
