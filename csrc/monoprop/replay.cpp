#include "replay.h"

#include <algorithm>

#include "rotation.h"

namespace monoprop {
namespace {
using namespace rotation;

// Walks a births, pairs or halves section in chunks: decodes a chunk (and asks
// for its lines through `prefetch`) before applying the previous one, so the
// scattered partners are on their way when their entries come up.
template <bool Births, typename Prefetch, typename Apply>
void for_each_entry(const ShardLayer& layer, const Section& section, Prefetch&& prefetch, Apply&& apply) {
  constexpr std::uint32_t kChunk = 16;
  const std::uint32_t n = section.count;
  if (n == 0) return;
  SectionReader reader(layer, section);
  std::uint32_t a[2][kChunk], b[2][kChunk];
  double s[2][kChunk];
  auto decode = [&](int buffer, std::uint32_t start) {
    const std::uint32_t m = std::min(kChunk, n - start);
    for (std::uint32_t i = 0; i < m; ++i) {
      bool negative;
      a[buffer][i] = reader.next(negative);
      b[buffer][i] = Births ? section.base + start + i : reader.partner();
      s[buffer][i] = negative ? -1.0 : 1.0;
      prefetch(a[buffer][i], b[buffer][i]);
    }
  };
  decode(0, 0);
  int buffer = 0;
  for (std::uint32_t start = 0; start < n; start += kChunk, buffer ^= 1) {
    if (start + kChunk < n) decode(buffer ^ 1, start + kChunk);
    const std::uint32_t m = std::min(kChunk, n - start);
    for (std::uint32_t i = 0; i < m; ++i) apply(a[buffer][i], b[buffer][i], s[buffer][i]);
  }
}

// Walks the cos section the same way: a chunk of slots is decoded (and their
// lines asked for) before the previous chunk is applied.
template <typename Prefetch, typename Apply>
void for_each_cos(const ShardLayer& layer, Prefetch&& prefetch, Apply&& apply) {
  constexpr std::uint32_t kChunk = 32;
  const std::uint32_t n = layer.cos.count;
  if (n == 0) return;
  SectionReader reader(layer, layer.cos);
  std::uint32_t a[2][kChunk];
  auto decode = [&](int buffer, std::uint32_t start) {
    const std::uint32_t m = std::min(kChunk, n - start);
    for (std::uint32_t i = 0; i < m; ++i) prefetch(a[buffer][i] = reader.cos());
  };
  decode(0, 0);
  int buffer = 0;
  for (std::uint32_t start = 0; start < n; start += kChunk, buffer ^= 1) {
    if (start + kChunk < n) decode(buffer ^ 1, start + kChunk);
    const std::uint32_t m = std::min(kChunk, n - start);
    for (std::uint32_t i = 0; i < m; ++i) apply(a[buffer][i]);
  }
}
template <typename Apply>
void for_each_cos(const ShardLayer& layer, Apply&& apply) {
  for_each_cos(layer, [](std::uint32_t) {}, apply);
}

template <int Stride, bool Pared>
void forward(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare, PareFlags* flags) {
  double* own = c[self];
  for_each_cos(
      layer, [&](std::uint32_t a) { __builtin_prefetch(&own[Stride * std::size_t{a}]); },
      [&](std::uint32_t a) { own[Stride * std::size_t{a}] *= cs; });
  for (const Part& part : layer.parts) {
    double* other = c[part.shard];
    auto prefetch = [&](std::uint32_t, std::uint32_t b) { __builtin_prefetch(&other[Stride * std::size_t{b}]); };
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) {
      double& x = own[Stride * std::size_t{a}];
      double& y = other[Stride * std::size_t{b}];
      if constexpr (Pared) {
        const bool cut = pared(pare, sn, x, y);
        flags->flags.push_back(cut);
        if (cut) {
          x *= cs;
          y *= cs;
          return;
        }
      }
      rotate(x, y, cs, sn, s);
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) {
      double& x = own[Stride * std::size_t{a}];
      double& y = other[Stride * std::size_t{b}];
      if constexpr (Pared) {
        const bool cut = pared(pare, sn, x, 0.0);
        flags->flags.push_back(cut);
        if (cut) {
          x *= cs;
          return;
        }
      }
      receive(x, y, cs, sn, s);
    };
    for_each_entry<true>(layer, part.births, prefetch, pair);
    for_each_entry<false>(layer, part.pairs, prefetch, pair);
    for_each_entry<false>(layer, part.halves, prefetch, half);
  }
}

template <bool Pared>
double adjoint(const ShardLayer& layer, double cs, double sn, double* const* state, int self, PareFlags* flags) {
  double* own = state[self];
  const double inverse_cs = 1.0 / cs;
  double d = 0.0, d_pairs = 0.0;
  for_each_cos(
      layer, [&](std::uint32_t a) { __builtin_prefetch(own + 2 * std::size_t{a}); },
      [&](std::uint32_t a) { d += unscale(own + 2 * std::size_t{a}, cs, sn, inverse_cs); });
  std::size_t cursor = Pared ? flags->cursor : 0;
  for (const Part& part : layer.parts) {
    double* other = state[part.shard];
    auto prefetch = [&](std::uint32_t, std::uint32_t b) { __builtin_prefetch(other + 2 * std::size_t{b}); };
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) {
      double* x = own + 2 * std::size_t{a};
      double* y = other + 2 * std::size_t{b};
      if (Pared && flags->flags[cursor++]) {
        d += unscale(x, cs, sn, inverse_cs) + unscale(y, cs, sn, inverse_cs);
        return;
      }
      d_pairs += rewind(x, y, cs, sn, s);
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) {
      double* x = own + 2 * std::size_t{a};
      if (Pared && flags->flags[cursor++]) {
        d += unscale(x, cs, sn, inverse_cs);
        return;
      }
      d += rewind_half(x, other + 2 * std::size_t{b}, cs, sn, s, inverse_cs);
    };
    for_each_entry<true>(layer, part.births, prefetch, pair);
    for_each_entry<false>(layer, part.pairs, prefetch, pair);
    for_each_entry<false>(layer, part.halves, prefetch, half);
  }
  return d + d_pairs;
}

}  // namespace

template <int Stride>
void forward_layer(const ShardLayer& layer, double cs, double sn, double* const* c, int self, double pare,
                   PareFlags* flags) {
  if (pare > 0.0)
    forward<Stride, true>(layer, cs, sn, c, self, pare, flags);
  else
    forward<Stride, false>(layer, cs, sn, c, self, 0.0, nullptr);
}
template void forward_layer<1>(const ShardLayer&, double, double, double* const*, int, double, PareFlags*);
template void forward_layer<2>(const ShardLayer&, double, double, double* const*, int, double, PareFlags*);

double adjoint_layer(const ShardLayer& layer, double cs, double sn, double* const* state, int self, double pare,
                     PareFlags* flags) {
  return pare > 0.0 ? adjoint<true>(layer, cs, sn, state, self, flags)
                    : adjoint<false>(layer, cs, sn, state, self, nullptr);
}

std::size_t pare_flags(const ShardLayer& layer) { return layer.n_rotations(); }

DecodedLayer decode(const ShardLayer& layer) {
  DecodedLayer out;
  for_each_cos(layer, [&](std::uint32_t a) { out.cos.push_back(a); });
  for (const Part& part : layer.parts) {
    auto none = [](std::uint32_t, std::uint32_t) {};
    auto into = [&](std::vector<DecodedEntry>& list) {
      return [&list, &part](std::uint32_t a, std::uint32_t b, double s) {
        list.push_back({a, part.shard, b, s < 0 ? -1 : 1});
      };
    };
    for_each_entry<true>(layer, part.births, none, into(out.pairs));
    for_each_entry<false>(layer, part.pairs, none, into(out.pairs));
    for_each_entry<false>(layer, part.halves, none, into(out.halves));
  }
  return out;
}

}  // namespace monoprop
