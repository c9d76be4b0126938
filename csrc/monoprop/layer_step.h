// One gate layer on every shard: scan, resolve, settle (see propagator.h).
// Included by propagator.h only.
//
// `values` (null in a structural build) are the coefficient columns being
// evolved, one per shard: the operand itself in propagate, a build's working
// values at its seed otherwise. `record` receives each shard's part of the
// layer when the layer goes into a graph.
//
// The scan, the lookups and the rotations poll for an interrupt (interrupt.h)
// every few thousand items: shard 0 is the primary's, which asks the caller;
// an interrupt anywhere in a layer leaves only scratch and appended terms
// behind, which the operation's rollback drops.
#pragma once

namespace monoprop {

template <typename A, int W, typename I>
void Propagator<A, W, I>::apply_layer(int t, Team& team, const LayerPlan& plan, Column<double>** values,
                                      std::vector<Graph>* record, RemoteLayer* remote) {
  const bool ranks = !plan.peers.empty();
  if (t == 0) *remote = {};  // what the last layer shared with other ranks is recorded by now
  team.each(t, [&](int s) { scan(s, plan, values ? values[s]->data() : nullptr); });
  team.sync(t);
  if (ranks) {  // the primary sends the lookups; each thread then finds the shards of what arrived
    if (t == 0) send_lookups(plan);
    team.sync(t);
    sort_incoming(t, team, plan);
    team.sync(t);
  }
  team.each(t, [&](int s) {
    resolve(s, plan, false);
    post_late(s);
  });
  team.sync(t);
  team.each(t, [&](int s) { resolve(s, plan, true); });
  if (error_budget_.on && values && plan.kind == LayerKind::Rotation) {  // the births are weighed together
    team.sync(t);
    if (t == 0) spend_budget(plan, values);
    team.sync(t);
  }
  if (fits_by_truncation(plan, values)) {  // the rank's births are weighed together (layer_fit.h)
    team.sync(t);
    if (t == 0) fit_births(plan, values);
    team.sync(t);
  } else {
    team.each(t, [&](int s) { check_growth(s, plan, values != nullptr); });
  }
  team.each(t, [&](int s) { append_births(s, plan, values ? values[s] : nullptr); });
  team.sync(t);
  if (ranks) {  // answers back; both sides record the entries they share in the same order
    if (t == 0) answer_lookups(plan, *remote);
    team.sync(t);
  }
  team.each(t, [&](int s) { settle(s, plan, values, record ? &(*record)[static_cast<std::size_t>(s)] : nullptr); });
  if (values && ranks && !remote->empty()) {
    std::vector<double*> c(shards_.size());
    for (std::size_t s = 0; s < shards_.size(); ++s) c[s] = values[s]->data();
    team.each(t, [&](int s) { unscale_remote(s, *remote, plan, c.data()); });
    if (t == 0) remote_values_.resize(2 * remote->entries);
    team.sync(t);
    double* ours = remote_values_.data();
    remote_step(t, team, config_.comm, threads(), *remote, plan.cs, plan.sn, c.data(), ours, ours + remote->entries,
                0.0);
  }
  team.each(t, [&](int s) {
    clear_flags(s);
    Shard& me = shards_[static_cast<std::size_t>(s)];
    if (values) me.reach_total += me.reach_tally;  // a structural build counts branches, not weights
    me.reach_layers.push_back(std::exchange(me.reach_tally, {}));
  });
  // The next scan reads coefficients that other threads' entries may have written.
  if (values) team.sync(t);
}

// The owner's side: looks up what every shard (this one included) asked it,
// in ascending source order, and counts the births. Lookups come in two
// rounds. Of a pair {a, a xor G} whose terms both ask, only the lower one (the
// one without the generator's top slot) needs to look the other up: the upper
// one's lookup is held back in the first round (scan), and posted in the
// second only when no lookup found its term (post_late), so that then its
// partner is quiet or absent.
template <typename A, int W, typename I>
void Propagator<A, W, I>::resolve(int s, const LayerPlan& plan, bool late) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  if (!late) {
    me.born = 0;
    me.births.clear();
    me.birth_hashes.clear();
  }
  for (Shard& source : shards_) {
    std::vector<Query>& inbox = (late ? source.late : source.outbox)[static_cast<std::size_t>(s)];
    lookup_all(
        me.keys, inbox.size(), [&](std::size_t i) -> const Key& { return inbox[i].partner; },
        [&](std::size_t i, I b, std::uint64_t h) {
          if ((i & 4095) == 0) interrupts_.poll(s == 0, 4096);
          Query& q = inbox[i];
          if (b == Keys::kEmpty) {
            q.answer = Answer::Born;
            me.births.push_back(&q);
            me.birth_hashes.push_back(h);
            ++me.born;
            return;
          }
          q.b = static_cast<std::uint32_t>(b);
          q.answer = found(me, q.b, plan);
        });
  }
  if (!late && !plan.peers.empty()) resolve_incoming(s, plan);
}

// Keeps the held-back lookups of shard s's upper terms that no lookup found.
template <typename A, int W, typename I>
void Propagator<A, W, I>::post_late(int s) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  for (auto& out : me.late)
    std::erase_if(out, [&](const Query& q) {
      if (!me.flags.test(q.a, TermFlags::kMarked)) return false;
      me.flags.clear(q.a);  // its lower partner's lookup found it and records the pair
      return true;
    });
}

// The answer for a lookup that found term b of shard `me`. A quiet b becomes
// the partner in the asker's pair, so it gets no cos entry of its own: a
// recording layer marks it (settle() clears the mark as it passes b).
template <typename A, int W, typename I>
auto Propagator<A, W, I>::found(Shard& me, std::uint32_t b, const LayerPlan& plan) -> Answer {
  if (plan.transfer()) return Answer::Found;   // b is in no list of the layer but this entry
  if (me.flags.test(b, TermFlags::kAsking)) {  // an upper term: see resolve()
    me.flags.set(b, TermFlags::kMarked);
    return Answer::FoundAsking;
  }
  // In no list of this layer: the scan's test.
  const bool untouched = plan.k && (plan.frame ? plan.truth(me.keys.key(b)).length() : me.keys.length(b)) > *plan.k;
  if (plan.record && !untouched) me.flags.set(b, TermFlags::kMarked);
  return Answer::Found;
}

// Asks the memory budget for what shard s is about to add.
template <typename A, int W, typename I>
void Propagator<A, W, I>::check_growth(int s, const LayerPlan& plan, bool evolving) {
  const Shard& me = shards_[static_cast<std::size_t>(s)];
  std::size_t queries = 0;
  for (const auto& out : me.outbox) queries += out.size();
  for (const auto& out : me.late) queries += out.size();
  const std::size_t bytes =
      me.keys.growth_bytes(me.born) + me.born * (sizeof(double) * (evolving ? 2 : 1) + 1) +
      (plan.record ? 6 * queries + 2 * (me.quiet.size() + me.quiet_late.size() + me.dark.size()) : 0);
  if (budget_.grant(bytes)) return;
  // What on_memory_limit="truncate" would do, or why it did not.
  std::string truncation = " Or pass on_memory_limit=\"truncate\" to drop the smallest new terms.";
  if (config_.truncate_to_fit)
    truncation = !evolving ? " (on_memory_limit=\"truncate\" needs coefficients to choose what to drop: pass "
                             "seed_parameters.)"
                 : plan.kind != LayerKind::Rotation
                     ? " (on_memory_limit=\"truncate\" thins rotations, and this layer is a noise channel.)"
                     : " (on_memory_limit=\"truncate\" thins a layer on one MPI rank only.)";
  throw MemoryBudgetError(std::string(plan.operation) + " stopped at layer " + std::to_string(plan.layer + 1) + " of " +
                          std::to_string(plan.layers) + ": it would need about " + format_bytes(bytes) +
                          " more for shard " + std::to_string(s) + " (" + std::to_string(me.born) +
                          " new terms beside " + std::to_string(me.keys.size()) +
                          " held), and the process, holding about " + format_bytes(budget_.expected()) +
                          ", would pass its " + budget_.describe() +
                          ". Raise lower_atol, lower the cutoff, raise the budget, or distribute over more MPI ranks." +
                          truncation + " The propagator is left as it was before the call.");
}

// Appends the births in the order they were looked up: by source shard, then
// those other ranks asked for, by ascending rank. A shard that would cross its
// ceiling refuses before appending; the caller then rolls every shard back.
template <typename A, int W, typename I>
void Propagator<A, W, I>::append_births(int s, const LayerPlan& plan, Column<double>* values) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  me.keys.reserve_for(me.born);
  const std::size_t first = me.keys.size();
  std::vector<std::uint64_t>& hashes = me.birth_hashes;
  for (Query* q : me.births)  // in lookup order, so each part's births are consecutive slots
    q->b = static_cast<std::uint32_t>(me.keys.append_unindexed(q->partner));
  for (const int peer : plan.peers) {
    const auto r = static_cast<std::size_t>(peer);
    std::vector<Incoming>& incoming = exchange_.incoming(r);
    for (std::size_t e = 0; e < incoming.size(); ++e) {
      Incoming& in = incoming[e];
      if (in.shard != s || in.answer != Answer::Born) continue;
      in.found = me.keys.append_unindexed(exchange_.partner(r, e));
      hashes.push_back(in.hash);
    }
  }
  me.keys.index_appended(first, [&](std::size_t slot) { return hashes[slot - first]; });
  if (values) {
    // The coefficient of a birth that a shard of this rank asked for is
    // written first by the asker's settle_part(): zeroing it here would pull
    // the asker's cache lines into this thread's cache only to hand them back
    // modified. Those other ranks asked for start at 0 (their entries add in).
    values->extend(first + me.births.size());
    values->resize(me.keys.size(), 0.0);
  }
}

// The asking side: applies and records the rotations shard s asked for (in
// ascending a), and records the cos entries of its quiet terms. Every lookup
// that is left records its pair: of two terms that both asked, the lower one's
// (its partner holds the generator's top slot) is the only one posted, except
// across ranks (owns_rotation). One pass over the lookups of each owner shard
// rotates and writes the three sections.
template <typename A, int W, typename I>
void Propagator<A, W, I>::settle(int s, const LayerPlan& plan, Column<double>** values, Graph* record) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  ShardLayer layer;
  me.staging.clear();
  if (record) {
    SectionWriter& cos = me.writers[0];
    cos.start();
    const std::uint32_t *x = me.quiet.data(), *x_end = x + me.quiet.size();
    const std::uint32_t *y = me.quiet_late.data(), *y_end = y + me.quiet_late.size();
    while (x != x_end || y != y_end) {  // the two lists merged, ascending
      const std::uint32_t a = y == y_end || (x != x_end && *x < *y) ? *x++ : *y++;
      if (me.flags.test(a, TermFlags::kMarked))
        me.flags.clear(a);
      else
        cos.cos(a);
    }
    // The dark entries last, ascending (graph.h); few, in the layers near the end.
    std::sort(me.dark.data(), me.dark.data() + me.dark.size());
    std::uint32_t dark = 0;
    for (const std::uint32_t a : me.dark)
      if (me.flags.test(a, TermFlags::kMarked)) {
        me.flags.clear(a);
      } else {
        cos.cos(a);
        ++dark;
      }
    cos.append_to(me.staging, layer.cos);
    layer.cos.base = dark;
  }
  for (std::size_t o = 0; o < shards_.size(); ++o) {  // the lookups of each round make a part
    settle_part(s, o, me.outbox[o], plan, values, record ? &layer : nullptr);
    settle_part(s, o, me.late[o], plan, values, record ? &layer : nullptr);
  }
  if (!record) return;
  SectionWriter::finish(me.staging);
  layer.bytes.assign(me.staging.begin(), me.staging.end());  // one block of the exact size
  record->push_back(std::move(layer));
}

// Applies and records the lookups shard s made of owner shard o in one round.
template <typename A, int W, typename I>
void Propagator<A, W, I>::settle_part(int s, std::size_t o, const std::vector<Query>& queries, const LayerPlan& plan,
                                      Column<double>** values, ShardLayer* layer) {
  if (queries.empty()) return;
  Shard& me = shards_[static_cast<std::size_t>(s)];
  auto& [cos, births, pairs, halves] = me.writers;
  double* own = values ? values[s]->data() : nullptr;
  double* other = values ? values[o]->data() : nullptr;
  Part part;
  part.shard = static_cast<std::uint32_t>(o);
  if (layer) {
    const std::uint8_t width = slot_width(shards_[o].keys.size());
    births.start();
    pairs.start(width);
    halves.start(width);
  }
  constexpr std::size_t ahead = 16;  // the coefficients of the lookup this far on are asked for
  // A quiet partner found rotates after all: its sine branch, counted as
  // dropped by its scan, is taken back (summed here, in registers).
  rotation::V2 found = {};
  std::size_t n_found = 0;
  for (std::size_t k = 0; k < queries.size(); ++k) {
    if ((k & 4095) == 0) interrupts_.poll(s == 0, 4096);
    const Query& q = queries[k];
    if (values && k + ahead < queries.size()) {
      __builtin_prefetch(own + queries[k + ahead].a);
      __builtin_prefetch(other + queries[k + ahead].b);
    }
    me.flags.clear(q.a);
    const bool is_half = half(q.answer, q.partner, plan);
    if (!values && plan.classify && q.answer == Answer::Found && !is_half)  // a quiet partner, counted by its scan
      if (const double reach = reach_of(plan, q.partner ^ plan.generator); reach > 0.0)
        me.reach_tally.add(1.0, reach, -1.0);
    if (values) {
      double& x = own[q.a];
      double& y = other[q.b];
      if (q.answer == Answer::Born) y = 0.0;  // see append_births
      if (is_half) {
        rotation::receive(x, y, plan.cs, plan.sn, q.sign);
      } else {
        if (q.answer == Answer::Found) {
          y *= plan.inverse_cs;  // undo the scan's scaling of a quiet partner
          const double taken = plan.sn * y;
          found += rotation::V2{std::abs(taken), taken * taken};
          ++n_found;
          // Its branch (past the generator: the asker's key) was counted lit or dark.
          if (plan.classify)
            if (const double reach = reach_of(plan, q.partner ^ plan.generator); reach > 0.0)
              me.reach_tally.add(std::abs(taken), reach, -1.0);
        }
        rotation::rotate(x, y, plan.cs, plan.sn, q.sign);
      }
    }
    if (!layer) continue;
    if (q.answer == Answer::Born && !is_half) {
      if (births.count() == 0) part.births.base = q.b;
      births.birth(q.a, q.sign);
    } else {
      (is_half ? halves : pairs).pair(q.a, q.b, q.sign);
    }
  }
  if (plan.track) me.found_drops.add_sums(o, found, n_found);
  if (!layer) return;
  births.append_to(me.staging, part.births);
  pairs.append_to(me.staging, part.pairs);
  halves.append_to(me.staging, part.halves);
  if (part.births.count + part.pairs.count + part.halves.count) layer->parts.push_back(part);
}

// The flags settle() has not cleared: those of lookups sent to other ranks.
template <typename A, int W, typename I>
void Propagator<A, W, I>::clear_flags(int s) {
  Shard& me = shards_[static_cast<std::size_t>(s)];
  for (const auto& out : me.remote_out)
    for (const Query& q : out) me.flags.clear(q.a);
}

}  // namespace monoprop
