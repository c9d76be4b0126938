// The scan of a gate layer.
//
// The truncation rule (truncation_rule.h) sorts a layer's anticommuting
// terms: an active term whose partner b = a xor G is kept asks the
// partner's owner to look b up (it is *asking*). A held partner makes a pair
// that rotates both ways, a missing one is born. Every other anticommuting
// term is *quiet*: it is only scaled by cs, unless another term's lookup
// finds it, which makes it the partner in that term's pair. So a pair {a, b}
// rotates when at least one of its terms asked, and a term is born only from
// an asking term whose partner is not held. Example: Pauli Z0 = 1e-5 and
// Y0 = 2e-5 under exp(+i pi/4 X0) with lower_atol 1e-4 are both quiet and
// both end near 0; they do not swap.
//
// The scan reads the bit columns (bit_columns.h): the xor of the generator's
// columns marks 64 anticommuting terms at a time. Where coefficients are
// evolved (propagate, a seeded build) a quiet term is scaled right away, in
// the same pass; a lookup that finds it later divides the scaling out again
// to rotate the pair from the value before the layer (rotation.h).
#pragma once

#include <bit>

namespace monoprop {

// Shard s's part of a layer: the anticommuting terms, word by word. A word
// with hits waits `ahead` words in a ring while its coefficients, asked for
// when it was found, arrive; active terms then wait in a batch while their
// key rows arrive (test_partners).
template <typename A, int W, typename I>
void Propagator<A, W, I>::scan(int s, const LayerPlan& plan, double* c) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  const std::size_t n = me.keys.size();
  // A term is quiet at most once a layer: room for every term, of which only
  // the pages written become resident (column.h).
  me.quiet.clear();
  me.quiet_late.clear();
  me.dark.clear();
  if (plan.record) {
    me.quiet.reserve(n);
    me.quiet_late.reserve(n);
    if (plan.dark) me.dark.reserve(n);
  }
  for (auto& out : me.outbox) out.clear();
  for (auto& out : me.late) out.clear();
  for (auto& out : me.remote_out) out.clear();
  lend_to_peer(me.remote_out, plan.peers);
  if (me.flags.size() < n) me.flags.resize(n);

  const TruncationRule truncation = TruncationRule::of(config_.truncation, c != nullptr, raised_atol_, plan.k);
  // What the hot loop reads for every term. A Transfer leaves its quiet
  // terms as they are (cs = 1), but records them as cos entries all the
  // same: each drops its transfer sn * c_a, which a bounded replay counts
  // (replay.h).
  struct Hot {
    double* c;
    double sn, cs;
    bool scales, record, track, classify;
    TruncationRule truncation;
  };
  const Hot hot{
      .c = c,
      .sn = plan.sn,
      .cs = plan.cs,
      .scales = plan.kind == LayerKind::Damp || plan.kind == LayerKind::Select,
      .record = plan.record,
      .track = plan.track,
      .classify = plan.classify,
      .truncation = truncation,
  };
  ActiveBatch batch;
  auto visit = [&](std::size_t w, std::uint64_t hits) {
    // A copy in registers: through the capture, each number would be read
    // again after every store to c, which might alias it.
    const Hot r = hot;
    // The word's dropped sine branches, summed in registers and added to the
    // shard's sums when the word is done: a running sum through memory would
    // chain every quiet term to the last.
    rotation::V2 drops = {};
    std::size_t n_drops = 0;
    ReachTally lit;  // the word's lit branches (reach.h)
    for (; hits; hits &= hits - 1) {
      const auto i = static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(hits)));
      if (r.scales) {                                              // a noise scaling: every term it marks is quiet
        quiet(me, me.quiet, r.c, i, r.cs, r.sn, r.record, false);  // exact: nothing dropped
        continue;
      }
      if (r.truncation.untouched([&] { return plan.frame ? plan.truth(me.keys.key(i)).length() : me.keys.length(i); }))
        continue;
      const double moved = r.c ? std::abs(r.sn * r.c[i]) : 0.0;
      if (!r.truncation.active(moved)) {  // quiet(), with the sum kept here
        if (r.track) {
          drops += rotation::V2{moved, moved * moved};
          ++n_drops;
        }
        r.c[i] *= r.cs;
        if (r.classify) {  // the branch's reach: its key, past the generator
          const double reach = reach_of(plan, me.keys.key(i) ^ plan.generator);
          if (reach > 0.0) lit.add(moved, reach);
          if (r.record) (reach > 0.0 ? me.quiet : me.dark).push_reserved(i);
        } else if (r.record) {
          me.quiet.push_reserved(i);
        }
        continue;
      }
      me.keys.prefetch_row(static_cast<I>(i));
      batch.term[batch.size] = i;
      batch.moved[batch.size] = moved;
      if (++batch.size == ActiveBatch::kSize) test_partners(s, plan, truncation, c, batch);
    }
    if (n_drops) me.quiet_drops.add_sums(w, drops, n_drops);
    me.reach_tally += lit;
  };
  constexpr std::size_t ahead = 4;
  std::size_t ring_word[ahead];
  std::uint64_t ring_hits[ahead];
  std::size_t queued = 0, words = 0;
  auto word = [&](std::size_t w, std::uint64_t hits) {
    if ((++words & 255) == 0) interrupts_.poll(s == 0, 256 * 64);  // shard 0 is the primary's
    if (hits == 0) return;
    if (c)  // one line of coefficients per byte of the mask that has hits
      for (std::uint64_t lines = hits; lines; lines &= ~(std::uint64_t{0xff} << (std::countr_zero(lines) & ~7)))
        __builtin_prefetch(c + 64 * w + (std::countr_zero(lines) & ~7));
    const std::size_t r = queued++ % ahead;
    if (queued > ahead) visit(ring_word[r], ring_hits[r]);
    ring_word[r] = w;
    ring_hits[r] = hits;
  };
  if (!plan.probes.empty())
    me.keys.bits().probe_words(plan.probes, plan.patterns, word);
  else if (plan.patterns)
    me.keys.bits().pattern_words(plan.columns.data(), plan.columns.size(), plan.patterns, word);
  else
    me.keys.bits().xor_words(plan.columns.data(), plan.columns.size(), word);
  for (std::size_t q = queued > ahead ? queued - ahead : 0; q < queued; ++q)
    visit(ring_word[q % ahead], ring_hits[q % ahead]);
  test_partners(s, plan, truncation, c, batch);
}

// A quiet term: scaled by cos right away where coefficients are evolved,
// listed when the layer is recorded (its cos entry, unless a lookup finds it),
// and where tracked its sine branch |sn * c| before the scaling is summed as
// dropped (settle_part() takes it back if a lookup finds the term).
template <typename A, int W, typename I>
void Propagator<A, W, I>::quiet(Shard& me, Column<std::uint32_t>& list, double* c, std::uint32_t i, double cs,
                                double sn, bool record, bool track) {
  if (track) me.quiet_drops.add(sn * c[i]);
  if (c) c[i] *= cs;
  if (record) list.push_reserved(i);
}

// The batch's active terms build their partners and test them; those that
// keep theirs ask, the others are quiet.
template <typename A, int W, typename I>
void Propagator<A, W, I>::test_partners(int s, const LayerPlan& plan, const TruncationRule& truncation, double* c,
                                        ActiveBatch& batch) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  for (std::size_t e = 0; e < batch.size; ++e) {
    const std::uint32_t i = batch.term[e];
    const Key key = me.keys.key(i), partner = key ^ plan.generator;
    if (truncation.keeps_partner(plan.truth(partner), batch.moved[e])) {
      ask(me, plan, i, key, partner);
      continue;
    }
    const double reach = plan.classify ? reach_of(plan, partner) : 1.0;
    if (plan.classify && reach > 0.0) me.reach_tally.add(c ? batch.moved[e] : 1.0, reach);
    quiet(me, reach > 0.0 ? me.quiet_late : me.dark, c, i, plan.cs, plan.sn, plan.record, plan.track);
  }
  batch.size = 0;
}

// Term i asks the owner of its partner to look it up: the owner shard of this
// rank, or the rank that holds it. An upper term (holding the generator's top
// slot) waits: if its partner asks as well, the partner's lookup finds it and
// its own is not needed (resolve).
template <typename A, int W, typename I>
void Propagator<A, W, I>::ask(Shard& me, const LayerPlan& plan, std::uint32_t i, const Key& key, const Key& partner) {
  me.flags.set(i, TermFlags::kAsking);
  // A shard that is its rank's only one owns every partner: no hash needed
  // (the lookup computes it).
  const bool single = threads() == 1 && plan.peers.empty();
  const std::uint64_t h = single ? 0 : partner.hash();
  std::vector<Query>* list = nullptr;
  if (!plan.peers.empty()) {
    const int r = routing_.linear() ? plan.peers[0] : routing_.spread_rank(h);
    if (r != rank_) list = &me.remote_out[static_cast<std::size_t>(r)];
  }
  // A Transfer's partner never asks back: no second round.
  if (!list)
    list = &(key.test(plan.top) && !plan.transfer() ? me.late
                                                    : me.outbox)[single ? 0 : static_cast<std::size_t>(owner(h))];
  // Written field by field where it lies: a Query built aside and copied
  // over read its sign and answer back as one word just after their byte
  // stores, a stalled load per lookup.
  Query& q = list->emplace_back();
  q.partner = partner;
  q.a = i;
  q.sign = static_cast<std::int8_t>(plan.sign(key));
}

}  // namespace monoprop
