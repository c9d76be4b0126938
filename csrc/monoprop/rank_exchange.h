// The rank exchange of a gate layer (MPI): lookups of partners that another
// rank owns go to it, its answers come back, and the entries the two ranks
// then share are recorded on both in one canonical order (remote.h): for
// ranks r < p, first the entries r asked p about (in r's asking order), then
// those p asked r about. Only the team's primary calls MPI; without peers
// none of this runs.
//
// The exchange owns what travels and what a rank keeps about it, by peer;
// the rules of the layer (who is born, which entry is a half, who records
// a pair) are the caller's, passed in as callables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "comm.h"
#include "remote.h"
#include "team.h"

namespace monoprop {

// What the owner of a partner found, for the shard that asked.
enum class Answer : std::uint8_t {
  Born,         // absent: appended as a new term
  Found,        // held, and not asking for its own partner: the asker records the pair
  FoundAsking,  // held and asking too: one of the two records it (layer_step.h)
};

// A lookup of the partner b = a xor G of an active term a.
template <typename Key>
struct Query {
  Key partner;
  std::uint32_t a;      // in the asking shard
  std::uint32_t b = 0;  // in the owner shard (Found, FoundAsking, Born)
  std::int8_t sign;     // s of i a G = s b
  Answer answer = Answer::Born;
};

// Linear routing sends a layer's lookups to a single peer, a different one
// from layer to layer. Buffers kept by rank would then hold R - 1 layers'
// worth of lookups, and a rank's memory would not shrink as ranks are
// added; so before a layer with one peer, that peer's (emptied) buffer
// trades places with the largest. Splitmix routing talks to every peer in
// every layer, so there is nothing idle to trade.
template <typename V>
void lend_to_peer(std::vector<V>& by_rank, const std::vector<int>& peers) {
  if (peers.size() != 1) return;
  V& mine = by_rank[static_cast<std::size_t>(peers[0])];
  V* largest = &mine;
  for (V& other : by_rank)
    if (other.capacity() > largest->capacity()) largest = &other;
  if (largest != &mine) mine.swap(*largest);
}

template <typename Key>
class RankExchange {
 public:
  // What a rank keeps about each lookup it received.
  struct Incoming {
    std::uint64_t hash;
    std::uint32_t found;  // the slot of the partner in its shard (found, or born)
    std::int32_t shard;
    Answer answer;
  };

  // Empty buffers for each of `ranks` ranks.
  explicit RankExchange(std::size_t ranks = 0)
      : out_(ranks), in_(ranks), incoming_(ranks), answers_out_(ranks), answers_in_(ranks) {}

  // Primary: the lookups for each peer go out, what the peers asked comes
  // in. each_asked(r, f) calls f(shard, query) for every lookup this rank
  // asks of rank r, in shard order and each shard's asking order.
  template <typename EachAsked>
  void send(const mpi::Comm& comm, const std::vector<int>& peers, EachAsked&& each_asked) {
    // What earlier layers left in these buffers is spent: they may change places.
    lend_to_peer(out_, peers);
    lend_to_peer(in_, peers);
    lend_to_peer(incoming_, peers);
    lend_to_peer(answers_out_, peers);
    lend_to_peer(answers_in_, peers);
    std::vector<mpi::Parcel> parcels;
    for (const int r : peers) {
      std::vector<Wire>& out = out_[static_cast<std::size_t>(r)];
      out.clear();
      each_asked(static_cast<std::size_t>(r), [&](std::size_t, const Query<Key>& q) { out.push_back({q.partner}); });
      parcels.push_back({r, out.data(), out.size(), nullptr, 0, &in_[static_cast<std::size_t>(r)]});
    }
    comm.exchange(parcels, sizeof(Wire));
    for (const int r : peers)
      incoming_[static_cast<std::size_t>(r)].resize(in_[static_cast<std::size_t>(r)].size() / sizeof(Wire));
  }

  // Thread t of a team of `size` finds the shard (owner(hash)) of its part of
  // the lookups each peer asked; each starts as Born.
  template <typename Owner>
  void sort(int t, int size, const std::vector<int>& peers, Owner&& owner) {
    for (const int peer : peers) {
      const auto r = static_cast<std::size_t>(peer);
      std::vector<Incoming>& incoming = incoming_[r];
      const auto [lo, hi] = chunk(t, size, incoming.size());
      for (std::size_t e = lo; e < hi; ++e) {
        const std::uint64_t h = partner(r, e).hash();
        incoming[e] = {h, 0, owner(h), Answer::Born};
      }
    }
  }

  // The e-th partner rank r asked this rank about, and what is kept about it.
  const Key& partner(std::size_t r, std::size_t e) const {
    return reinterpret_cast<const Wire*>(in_[r].data())[e].partner;
  }
  std::vector<Incoming>& incoming(std::size_t r) { return incoming_[r]; }

  // Primary: the answers go back and come in (each_asked as in send(), now
  // given each query to set its answer), and the entries this rank shares
  // with each peer are recorded into `remote` in the canonical order:
  // asked_code(query) is the code (remote.h) of a lookup this rank asked,
  // answered_code(incoming, partner) that of one a peer asked, 0 where the
  // entry is recorded by the other side alone.
  template <typename EachAsked, typename AskedCode, typename AnsweredCode>
  void answer(const mpi::Comm& comm, const std::vector<int>& peers, int rank, EachAsked&& each_asked,
              AskedCode&& asked_code, AnsweredCode&& answered_code, RemoteLayer& remote) {
    std::vector<mpi::Parcel> parcels;
    for (const int r : peers) {
      const auto p = static_cast<std::size_t>(r);
      answers_out_[p].clear();
      for (const Incoming& in : incoming_[p]) answers_out_[p].push_back(in.answer);
      answers_in_[p].resize(out_[p].size());
      parcels.push_back(
          {r, answers_out_[p].data(), answers_out_[p].size(), answers_in_[p].data(), out_[p].size(), nullptr});
    }
    comm.exchange(parcels, sizeof(Answer));

    remote.blocks.clear();
    remote.entries = 0;
    for (const int r : peers) {
      const auto p = static_cast<std::size_t>(r);
      RemoteBlock b;
      b.peer = r;
      b.counts = rank < r;
      auto add = [&](std::size_t shard, std::uint32_t slot, int code) {
        if (code == 0) return;
        b.shards.push_back(static_cast<std::uint32_t>(shard));
        b.slots.push_back(slot);
        b.codes.push_back(static_cast<std::int8_t>(code));
      };
      auto asked = [&] {  // what this rank asked r, in shard order
        std::size_t e = 0;
        each_asked(p, [&](std::size_t s, Query<Key>& q) {
          q.answer = answers_in_[p][e++];
          add(s, q.a, asked_code(q));
        });
      };
      auto answered = [&] {  // what r asked this rank, in r's order
        for (std::size_t e = 0; e < incoming_[p].size(); ++e) {
          const Incoming& in = incoming_[p][e];
          add(static_cast<std::size_t>(in.shard), in.found, answered_code(in, partner(p, e)));
        }
      };
      if (rank < r) {
        asked();
        answered();
      } else {
        answered();
        asked();
      }
      if (b.size() == 0) continue;
      b.start = remote.entries;
      remote.entries += b.size();
      remote.blocks.push_back(std::move(b));
    }
  }

 private:
  // What travels to the rank that owns a partner.
  struct Wire {
    Key partner;
  };
  std::vector<std::vector<Wire>> out_;
  std::vector<std::vector<std::byte>> in_;  // Wire records from each peer
  std::vector<std::vector<Incoming>> incoming_;
  std::vector<std::vector<Answer>> answers_out_, answers_in_;
};

}  // namespace monoprop
