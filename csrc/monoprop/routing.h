// Which rank and which shard own a monomial: every rank must find a term's
// owner, and a gate's partner lookups should reach few ranks.
//
// Linear routing (the default): a GF(2)-linear hash h(M), the xor of basis
// vectors v_i over the set slots i of M, keeps its low d = log2 R bits as the
// rank. Since h(M xor G) = h(M) xor h(G), every partner a rank looks up for a
// gate G lives on the single peer r xor h_d(G). Splitmix routing spreads the
// splitmix hash q over all R x T owners instead: any R, but a gate's lookups
// reach several ranks. Within a rank, the shard always comes from q.
#pragma once

#include <cstdint>
#include <vector>

#include "comm.h"

namespace monoprop {

class Routing {
 public:
  enum class Kind : std::uint8_t { Linear, Splitmix };

  // One rank, T = threads.
  explicit Routing(int threads = 1) : threads_(threads) {}
  // Reads monoprop_ROUTING and monoprop_ROUTING_SEED, checks on every rank of
  // `comm` that they agree (collective: a mismatch raises on every rank), and
  // draws the basis for `slots` slots. Throws UsageError naming the variable.
  Routing(const mpi::Comm& comm, int threads, int slots);

  int ranks() const { return ranks_; }
  int bits() const { return bits_; }
  bool linear() const { return kind_ == Kind::Linear; }
  Kind kind() const { return kind_; }
  // v_i per slot (linear routing over R > 1; empty otherwise).
  const std::vector<std::uint64_t>& basis() const { return basis_; }

  // h_d of a monomial given by its words (0 unless linear over R > 1).
  std::uint64_t shift(const std::uint64_t* words, int n_words) const;
  // The rank of a monomial with words `words` and splitmix hash q.
  int rank_of(const std::uint64_t* words, int n_words, std::uint64_t q) const {
    if (ranks_ == 1) return 0;
    return linear() ? static_cast<int>(shift(words, n_words)) : spread_rank(q);
  }
  // The rank of a monomial of splitmix hash q under splitmix routing.
  int spread_rank(std::uint64_t q) const {
    return static_cast<int>(global_owner(q) / static_cast<std::uint64_t>(threads_));
  }
  // The shard, within its rank, of a monomial with splitmix hash q.
  int shard_of(std::uint64_t q) const {
    if (ranks_ == 1 || linear()) return static_cast<int>(scale(q, static_cast<std::uint64_t>(threads_)));
    return static_cast<int>(global_owner(q) % static_cast<std::uint64_t>(threads_));
  }
  // The peers, ascending, that rank `rank` sends the lookups of a layer with
  // generator `words` to: none on one rank or when the layer stays local; with
  // linear routing the single peer rank xor h_d(G); with splitmix all others.
  std::vector<int> peers(int rank, const std::uint64_t* words, int n_words) const;
  // The number of bits spanned (over GF(2)) by `shifts`.
  static int span(const std::vector<std::uint64_t>& shifts);

 private:
  // q folded to 32 bits, then scaled onto [0, n).
  static std::uint64_t scale(std::uint64_t q, std::uint64_t n) {
    return (std::uint64_t{static_cast<std::uint32_t>(q ^ (q >> 32))} * n) >> 32;
  }
  std::uint64_t global_owner(std::uint64_t q) const {
    return scale(q, static_cast<std::uint64_t>(ranks_) * static_cast<std::uint64_t>(threads_));
  }

  Kind kind_ = Kind::Linear;
  int ranks_ = 1, threads_ = 1, bits_ = 0;
  std::vector<std::uint64_t> basis_;  // v_i per slot, low `bits_` bits
};

}  // namespace monoprop
