// Reach (reach.h): the space of monomials whose branches can end fully
// paired, against an enumeration; and the reach tally's weighted mean.
#include "monoprop/reach.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cpp/algebra_reference.h"
#include "cpp/check.h"
#include "monoprop/algebra.h"

using namespace monoprop;
using namespace monoprop_test;

// ReachSpace walked back through random rotations and quarter turns of 3
// modes, against the set of monomials from which some choice of branches (P or
// P xor G at each rotation; the quarter turn's image at each turn) ends fully
// paired, enumerated over all 64 monomials.
template <typename Algebra, bool Majorana>
static void reach_space_against_enumeration(std::mt19937& rng) {
  constexpr int modes = 3, slots = 2 * modes;
  constexpr unsigned count = 1u << slots;
  auto key = [](unsigned bits) {
    Monomial<1> k;
    k.words[0] = bits;
    return k;
  };
  for (int trial = 0; trial < 300; ++trial) {
    struct Move {
      bool turn;
      unsigned key;
    };
    std::vector<Move> moves(1 + rng() % 7);
    for (Move& m : moves) m = {rng() % 3 == 0, 1 + static_cast<unsigned>(rng() % (count - 1))};
    std::vector<bool> reach(count);
    for (unsigned p = 0; p < count; ++p) {
      bool paired = true;
      for (int q = 0; q < modes; ++q) paired = paired && ((p >> (2 * q)) & 1) == ((p >> (2 * q + 1)) & 1);
      reach[p] = paired;
    }
    ReachSpace<1> space = ReachSpace<1>::paired(modes);
    for (std::size_t i = moves.size(); i-- > 0;) {
      const Move m = moves[i];
      std::vector<bool> before(count);
      for (unsigned p = 0; p < count; ++p) {
        const bool anti = scanned_anticommutes<Algebra>(key(p), key(m.key), slots);
        before[p] = m.turn ? reach[anti ? p ^ m.key : p] : reach[p] || reach[p ^ m.key];
      }
      reach = before;
      if (m.turn)
        space.turn(key(m.key), anticommutation_vector<Majorana>(key(m.key), slots));
      else
        space.add(key(m.key));
    }
    bool same = true;
    for (unsigned p = 0; p < count; ++p) same = same && space.contains(key(p)) == reach[p];
    CHECK(same);
    if (space.everything()) CHECK(std::all_of(reach.begin(), reach.end(), [](bool r) { return r; }));
  }
}

// The mean weight of a tally: x^2-weighed, to 16 bits, from the branches
// counted where taking some back cancels the sums.
TEST(test_reach_tally) {
  ReachTally none;
  CHECK(none.reach() == 1.0);
  ReachTally t;
  t.add(3.0, 0.2);
  t.add(4.0, 1.0);
  const double mean = (9.0 * 0.04 + 16.0) / 25.0;
  CHECK(std::abs(t.reach() - mean) <= mean * 0x1p-16);
  CHECK(t.count == 2 && t.sum == 7.0 && std::abs(t.reached - (3.0 * std::sqrt(0.2) + 4.0)) < 1e-15);
  t.add(4.0, 1.0, -1.0);  // taken back: the rest is the branch of weight 0.2
  CHECK(std::abs(t.reach() - 0.04) <= 0.04 * 0x1p-16);
  ReachTally cancelled;  // a branch of weight 0.2 beside a large one, taken back a few ulps off
  cancelled.add(1.0, 0.2);
  cancelled.add(1e3, 1.0);
  cancelled.add(1e3 * (1.0 + 1e-12), 1.0, -1.0);
  // The net sums keep 1 part in 1e6 of what was counted, and that only to a few
  // bits: the mean of the branches counted stands in for it.
  const double counted = (0.04 + 1e6) / (1.0 + 1e6);
  CHECK(std::abs(cancelled.reach() - counted) <= counted * 0x1p-16);
}

TEST(test_reach_space) {
  std::mt19937 rng(51);
  reach_space_against_enumeration<PauliAlgebra, false>(rng);
  reach_space_against_enumeration<MajoranaAlgebra, true>(rng);
}
