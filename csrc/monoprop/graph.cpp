#include "graph.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "rotation.h"

namespace monoprop {

namespace {
// How many entries ahead a sweep prefetches its scattered slots.
constexpr std::size_t kAhead = 32;
using namespace rotation;
}  // namespace

void GraphLayer::copy_entries_from(const GraphLayer& other) {
  pairs = other.pairs;
  pair_signs = other.pair_signs;
  halves = other.halves;
  half_signs = other.half_signs;
  cos_only = other.cos_only;
  cross_pairs = other.cross_pairs;
  cross_pair_signs = other.cross_pair_signs;
  cross_halves = other.cross_halves;
  cross_half_signs = other.cross_half_signs;
}

std::size_t tape_length(const GraphLayer& layer, bool pairs_too) {
  std::size_t n = layer.half_signs.size() + layer.cross_half_signs.size() + layer.cos_only.size();
  if (pairs_too) n += 2 * (layer.pair_signs.size() + layer.cross_pair_signs.size());
  return n;
}

double* forward_layer(const GraphLayer& layer, double cs, double sn, double* const* c, int self, double* t,
                      double pare) {
  double* own = c[self];
  const std::size_t np = layer.pair_signs.size();
  for (std::size_t e = 0; e < np; ++e) {
    if (e + kAhead < np) {
      __builtin_prefetch(&own[layer.pairs[2 * (e + kAhead)]]);
      __builtin_prefetch(&own[layer.pairs[2 * (e + kAhead) + 1]]);
    }
    forward_pair(own[layer.pairs[2 * e]], own[layer.pairs[2 * e + 1]], cs, sn, layer.pair_signs[e], t, pare);
  }
  const std::uint32_t* x = layer.cross_pairs.data();
  const std::size_t nx = layer.cross_pair_signs.size();
  for (std::size_t e = 0; e < nx; ++e, x += 3) {
    if (e + kAhead < nx) {
      const std::uint32_t* ahead = x + 3 * kAhead;
      __builtin_prefetch(&own[ahead[0]]);
      __builtin_prefetch(&c[ahead[1]][ahead[2]]);
    }
    forward_pair(own[x[0]], c[x[1]][x[2]], cs, sn, layer.cross_pair_signs[e], t, pare);
  }
  for (std::size_t e = 0; e < layer.half_signs.size(); ++e)
    forward_half(own[layer.halves[2 * e]], own[layer.halves[2 * e + 1]], cs, sn, layer.half_signs[e], t, pare);
  x = layer.cross_halves.data();
  for (std::size_t e = 0; e < layer.cross_half_signs.size(); ++e, x += 3)
    forward_half(own[x[0]], c[x[1]][x[2]], cs, sn, layer.cross_half_signs[e], t, pare);
  const std::size_t nc = layer.cos_only.size();
  for (std::size_t e = 0; e < nc; ++e) {
    const std::uint32_t a = layer.cos_only[e];
    if (e + kAhead < nc) __builtin_prefetch(&own[layer.cos_only[e + kAhead]]);
    if (t) *t++ = own[a];
    own[a] *= cs;
  }
  return t;
}

double adjoint_layer(const GraphLayer& layer, double cs, double sn, double* const* state, int self, const double*& tape,
                     double pare) {
  const double* t = tape;  // a local pointer: the compiler need not store it back per entry
  double* own = state[self];
  auto at = [](double* base, std::uint32_t slot) { return base + 2 * std::size_t{slot}; };
  double dphi = 0.0;
  // Entries are independent within a layer: walk them backwards to meet the tape.
  for (std::size_t e = layer.cos_only.size(); e-- > 0;) {
    if (e >= kAhead) __builtin_prefetch(at(own, layer.cos_only[e - kAhead]));
    double* x = at(own, layer.cos_only[e]);
    const double ca = *--t;
    x[0] = ca;
    dphi -= x[1] * sn * ca;
    x[1] *= cs;
  }
  for (std::size_t e = layer.cross_half_signs.size(); e-- > 0;) {
    const std::uint32_t* x = &layer.cross_halves[3 * e];
    dphi += rewind_half(at(own, x[0]), at(state[x[1]], x[2]), cs, sn, layer.cross_half_signs[e], t, pare);
  }
  for (std::size_t e = layer.half_signs.size(); e-- > 0;)
    dphi += rewind_half(at(own, layer.halves[2 * e]), at(own, layer.halves[2 * e + 1]), cs, sn, layer.half_signs[e], t,
                        pare);
  const bool taped = pare > 0.0;
  for (std::size_t e = layer.cross_pair_signs.size(); e-- > 0;) {
    const std::uint32_t* x = &layer.cross_pairs[3 * e];
    if (e >= kAhead) {
      const std::uint32_t* ahead = x - 3 * kAhead;
      __builtin_prefetch(at(own, ahead[0]));
      __builtin_prefetch(at(state[ahead[1]], ahead[2]));
    }
    double* a = at(own, x[0]);
    double* b = at(state[x[1]], x[2]);
    const double s = layer.cross_pair_signs[e];
    dphi += taped ? rewind_taped(a, b, cs, sn, s, t, pare) : rewind(a, b, cs, sn, s);
  }
  std::size_t e = layer.pair_signs.size();
  if (taped) {
    for (; e-- > 0;)
      dphi += rewind_taped(at(own, layer.pairs[2 * e]), at(own, layer.pairs[2 * e + 1]), cs, sn, layer.pair_signs[e], t,
                           pare);
    tape = t;
    return dphi;
  }
  // Two running sums: the entries are independent, the additions need not wait.
  // The slots are scattered: ask for the lines a few entries ahead.
  auto pair = [&](std::size_t i) {
    return rewind(at(own, layer.pairs[2 * i]), at(own, layer.pairs[2 * i + 1]), cs, sn, layer.pair_signs[i]);
  };
  double even = 0.0, odd = 0.0;
  for (; e >= 2; e -= 2) {
    if (e >= 2 + kAhead)
      for (std::size_t k = 2 * (e - kAhead) - 2; k < 2 * (e - kAhead) + 2; ++k)
        __builtin_prefetch(at(own, layer.pairs[k]));
    even += pair(e - 1);
    odd += pair(e - 2);
  }
  if (e == 1) even += pair(0);
  tape = t;
  return dphi + (even + odd);
}

void rotate_layer(const GraphLayer& layer, double phi, double* const* c, int self) {
  forward_layer(layer, std::cos(phi), std::sin(phi), c, self, nullptr, 0.0);
}

void replay_forward(const Graph& graph, const double* theta, std::vector<double>& c, std::vector<double>* tape,
                    double pare, const std::int32_t* parameters) {
  double* t = nullptr;
  if (tape) {
    std::size_t n = 0;
    for (const GraphLayer& layer : graph) n += tape_length(layer, pare > 0.0);
    tape->resize(n);
    t = tape->data();
  }
  double* const shards[1] = {c.data()};
  for (std::size_t l = 0; l < graph.size(); ++l) {
    const GraphLayer& layer = graph[l];
    const double phi = layer.frequency * theta[parameters ? parameters[l] : layer.parameter];
    t = forward_layer(layer, std::cos(phi), std::sin(phi), shards, 0, t, pare);
  }
}

void replay_adjoint(const Graph& graph, const double* theta, const std::vector<double>& tape, double* state,
                    double* grad, double pare, const std::int32_t* parameters) {
  const double* t = tape.data() + tape.size();
  double* const shards[1] = {state};
  for (std::size_t l = graph.size(); l-- > 0;) {
    const GraphLayer& layer = graph[l];
    const std::int32_t p = parameters ? parameters[l] : layer.parameter;
    const double phi = layer.frequency * theta[p];
    grad[p] += layer.frequency * adjoint_layer(layer, std::cos(phi), std::sin(phi), shards, 0, t, pare);
  }
}

}  // namespace monoprop
