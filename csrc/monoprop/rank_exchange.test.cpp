// The rank exchange (rank_exchange.h) on two and three ranks of a world of
// threads (tests/cpp/ranks.h): every rank holds random keys in two shards
// (by hash) and asks the owners of the partners a xor G of some of its own;
// each owner answers from what it holds. Every lookup must reach its owner's
// right shard in the asker's order, every answer come back to the query that
// asked, and the entries two ranks record for each other line up in one
// order on both sides: the e-th entry of r's block for p and of p's block
// for r are the same lookup, seen from each end.
#include "monoprop/rank_exchange.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "cpp/check.h"
#include "cpp/ranks.h"
#include "monoprop/monomial.h"

using namespace monoprop;
using namespace monoprop_test;

namespace {

using Key = Monomial<1>;

// Keys 1..n, each owned by rank hash % R and, there, shard (hash / R) % 2.
struct World {
  int ranks;
  std::vector<Key> keys;
  int rank_of(const Key& k) const { return static_cast<int>(k.hash() % static_cast<std::uint64_t>(ranks)); }
  int shard_of(std::uint64_t h) const { return static_cast<int>(h / static_cast<std::uint64_t>(ranks) % 2); }
};

Key key(std::uint64_t bits) {
  Key k;
  k.words[0] = bits;
  return k;
}

// One end of an entry as a block records it: the key of its term.
struct End {
  std::uint64_t key;
  int code;
};

void check_world(int ranks, std::uint64_t seed) {
  World world{ranks, {}};
  std::mt19937_64 rng(seed);
  const Key G = key(0b101101);  // over 10 bits of keys: about a third of the partners are held
  for (int i = 0; i < 400; ++i) world.keys.push_back(key(rng() & 0x3ff));
  std::mutex lock;
  std::vector<std::vector<std::vector<End>>> blocks(static_cast<std::size_t>(ranks),
                                                    std::vector<std::vector<End>>(static_cast<std::size_t>(ranks)));
  bool routed = true, answered = true;
  run_ranks(ranks, [&](const mpi::Comm& comm, int rank) {
    // This rank's shards: their keys by slot, and an index.
    std::vector<std::vector<Key>> held(2);
    std::map<std::uint64_t, std::pair<int, std::uint32_t>> where;
    for (const Key& k : world.keys)
      if (world.rank_of(k) == rank && !where.count(k.words[0])) {
        const int s = world.shard_of(k.hash());
        where[k.words[0]] = {s, static_cast<std::uint32_t>(held[static_cast<std::size_t>(s)].size())};
        held[static_cast<std::size_t>(s)].push_back(k);
      }
    // Lookups of every other held key's partner that another rank owns, by owner rank.
    std::vector<std::vector<std::vector<Query<Key>>>> asked(
        2, std::vector<std::vector<Query<Key>>>(static_cast<std::size_t>(ranks)));
    for (std::size_t s = 0; s < 2; ++s)
      for (std::uint32_t a = 0; a < held[s].size(); a += 2) {
        const Key partner = held[s][a] ^ G;
        const int owner = world.rank_of(partner);
        if (owner != rank) asked[s][static_cast<std::size_t>(owner)].push_back({partner, a, 0, 1, Answer::Born});
      }
    std::vector<int> peers;
    for (int p = 0; p < ranks; ++p)
      if (p != rank) peers.push_back(p);
    auto each_asked = [&](std::size_t r, auto&& f) {
      for (std::size_t s = 0; s < 2; ++s)
        for (Query<Key>& q : asked[s][r]) f(s, q);
    };
    RankExchange<Key> exchange(static_cast<std::size_t>(ranks));
    exchange.send(comm, peers, each_asked);
    exchange.sort(0, 1, peers, [&](std::uint64_t h) { return world.shard_of(h); });
    bool ok = true;
    for (const int p : peers) {  // the owner answers: Found where held (its slot), else Born
      auto& incoming = exchange.incoming(static_cast<std::size_t>(p));
      for (std::size_t e = 0; e < incoming.size(); ++e) {
        const Key& partner = exchange.partner(static_cast<std::size_t>(p), e);
        ok = ok && world.rank_of(partner) == rank && incoming[e].shard == world.shard_of(partner.hash()) &&
             incoming[e].hash == partner.hash();
        const auto found = where.find(partner.words[0]);
        incoming[e].answer = found == where.end() ? Answer::Born : Answer::Found;
        incoming[e].found = found == where.end() ? 0 : found->second.second;
      }
    }
    RemoteLayer remote;
    // A found partner is recorded by both ends as a pair (+1 here, -1 there); a born one by none.
    exchange.answer(
        comm, peers, rank, each_asked, [](const Query<Key>& q) { return q.answer == Answer::Born ? 0 : 1; },
        [](const auto& in, const Key&) { return in.answer == Answer::Born ? 0 : -1; }, remote);
    bool right = true;
    for (std::size_t s = 0; s < 2; ++s)
      for (const auto& by_peer : asked[s])
        for (const Query<Key>& q : by_peer) {
          const bool held_there = std::count(world.keys.begin(), world.keys.end(), q.partner) > 0;
          right = right && (q.answer == Answer::Found) == held_there;
        }
    const std::lock_guard<std::mutex> hold(lock);
    routed = routed && ok;
    answered = answered && right;
    for (const RemoteBlock& b : remote.blocks)
      for (std::size_t e = 0; e < b.size(); ++e)
        blocks[static_cast<std::size_t>(rank)][static_cast<std::size_t>(b.peer)].push_back(
            {held[b.shards[e]][b.slots[e]].words[0], b.codes[e]});
  });
  CHECK(routed);
  CHECK(answered);
  bool paired = true;
  std::size_t entries = 0;
  for (std::size_t r = 0; r < blocks.size(); ++r)
    for (std::size_t p = 0; p < blocks.size(); ++p) {
      const std::vector<End>&mine = blocks[r][p], &theirs = blocks[p][r];
      paired = paired && mine.size() == theirs.size();
      for (std::size_t e = 0; paired && e < mine.size(); ++e)
        paired = (mine[e].key ^ theirs[e].key) == G.words[0] && mine[e].code == -theirs[e].code;
      entries += mine.size();
    }
  CHECK(paired);
  CHECK(entries > 0);
}

}  // namespace

TEST(lookups_reach_their_owners_and_shared_entries_line_up) {
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    check_world(2, seed);
    check_world(3, seed);
  }
}
