#include "replay_lanes.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "replay.h"
#include "rotation.h"

namespace monoprop {
namespace {
using namespace rotation;

// The tape's side of a layer in K lanes: each lane keeps and takes back its
// inputs exactly as a one-point Keeper (replay.cpp) at that lane's shrink. A
// lane of shrink 0 (|cos| = 1) keeps nothing and divides in reverse, as a
// one-point sweep does where it keeps no tape.
template <int K>
class LaneKeeper {
 public:
  LaneKeeper(LaneTape& tape, const std::uint8_t* shrink) : tape_(tape), debt_(tape.debt.data()) {
    std::copy(shrink, shrink + K, shrink_);
  }

  void begin_forward() {
    for (int k = 0; k < K; ++k) tape_.lanes[k].starts.push_back(tape_.lanes[k].inputs.size());
  }
  // Slot a, holding x[k] in lane k, is about to be scaled. The common case,
  // no lane reaching its budget, is one pass of byte adds over the lanes.
  [[gnu::always_inline]] void scaled(std::uint32_t a, const double* x) {
    std::uint8_t* debt = debt_ + std::size_t{a} * K;
    bool over = false;
    for (int k = 0; k < K; ++k) over |= unsigned{debt[k]} + shrink_[k] >= ReplayTape::kBudget;
    if (!over) [[likely]] {
      for (int k = 0; k < K; ++k) debt[k] = static_cast<std::uint8_t>(debt[k] + shrink_[k]);
      return;
    }
    for (int k = 0; k < K; ++k) {
      const unsigned after = debt[k] + shrink_[k];
      if (after < ReplayTape::kBudget) {
        debt[k] = static_cast<std::uint8_t>(after);
        continue;
      }
      tape_.lanes[k].inputs.push_back(x[k]);
      tape_.lanes[k].owed.push_back(debt[k]);
      debt[k] = 0;
    }
  }

  void begin_reverse() {
    for (int k = 0; k < K; ++k) {
      next_[k] = tape_.lanes[k].starts.back();
      tape_.lanes[k].starts.pop_back();
    }
  }
  // Lane k's input of slot a's scaling, whose output is x0.
  [[gnu::always_inline]] double input(std::uint32_t a, int k, double x0, double inverse_cs) {
    if (shrink_[k] == 0) return x0 * inverse_cs;
    std::uint8_t& debt = debt_[std::size_t{a} * K + k];
    if (debt != 0) {
      debt = static_cast<std::uint8_t>(debt - shrink_[k]);
      return x0 * inverse_cs;
    }
    LaneTape::Lane& lane = tape_.lanes[k];
    debt = lane.owed[next_[k]];
    return lane.inputs[next_[k]++];
  }

 private:
  LaneTape& tape_;
  std::uint8_t* debt_;
  std::uint8_t shrink_[K];
  std::size_t next_[K] = {};
};

// Prefetches the cache lines of `doubles` values from p on.
template <int Doubles>
[[gnu::always_inline]] inline void prefetch_lines(const double* p) {
  for (int i = 0; i < Doubles; i += 8) __builtin_prefetch(p + i);
}

// The walks of replay.cpp, inlined into each kernel: apply(a, b, s) for every entry
// of a births, pairs or halves section in order, b counted from `first` for
// births, else read from the partner stream, whose slots (Doubles values
// each in `other`) are prefetched 16 entries ahead.
template <bool Counted, int Doubles, typename Apply>
[[gnu::always_inline]] inline void walk(const ShardLayer& layer, const Section& section, std::uint32_t first,
                                        const double* other, Apply&& apply) {
  constexpr std::uint32_t kAhead = 16;
  static constexpr double kSign[2] = {1.0, -1.0};
  const std::uint32_t n = section.count;
  SectionReader reader(layer, section);
  if (!Counted)
    for (std::uint32_t k = 0; k < std::min(kAhead, n); ++k)
      prefetch_lines<Doubles>(other + std::size_t{reader.partner(k)} * Doubles);
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!Counted && k + kAhead < n) prefetch_lines<Doubles>(other + std::size_t{reader.partner(k + kAhead)} * Doubles);
    bool negative;
    const std::uint32_t a = reader.next(negative);
    apply(a, Counted ? first + k : reader.partner(k), kSign[negative]);
  }
}

// A part's births and pairs through pair(a, b, s), then its halves through half(a, b, s).
template <int Doubles, typename Pair, typename Half>
[[gnu::always_inline]] inline void walk_part(const ShardLayer& layer, const Part& part, const double* other,
                                             Pair&& pair, Half&& half) {
  walk<true, Doubles>(layer, part.births, part.births.base, other, pair);
  walk<false, Doubles>(layer, part.pairs, 0, other, pair);
  walk<false, Doubles>(layer, part.halves, 0, other, half);
}

// s * sn, which rotate() and receive() compute, exactly: s is +-1.
[[gnu::always_inline]] inline double signed_sin(double s, double sn) { return s > 0 ? sn : -sn; }

template <int K>
void forward(const ShardLayer& layer, const LaneTurns& turn, double* const* c, int self, LaneTape* tape) {
  double* own = c[self];
  double cs[K], sn[K];
  std::copy(turn.cs, turn.cs + K, cs);
  std::copy(turn.sn, turn.sn + K, sn);
  std::optional<LaneKeeper<K>> keeper;
  if (tape) {
    keeper.emplace(*tape, turn.shrink);
    keeper->begin_forward();
  }
  {
    SectionReader reader(layer, layer.cos);
    for (std::uint32_t i = 0; i < layer.cos.count; ++i) {
      const std::uint32_t a = reader.cos();
      double* x = own + std::size_t{a} * K;
      if (keeper) keeper->scaled(a, x);
      for (int k = 0; k < K; ++k) x[k] *= cs[k];
    }
  }
  for (const Part& part : layer.parts) {
    double* other = c[part.shard];
    // Through local copies: x and y might alias as far as the compiler
    // knows, which would keep it from doing the lanes side by side. The
    // arithmetic is rotate()'s and receive()'s, with s * sn taken exactly.
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) [[gnu::always_inline]] {
      double* x = own + std::size_t{a} * K;
      double* y = other + std::size_t{b} * K;
      double xs[K], ys[K];
      std::copy(x, x + K, xs);
      std::copy(y, y + K, ys);
      for (int k = 0; k < K; ++k) {
        const double ss = signed_sin(s, sn[k]);
        x[k] = cs[k] * xs[k] - ss * ys[k];
        y[k] = cs[k] * ys[k] + ss * xs[k];
      }
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) [[gnu::always_inline]] {
      double* x = own + std::size_t{a} * K;
      double* y = other + std::size_t{b} * K;
      if (keeper) keeper->scaled(a, x);
      double xs[K], ys[K];
      std::copy(x, x + K, xs);
      std::copy(y, y + K, ys);
      for (int k = 0; k < K; ++k) {
        y[k] = ys[k] + signed_sin(s, sn[k]) * xs[k];
        x[k] = xs[k] * cs[k];
      }
    };
    walk_part<K>(layer, part, other, pair, half);
  }
}

// The sums of a one-point adjoint (replay.cpp) in every lane: the cos
// entries into four interleaved sums, folded (s0 + s1) + (s2 + s3), then the
// rotations' in entry order, added last.
template <int K>
void adjoint(const ShardLayer& layer, const LaneTurns& turn, double* const* state, int self, LaneTape& tape,
             double* d) {
  double* own = state[self];
  double cs[K], sn[K], dcs[K], dsn[K], inverse_cs[K];
  for (int k = 0; k < K; ++k) {
    cs[k] = turn.cs[k];
    sn[k] = turn.sn[k];
    dcs[k] = turn.dcs[k];
    dsn[k] = turn.dsn[k];
    inverse_cs[k] = 1.0 / cs[k];
  }
  LaneKeeper<K> keeper(tape, turn.shrink);
  keeper.begin_reverse();
  double sums[4][K] = {};
  {
    SectionReader reader(layer, layer.cos);
    auto unscaled = [&](double* sum) [[gnu::always_inline]] {
      const std::uint32_t a = reader.cos();
      double* x = own + 2 * std::size_t{a} * K;
      for (int k = 0; k < K; ++k) {
        double* xk = x + 2 * k;
        sum[k] += unscale(xk, keeper.input(a, k, xk[0], inverse_cs[k]), cs[k], dcs[k]);
      }
    };
    const std::uint32_t n = layer.cos.count;
    std::uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
      unscaled(sums[0]);
      unscaled(sums[1]);
      unscaled(sums[2]);
      unscaled(sums[3]);
    }
    for (; i < n; ++i) unscaled(sums[0]);
  }
  double parts[K] = {};
  for (const Part& part : layer.parts) {
    double* other = state[part.shard];
    auto pair = [&](std::uint32_t a, std::uint32_t b, double s) [[gnu::always_inline]] {
      double* x = own + 2 * std::size_t{a} * K;
      double* y = other + 2 * std::size_t{b} * K;
      for (int k = 0; k < K; ++k) parts[k] += rewind(x + 2 * k, y + 2 * k, cs[k], sn[k], s);
    };
    auto half = [&](std::uint32_t a, std::uint32_t b, double s) [[gnu::always_inline]] {
      double* x = own + 2 * std::size_t{a} * K;
      double* y = other + 2 * std::size_t{b} * K;
      for (int k = 0; k < K; ++k) {
        const double ca = keeper.input(a, k, x[2 * k], inverse_cs[k]);
        parts[k] += rewind_half(x + 2 * k, y + 2 * k, ca, cs[k], sn[k], s, dcs[k], dsn[k]);
      }
    };
    walk_part<2 * K>(layer, part, other, pair, half);
  }
  for (int k = 0; k < K; ++k) d[k] = (sums[0][k] + sums[1][k]) + (sums[2][k] + sums[3][k]) + parts[k];
}

template <int K>
void fill(const double* from, std::size_t slots, double* to) {
  for (std::size_t a = 0; a < slots; ++a, to += K)
    for (int k = 0; k < K; ++k) to[k] = from[a];
}

// From the top down, so that no value is overwritten before it moves.
template <int K>
void spread(double* x, std::size_t slots) {
  for (std::size_t a = slots; a-- > 0;) {
    double c[K];
    for (int k = 0; k < K; ++k) c[k] = x[a * K + k];
    double* state = x + 2 * a * K;
    for (int k = 0; k < K; ++k) {
      state[2 * k] = c[k];
      state[2 * k + 1] = 0.0;
    }
  }
}

// Calls f(lanes) with the lane count as a compile-time constant.
template <typename F>
void with_lanes(int lanes, const char* name, F&& f) {
  switch (lanes) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 8:
      return f(std::integral_constant<int, 8>{});
    case 16:
      return f(std::integral_constant<int, 16>{});
    default:
      throw std::logic_error(std::string(name) + ": lanes must be 1, 2, 4, 8 or 16");
  }
}

}  // namespace

void fill_lanes(int lanes, const double* from, std::size_t slots, double* to) {
  with_lanes(lanes, "fill_lanes", [&](auto K) { fill<K>(from, slots, to); });
}

void spread_lanes(int lanes, double* x, std::size_t slots) {
  with_lanes(lanes, "spread_lanes", [&](auto K) { spread<K>(x, slots); });
}

std::uint64_t last_level_cache() {
  static const std::uint64_t bytes = [] {
    // sysfs gives one cache's size; sysconf may give the sum over a package's caches.
    std::uint64_t most = 0;
    for (int index = 0; index < 8; ++index) {
      std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
      std::uint64_t size = 0;
      char unit = 0;
      if (!(file >> size)) continue;
      if (file >> unit) size <<= unit == 'K' ? 10 : unit == 'M' ? 20 : 0;
      most = std::max(most, size);
    }
    if (most > 0) return most;
    for (const int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
      if (const long n = sysconf(name); n > 0) return static_cast<std::uint64_t>(n);
    return std::uint64_t{8} << 20;
  }();
  return bytes;
}

void LaneTape::begin(std::size_t slots, int width) {
  debt.reserve_huge(slots * static_cast<std::size_t>(width));
  debt.assign(slots * static_cast<std::size_t>(width), 0);
  lanes.resize(static_cast<std::size_t>(width));
  for (Lane& lane : lanes) {
    lane.inputs.clear();
    lane.owed.clear();
    lane.starts.clear();
  }
}

std::size_t LaneTape::bytes() const {
  std::size_t n = debt.bytes();
  for (const Lane& lane : lanes)
    n += lane.inputs.capacity() * sizeof(double) + lane.owed.capacity() + lane.starts.capacity() * sizeof(std::size_t);
  return n;
}

void forward_lanes(int lanes, const ShardLayer& layer, const LaneTurns& turn, double* const* c, int self,
                   LaneTape* tape) {
  with_lanes(lanes, "forward_lanes", [&](auto K) { forward<K>(layer, turn, c, self, tape); });
}

void adjoint_lanes(int lanes, const ShardLayer& layer, const LaneTurns& turn, double* const* state, int self,
                   LaneTape& tape, double* d) {
  with_lanes(lanes, "adjoint_lanes", [&](auto K) { adjoint<K>(layer, turn, state, self, tape, d); });
}

}  // namespace monoprop
