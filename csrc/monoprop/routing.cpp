#include "routing.h"

#include <bit>
#include <cstdlib>
#include <string>

#include "errors.h"

namespace monoprop {
namespace {

struct Setting {
  std::uint64_t value = 0;
  std::string error;  // empty when the variable parsed
};

Setting routing_kind() {
  const char* raw = std::getenv("monoprop_ROUTING");
  if (raw == nullptr) return {};
  const std::string value(raw);
  if (value == "linear") return {static_cast<std::uint64_t>(Routing::Kind::Linear), ""};
  if (value == "splitmix") return {static_cast<std::uint64_t>(Routing::Kind::Splitmix), ""};
  return {0, "monoprop_ROUTING='" + value + "' is not a routing: it must be 'linear' or 'splitmix' (or unset)."};
}

Setting routing_seed() {
  const char* raw = std::getenv("monoprop_ROUTING_SEED");
  if (raw == nullptr) return {};
  const std::string value(raw);
  std::uint64_t n = 0;
  bool ok = !value.empty() && value.size() <= 20;
  for (const char ch : value) {
    const auto digit = static_cast<std::uint64_t>(ch - '0');
    if (ch < '0' || ch > '9' || n > (UINT64_MAX - digit) / 10) {
      ok = false;
      break;
    }
    n = n * 10 + digit;
  }
  if (ok) return {n, ""};
  return {0, "monoprop_ROUTING_SEED='" + value +
                 "' is not a seed: it must be decimal digits for a number from 0 to 18446744073709551615."};
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Routing::Routing(const mpi::Comm& comm, int threads, int slots) : ranks_(comm.size()), threads_(threads) {
  const Setting kind = routing_kind(), seed = routing_seed();
  // Every rank takes part before any rank raises: the check must not deadlock.
  // Maxima of (x, ~x) give each value's maximum and minimum at once.
  std::uint64_t v[6] = {!kind.error.empty(), !seed.error.empty(), kind.value, ~kind.value, seed.value, ~seed.value};
  comm.max(v, 6);
  const bool kind_differs = v[2] != ~v[3], seed_differs = v[4] != ~v[5];
  if (!kind.error.empty()) throw UsageError(kind.error);
  if (!seed.error.empty()) throw UsageError(seed.error);
  if (v[0]) throw UsageError("monoprop_ROUTING is invalid on another rank; set it to the same valid value everywhere.");
  if (v[1])
    throw UsageError("monoprop_ROUTING_SEED is invalid on another rank; set it to the same valid value everywhere.");
  if (kind_differs)
    throw UsageError(
        "monoprop_ROUTING differs across ranks; set the same value on every rank (a mismatch would "
        "deadlock the exchange).");
  if (seed_differs)
    throw UsageError(
        "monoprop_ROUTING_SEED differs across ranks; set the same value on every rank (a mismatch "
        "would deadlock the exchange).");
  kind_ = static_cast<Kind>(kind.value);
  if (!linear() || ranks_ == 1) return;

  const int d = std::countr_zero(static_cast<unsigned>(ranks_));
  if (!std::has_single_bit(static_cast<unsigned>(ranks_)) || d > std::min(slots, 64))
    throw UsageError("linear rank routing needs a power-of-two rank count R with log2 R <= min(2N, 64) = " +
                     std::to_string(std::min(slots, 64)) + "; got R = " + std::to_string(ranks_) +
                     ". Launch a power-of-two number of ranks, or set monoprop_ROUTING=splitmix on every rank.");
  bits_ = d;
  // Draw the basis until its low d bits span all d bits (full rank).
  std::uint64_t state = seed.value;
  const std::uint64_t mask = d == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << d) - 1;
  do {
    basis_.assign(static_cast<std::size_t>(slots), 0);
    for (auto& b : basis_) b = splitmix64(state) & mask;
  } while (span(basis_) < d);
}

std::vector<int> Routing::peers(int rank, const std::uint64_t* words, int n_words) const {
  std::vector<int> out;
  if (ranks_ == 1) return out;
  if (linear()) {
    if (const std::uint64_t s = shift(words, n_words)) out.push_back(rank ^ static_cast<int>(s));
    return out;
  }
  for (int r = 0; r < ranks_; ++r)
    if (r != rank) out.push_back(r);
  return out;
}

std::uint64_t Routing::shift(const std::uint64_t* words, int n_words) const {
  if (bits_ == 0) return 0;
  std::uint64_t h = 0;
  for (int w = 0; w < n_words; ++w)
    for (std::uint64_t bits = words[w]; bits; bits &= bits - 1)
      h ^= basis_[static_cast<std::size_t>(64 * w + std::countr_zero(bits))];
  return h;
}

int Routing::span(const std::vector<std::uint64_t>& shifts) {
  // Insertion into a GF(2) basis kept by leading bit.
  std::uint64_t basis[64] = {};
  int rank = 0;
  for (std::uint64_t x : shifts)
    for (int bit = 63; bit >= 0 && x; --bit) {
      if (!((x >> bit) & 1)) continue;
      if (!basis[bit]) {
        basis[bit] = x;
        ++rank;
        break;
      }
      x ^= basis[bit];
    }
  return rank;
}

}  // namespace monoprop
