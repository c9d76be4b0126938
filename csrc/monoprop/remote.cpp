#include "remote.h"

#include <algorithm>

#include "rotation.h"

namespace monoprop {
namespace {
using namespace rotation;

}  // namespace

void remote_forward(const RemoteLayer& layer, std::size_t lo, std::size_t hi, double cs, double sn, double* const* c,
                    const double* theirs, double pare) {
  double* no_tape = nullptr;  // the exchange buffers are the tape
  for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
    double& own = c[b.shards[e]][b.slots[e]];
    double other = theirs[i];
    const int code = b.codes[e];
    const double s = code > 0 ? 1.0 : -1.0;
    switch (code > 0 ? code : -code) {
      case 1:
        forward_pair(own, other, cs, sn, s, no_tape, pare);
        break;
      case 2:
        forward_half(own, other, cs, sn, s, no_tape, pare);
        break;
      default:
        forward_half(other, own, cs, sn, s, no_tape, pare);
    }
  });
}

double remote_adjoint(const RemoteLayer& layer, std::size_t lo, std::size_t hi, double cs, double sn,
                      double* const* state, const double* theirs_lambda, const double* ours_in, const double* theirs_in,
                      double pare) {
  double* no_tape = nullptr;
  double dphi = 0.0;
  for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
    double* own = state[b.shards[e]] + 2 * std::size_t{b.slots[e]};
    const int code = b.codes[e];
    const double s = code > 0 ? 1.0 : -1.0;
    // The peer's output, recomputed from both inputs with the peer's own arithmetic:
    // only its lambda had to travel.
    double x = ours_in[i], y = theirs_in[i];
    const int kind = code > 0 ? code : -code;
    if (kind == 1) forward_pair(x, y, cs, sn, s, no_tape, pare);
    if (kind == 2) forward_half(x, y, cs, sn, s, no_tape, pare);
    if (kind == 3) forward_half(y, x, cs, sn, s, no_tape, pare);
    double other[2] = {kind == 3 ? x : y, theirs_lambda[i]};
    double d;
    switch (kind) {
      case 1: {
        if (pare > 0.0) {
          const double tape[2] = {ours_in[i], theirs_in[i]};
          const double* t = tape + 2;
          d = rewind_taped(own, other, cs, sn, s, t, pare);
        } else {
          d = rewind(own, other, cs, sn, s);
        }
        break;
      }
      case 2: {
        const double* t = ours_in + i + 1;
        d = rewind_half(own, other, cs, sn, s, t, pare);
        break;
      }
      default: {
        const double* t = theirs_in + i + 1;
        d = rewind_half(other, own, cs, sn, s, t, pare);
      }
    }
    if (b.counts) dphi += d;
  });
  return dphi;
}

}  // namespace monoprop
