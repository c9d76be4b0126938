#include "remote.h"

#include "rotation.h"

namespace monoprop {
namespace {
using namespace rotation;

// An entry's two outputs from its inputs x (this rank's term) and y (the
// peer's), as either rank computes them: `kind` is |code|.
void forward_entry(int kind, double& x, double& y, double cs, double sn, double s, double pare) {
  if (kind == 3) return forward_entry(2, y, x, cs, sn, s, pare);  // the peer's term rotates into this one
  if (pared(pare, sn, x, kind == 1 ? y : 0.0)) {
    x *= cs;
    if (kind == 1) y *= cs;
  } else if (kind == 1) {
    rotate(x, y, cs, sn, s);
  } else {
    receive(x, y, cs, sn, s);
  }
}

}  // namespace

void remote_forward(const RemoteLayer& layer, std::size_t lo, std::size_t hi, double cs, double sn, double* const* c,
                    std::size_t stride, const double* theirs, double pare) {
  for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
    const int code = b.codes[e];
    double other = theirs[i];
    forward_entry(code > 0 ? code : -code, c[b.shards[e]][stride * b.slots[e]], other, cs, sn, code > 0 ? 1.0 : -1.0,
                  pare);
  });
}

double remote_adjoint(const RemoteLayer& layer, std::size_t lo, std::size_t hi, const Turn& turn, double* const* state,
                      const double* theirs_lambda, const double* ours_in, const double* theirs_in, double pare) {
  const double cs = turn.cs, sn = turn.sn, dcs = turn.dcs, dsn = turn.dsn;
  double dphi = 0.0;
  for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
    double* own = state[b.shards[e]] + 2 * std::size_t{b.slots[e]};
    const int code = b.codes[e], kind = code > 0 ? code : -code;
    const double s = code > 0 ? 1.0 : -1.0, xin = ours_in[i], yin = theirs_in[i];
    // The peer's output, recomputed from both inputs with the peer's own
    // arithmetic: only its lambda had to travel.
    double x = xin, y = yin;
    forward_entry(kind, x, y, cs, sn, s, pare);
    double other[2] = {y, theirs_lambda[i]};
    double d;
    if (kind == 1) {
      if (pared(pare, sn, xin, yin)) {
        d = dcs * (own[1] * xin + other[1] * yin);
        own[0] = xin;
        own[1] *= cs;
      } else {
        d = rewind(own, other, cs, sn, s);
      }
    } else {
      // A half: r rotates and q receives (r is this term when kind == 2).
      double* r = kind == 2 ? own : other;
      double* q = kind == 2 ? other : own;
      const double rin = kind == 2 ? xin : yin;
      if (pared(pare, sn, rin, 0.0)) {
        d = r[1] * dcs * rin;
        r[1] *= cs;
      } else {
        q[0] -= s * sn * rin;
        d = r[1] * dcs * rin + q[1] * s * dsn * rin;
        r[1] = cs * r[1] + s * sn * q[1];
      }
      r[0] = rin;
    }
    if (b.counts) dphi += d;
  });
  return dphi;
}

}  // namespace monoprop
