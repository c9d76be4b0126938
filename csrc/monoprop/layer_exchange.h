// Propagator: its side of the rank exchange of a gate layer (rank_exchange.h):
// which lookups go to which peer, how the owner answers them, and the rules
// by which the entries two ranks share are recorded. Included by
// propagator.h only.
#pragma once

namespace monoprop {

// Primary: every shard's lookups for each peer go out, in shard order; what
// the peers asked comes in.
template <typename A, int W, typename I>
void Propagator<A, W, I>::send_lookups(const LayerPlan& plan) {
  exchange_.send(config_.comm, plan.peers, [&](std::size_t r, auto&& f) { each_remote_lookup(r, f); });
}

// Thread t hashes its part of the incoming lookups to find their shards.
template <typename A, int W, typename I>
void Propagator<A, W, I>::sort_incoming(int t, Team& team, const LayerPlan& plan) {
  exchange_.sort(t, team.size(), plan.peers, [&](std::uint64_t h) { return owner(h); });
}

// Shard s looks up the incoming lookups it owns (counting their births), like
// its own shards' lookups in resolve().
template <typename A, int W, typename I>
void Propagator<A, W, I>::resolve_incoming(int s, const LayerPlan& plan) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  std::vector<std::size_t> mine;
  for (const int peer : plan.peers) {
    const auto r = static_cast<std::size_t>(peer);
    std::vector<Incoming>& incoming = exchange_.incoming(r);
    mine.clear();
    for (std::size_t e = 0; e < incoming.size(); ++e)
      if (incoming[e].shard == s) mine.push_back(e);
    lookup_all(
        me.keys, mine.size(), [&](std::size_t i) -> const Key& { return exchange_.partner(r, mine[i]); },
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
// its partner lacks the generator's top slot; a half is recorded by both.
template <typename A, int W, typename I>
void Propagator<A, W, I>::answer_lookups(const LayerPlan& plan, RemoteLayer& remote) {
  auto each_asked = [&](std::size_t r, auto&& f) { each_remote_lookup(r, f); };
  auto asked_code = [&](const Query& q) {
    return half(q.answer, q.partner, plan) ? 2 * q.sign : owns_rotation(q.answer, q.partner, plan) ? q.sign : 0;
  };
  auto answered_code = [&](const Incoming& in, const Key& mine) {
    const int sign = plan.sign(mine ^ plan.generator);  // as the asker applies it
    return half(in.answer, mine, plan) ? 3 * sign : owns_rotation(in.answer, mine, plan) ? -sign : 0;
  };
  exchange_.answer(config_.comm, plan.peers, rank_, each_asked, asked_code, answered_code, remote);
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
