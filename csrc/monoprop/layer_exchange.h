// The rank exchange of a gate layer (MPI): lookups of partners that another
// rank owns go to it and the answers come back; the entries the two ranks
// then share are recorded on both in one canonical order (remote.h). Only
// the team's primary calls MPI. Without peers none of this runs.
// Included by propagator.h only.
#pragma once

namespace monoprop {

// Primary: every shard's lookups for each peer, in shard order, go out; what
// the peers asked comes in.
template <typename A, int W, typename I>
void Propagator<A, W, I>::send_lookups(const LayerPlan& plan) {
  Exchange& x = exchange_;
  // What earlier layers left in these buffers is spent: they may change places.
  lend_to_peer(x.out, plan.peers);
  lend_to_peer(x.in, plan.peers);
  lend_to_peer(x.incoming, plan.peers);
  lend_to_peer(x.answers_out, plan.peers);
  lend_to_peer(x.answers_in, plan.peers);
  std::vector<mpi::Parcel> parcels;
  for (const int r : plan.peers) {
    std::vector<Wire>& out = x.out[static_cast<std::size_t>(r)];
    out.clear();
    for (const Shard& shard : shards_)
      for (const Query& q : shard.remote_out[static_cast<std::size_t>(r)]) out.push_back({q.partner});
    parcels.push_back({r, out.data(), out.size(), nullptr, 0, &x.in[static_cast<std::size_t>(r)]});
  }
  config_.comm.exchange(parcels, sizeof(Wire));
  for (const int r : plan.peers)
    x.incoming[static_cast<std::size_t>(r)].resize(x.in[static_cast<std::size_t>(r)].size() / sizeof(Wire));
}

// Thread t hashes its part of the incoming lookups to find their shards.
template <typename A, int W, typename I>
void Propagator<A, W, I>::sort_incoming(int t, Team& team, const LayerPlan& plan) {
  for (const int peer : plan.peers) {
    const auto r = static_cast<std::size_t>(peer);
    const auto* wire = reinterpret_cast<const Wire*>(exchange_.in[r].data());
    std::vector<Incoming>& incoming = exchange_.incoming[r];
    const auto [lo, hi] = chunk(t, team.size(), incoming.size());
    for (std::size_t e = lo; e < hi; ++e) {
      const std::uint64_t h = wire[e].partner.hash();
      incoming[e] = {h, 0, owner(h), Answer::Born};
    }
  }
}

// Shard s looks up the incoming lookups it owns (counting their births), like
// its own shards' lookups in resolve().
template <typename A, int W, typename I>
void Propagator<A, W, I>::resolve_incoming(int s, const LayerPlan& plan) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  std::vector<std::size_t> mine;
  for (const int r : plan.peers) {
    const auto* wire = reinterpret_cast<const Wire*>(exchange_.in[static_cast<std::size_t>(r)].data());
    std::vector<Incoming>& incoming = exchange_.incoming[static_cast<std::size_t>(r)];
    mine.clear();
    for (std::size_t e = 0; e < incoming.size(); ++e)
      if (incoming[e].shard == s) mine.push_back(e);
    lookup_all(
        me.keys, mine.size(), [&](std::size_t i) -> const Key& { return wire[mine[i]].partner; },
        [&](std::size_t i, I b, std::uint64_t) {
          Incoming& in = incoming[mine[i]];
          if (b == Keys::kEmpty) {
            in.answer = Answer::Born;
            ++me.born;
            return;
          }
          in.found = static_cast<std::uint32_t>(b);
          in.answer = found(me, in.found, plan);
        });
  }
}

// Primary: answers go back to the asking ranks, and the entries this rank
// shares with each peer are recorded in the canonical order (remote.h), by the
// rules of settle(): a lookup records its entry unless both terms asked and
// its partner lacks the generator's top slot.
template <typename A, int W, typename I>
void Propagator<A, W, I>::answer_lookups(const LayerPlan& plan, RemoteLayer& remote) {
  Exchange& x = exchange_;
  std::vector<mpi::Parcel> parcels;
  for (const int r : plan.peers) {
    const auto p = static_cast<std::size_t>(r);
    x.answers_out[p].clear();
    for (const Incoming& in : x.incoming[p]) x.answers_out[p].push_back(in.answer);
    x.answers_in[p].resize(x.out[p].size());
    parcels.push_back(
        {r, x.answers_out[p].data(), x.answers_out[p].size(), x.answers_in[p].data(), x.out[p].size(), nullptr});
  }
  config_.comm.exchange(parcels, sizeof(Answer));

  auto is_half = [&](Answer answer, const Key& partner) {
    return plan.transfer() || (answer != Answer::Born && plan.k && plan.truth(partner).length() > *plan.k);
  };
  auto kept = [&](Answer answer, const Key& partner) {
    return answer != Answer::FoundAsking || partner.test(plan.top);
  };
  remote.blocks.clear();
  remote.entries = 0;
  for (const int r : plan.peers) {
    const auto p = static_cast<std::size_t>(r);
    RemoteBlock b;
    b.peer = r;
    b.counts = rank_ < r;
    auto add = [&](std::size_t shard, std::uint32_t slot, int code) {
      b.shards.push_back(static_cast<std::uint32_t>(shard));
      b.slots.push_back(slot);
      b.codes.push_back(static_cast<std::int8_t>(code));
    };
    auto asked = [&] {  // what this rank asked r, in shard order
      std::size_t e = 0;
      for (std::size_t s = 0; s < shards_.size(); ++s)
        for (Query& q : shards_[s].remote_out[p]) {
          q.answer = x.answers_in[p][e++];
          if (half(q, plan))
            add(s, q.a, 2 * q.sign);
          else if (owns_rotation(q, plan))
            add(s, q.a, q.sign);
        }
    };
    auto answered = [&] {  // what r asked this rank, in r's order
      const auto* wire = reinterpret_cast<const Wire*>(x.in[p].data());
      for (std::size_t e = 0; e < x.incoming[p].size(); ++e) {
        const Incoming& in = x.incoming[p][e];
        const Key& mine = wire[e].partner;
        const int sign = plan.sign(mine ^ plan.generator);  // as the asker applies it
        const auto shard = static_cast<std::size_t>(in.shard);
        if (is_half(in.answer, mine))
          add(shard, in.found, 3 * sign);
        else if (kept(in.answer, mine))
          add(shard, in.found, -sign);
      }
    };
    if (rank_ < r) {
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

// Before a build rotates the shared entries from their inputs: the scan
// scaled this rank's quiet terms already (layer_scan.h); undo that for those
// in a shared pair.
template <typename A, int W, typename I>
void Propagator<A, W, I>::unscale_remote(int s, const RemoteLayer& remote, const LayerPlan& plan, double* const* c) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  for (const RemoteBlock& b : remote.blocks)
    for (std::size_t e = 0; e < b.size(); ++e)
      if (b.shards[e] == static_cast<std::uint32_t>(s) && (b.codes[e] == 1 || b.codes[e] == -1) &&
          b.slots[e] < me.flags.size() && !me.flags.test(b.slots[e], TermFlags::kAsking)) {  // born terms start at 0
        double& y = c[s][b.slots[e]];
        y *= plan.inverse_cs;
        if (plan.track) me.found_drops.add(plan.sn * y);  // a quiet term found rotates: see settle_part()
        if (plan.classify)
          if (const double reach = reach_of(plan, me.keys.key(b.slots[e]) ^ plan.generator); reach > 0.0)
            me.reach_tally.add(std::abs(plan.sn * y), reach, -1.0);
      }
}

}  // namespace monoprop
