#include "graph.h"

#include <cmath>
#include <cstddef>

namespace monoprop {

void replay_forward(const Graph& graph, const double* theta, std::vector<double>& c,
                    std::vector<double>* tape, double pare, const std::int32_t* parameters) {
  if (tape) tape->clear();
  for (std::size_t l = 0; l < graph.size(); ++l) {
    const GraphLayer& layer = graph[l];
    const double phi = layer.frequency * theta[parameters ? parameters[l] : layer.parameter];
    const double cs = std::cos(phi), sn = std::sin(phi);
    const std::size_t np = layer.pair_signs.size(), nh = layer.half_signs.size();
    for (std::size_t e = 0; e < np; ++e) {
      const std::uint32_t a = layer.pairs[2 * e], b = layer.pairs[2 * e + 1];
      const double ca = c[a], cb = c[b], s = layer.pair_signs[e] * sn;
      if (tape) {
        tape->push_back(ca);
        tape->push_back(cb);
      }
      c[a] = cs * ca - s * cb;
      c[b] = cs * cb + s * ca;
    }
    for (std::size_t e = 0; e < nh; ++e) {
      const std::uint32_t a = layer.halves[2 * e], b = layer.halves[2 * e + 1];
      const double ca = c[a];
      if (tape) tape->push_back(ca);
      const double moved = layer.half_signs[e] * sn * ca;
      if (pare > 0.0 && std::abs(moved) < pare) {
        c[a] = cs * ca;
        continue;
      }
      c[b] += moved;
      c[a] = cs * ca;
    }
    for (const std::uint32_t a : layer.cos_only) {
      if (tape) tape->push_back(c[a]);
      c[a] *= cs;
    }
  }
}

void replay_adjoint(const Graph& graph, const double* theta, const std::vector<double>& tape,
                    std::vector<double>& lambda, double* grad, double pare, const std::int32_t* parameters) {
  std::size_t t = tape.size();
  for (std::size_t l = graph.size(); l-- > 0;) {
    const GraphLayer& layer = graph[l];
    const std::int32_t p = parameters ? parameters[l] : layer.parameter;
    const double phi = layer.frequency * theta[p];
    const double cs = std::cos(phi), sn = std::sin(phi);
    double dphi = 0.0;
    // Entries are independent within a layer, so any order works; walk the
    // tape backwards.
    for (std::size_t e = layer.cos_only.size(); e-- > 0;) {
      const std::uint32_t a = layer.cos_only[e];
      const double ca = tape[--t];
      dphi -= lambda[a] * sn * ca;
      lambda[a] *= cs;
    }
    for (std::size_t e = layer.half_signs.size(); e-- > 0;) {
      const std::uint32_t a = layer.halves[2 * e], b = layer.halves[2 * e + 1];
      const double s = layer.half_signs[e];
      const double ca = tape[--t];
      const double la = lambda[a], lb = lambda[b];
      if (pare > 0.0 && std::abs(s * sn * ca) < pare) {  // skipped forward
        dphi -= la * sn * ca;
        lambda[a] = cs * la;
        continue;
      }
      dphi += -la * sn * ca + lb * s * cs * ca;
      lambda[a] = cs * la + s * sn * lb;
    }
    for (std::size_t e = layer.pair_signs.size(); e-- > 0;) {
      const std::uint32_t a = layer.pairs[2 * e], b = layer.pairs[2 * e + 1];
      const double s = layer.pair_signs[e];
      const double cb = tape[--t], ca = tape[--t];
      const double la = lambda[a], lb = lambda[b];
      dphi += la * (-sn * ca - s * cs * cb) + lb * (-sn * cb + s * cs * ca);
      lambda[a] = cs * la + s * sn * lb;
      lambda[b] = -s * sn * la + cs * lb;
    }
    grad[p] += layer.frequency * dphi;
  }
}

}  // namespace monoprop
