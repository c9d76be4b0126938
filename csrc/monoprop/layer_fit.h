// on_memory_limit="truncate": a layer that would pass the memory budget keeps
// only its largest new terms. Included by propagator.h only.
//
// When the layer's lookups are resolved, every birth is known: an active
// term a (|sn * c_a| > lower_atol) whose partner b = a xor G is not held. A
// birth costs its key, index slot and coefficients; a pair or a quiet term
// costs nothing new but its graph entry. So when the births would pass the
// budget, the layer raises lower_atol to the smallest threshold tau at which
// the births with |sn * c_a| > tau fit, with room left for the rest of the
// operation (the lookup lists growing to one a term, and a build's later
// layers recording as many entries as this one), and each dropped asker becomes a
// quiet term: scaled by cos phi, recorded as a cos entry. Its sine branch
// sn * c_a b is what the truncation discards, an ordinary inactive entry of
// the graph. Pairs of held terms keep rotating whatever their weight, so the
// layer is at least as accurate as lower_atol = tau throughout it; the
// layers after it scan with lower_atol = max(lower_atol, tau) (scan()).
//
// The threshold is chosen over all of the rank's shards at once, on the
// primary thread: the births' weights are the same whatever the thread
// count, but the room is the process's, read from its resident memory, so
// two runs may thin different layers. Given the recorded thresholds
// (memory_truncations) the result is deterministic. Held terms are never
// dropped: when the layer would still need more than the budget leaves
// without any birth (a build's graph entries), the operation stops with
// MemoryBudgetError as in "raise"; a propagate, which records nothing, at
// worst keeps none of a layer's births. Only rotations on a single rank are
// thinned; noise layers, structural builds (no coefficients) and runs on
// several MPI ranks raise.
#pragma once

#include <algorithm>

namespace monoprop {

template <typename A, int W, typename I>
bool Propagator<A, W, I>::fits_by_truncation(const LayerPlan& plan, Column<double>** values) const {
  return config_.truncate_to_fit && values && plan.kind == LayerKind::Rotation && plan.peers.empty() &&
         routing_.ranks() == 1;
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::fit_births(const LayerPlan& plan, Column<double>** values) {
  const std::size_t shards = shards_.size();
  std::size_t queries = 0, quiet = 0, births = 0;
  for (const Shard& me : shards_) {
    for (const auto& out : me.outbox) queries += out.size();
    for (const auto& out : me.late) queries += out.size();
    quiet += me.quiet.size() + me.quiet_late.size() + me.dark.size();
    births += me.born;
  }
  // Room kept for later layers, which steers how many births are kept: the
  // lookup lists are scratch the estimate does not count, kept from layer
  // to layer, and each held term may ask once, so they may grow to one
  // lookup a term; and a build records each later layer's entries, about as
  // many as this one's when it adds no term.
  std::size_t held = 0, lists = 0;
  for (const Shard& me : shards_) {
    held += me.keys.size();
    for (const auto& out : me.outbox) lists += out.capacity() * sizeof(Query);
    for (const auto& out : me.late) lists += out.capacity() * sizeof(Query);
  }
  // check_growth's estimate, over the rank, with `kept[o]` births in shard o,
  // and the lookups' room; a dropped birth turns its lookup (6 bytes of
  // graph) into a cos entry (2).
  auto bytes = [&](const std::vector<std::size_t>& kept, bool lookups = true) {
    std::size_t total = 0, dropped = births, terms = held;
    for (std::size_t o = 0; o < shards; ++o) {
      // and the birth lists (a pointer and a hash each)
      total += shards_[o].keys.growth_bytes(kept[o]) + kept[o] * (2 * sizeof(double) + 1 + 16);
      dropped -= kept[o];
      terms += kept[o];
    }
    const std::size_t entries = plan.record ? 6 * (queries - dropped) + 2 * (quiet + dropped) : 0;
    if (lookups) {
      if (terms * sizeof(Query) > lists) total += terms * sizeof(Query) - lists;
      total += entries * (plan.layers - plan.layer - 1);  // the rest of the graph, at this layer's rate
    }
    return total + entries;
  };
  // What the process holds now, this layer's lookup lists included: they
  // are scratch the estimate does not count, kept from layer to layer.
  budget_.refresh();
  std::vector<std::size_t> all(shards);
  for (std::size_t o = 0; o < shards; ++o) all[o] = shards_[o].born;
  if (budget_.grant(bytes(all))) return;

  struct Weighed {
    double weight;  // |sn * c_a| of the asker
    std::size_t owner;
  };
  std::vector<Weighed> weighed;
  weighed.reserve(births);
  for (std::size_t src = 0; src < shards; ++src) {
    const double* c = values[src]->data();
    for (std::size_t o = 0; o < shards; ++o)
      for (const auto* list : {&shards_[src].outbox[o], &shards_[src].late[o]})
        for (const Query& q : *list)
          if (q.answer == Answer::Born) weighed.push_back({std::abs(plan.sn * c[q.a]), o});
  }
  std::sort(weighed.begin(), weighed.end(), [](const Weighed& x, const Weighed& y) { return x.weight > y.weight; });
  auto top = [&](std::size_t m) {  // the births of the m largest weights, by owner
    std::vector<std::size_t> kept(shards);
    for (std::size_t i = 0; i < m; ++i) ++kept[weighed[i].owner];
    return kept;
  };
  const std::uint64_t expected = budget_.expected(), limit = budget_.limit();
  const std::uint64_t room = limit > expected ? limit - expected : 0;
  // Held terms are never dropped: the layer stops only when it passes the
  // budget without any new term (the lookups' room aside, which only steers
  // how many births are kept). A layer that adds nothing goes on, as a grant
  // of nothing does.
  const std::size_t least = bytes(top(0), false);
  if (least > room)
    throw MemoryBudgetError(std::string(plan.operation) + " stopped at layer " + std::to_string(plan.layer + 1) +
                            " of " + std::to_string(plan.layers) + ": even without any of its " +
                            std::to_string(births) + " new terms it would need about " + format_bytes(least) +
                            " more, and the process, holding about " + format_bytes(expected) + ", would pass its " +
                            budget_.describe() +
                            ". on_memory_limit=\"truncate\" drops new terms only, never held ones. Raise lower_atol, "
                            "lower the cutoff, raise the budget, or distribute over more MPI ranks. The propagator "
                            "is left as it was before the call.");
  if (weighed.empty()) {  // nothing to drop: the layer fits, if with less room for later lookups
    budget_.grant(least);
    return;
  }
  // The most births that fit, largest weights first (the bytes grow with m).
  std::size_t lo = 0, hi = weighed.size() - 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (bytes(top(mid)) <= room)
      lo = mid;
    else
      hi = mid - 1;
  }
  // Keep the weights above the first one left out: ties with it go too.
  const double atol = weighed[lo].weight;
  drop_births(plan, values, [&](const Query& q, const double* c) { return std::abs(plan.sn * c[q.a]) <= atol; });
  for (std::size_t o = 0; o < shards; ++o) all[o] = shards_[o].born;
  budget_.grant(bytes(all, false));  // fits: at most `least` with the lookups' room, or the m that fit
  if (!raised_atol_ || atol > *raised_atol_) raised_atol_ = atol;
  truncating_.emplace_back(plan.layer, atol);
}

// Turns the births for which drop(query, coefficients of its shard) holds
// into quiet terms.
template <typename A, int W, typename I>
template <typename Drop>
void Propagator<A, W, I>::drop_births(const LayerPlan& plan, Column<double>** values, Drop&& drop_birth) {
  const std::size_t shards = shards_.size();
  // A birth's b is not set before append_births: it keeps the birth's place
  // in its owner's list meanwhile, so that the lists keep their order.
  std::vector<std::vector<std::uint64_t>> hashes(shards);
  for (std::size_t o = 0; o < shards; ++o) {
    Shard& owner = shards_[o];
    for (std::size_t i = 0; i < owner.births.size(); ++i) owner.births[i]->b = static_cast<std::uint32_t>(i);
    hashes[o].swap(owner.birth_hashes);
  }
  for (std::size_t src = 0; src < shards; ++src) {
    Shard& me = shards_[src];
    double* c = values[src]->data();
    std::vector<std::uint32_t> dropped, dark;
    auto drop = [&](std::vector<Query>& list) {
      std::erase_if(list, [&](const Query& q) {
        if (q.answer != Answer::Born || !drop_birth(q, c)) return false;
        // The dropped branch is the partner that is not born (reach.h).
        const double reach = plan.classify ? reach_of(plan, q.partner) : 1.0;
        if (reach > 0.0 && plan.classify) me.reach_tally.add(std::abs(plan.sn * c[q.a]), reach);
        (reach > 0.0 ? dropped : dark).push_back(q.a);
        return true;
      });
    };
    for (std::size_t o = 0; o < shards; ++o) {
      drop(me.outbox[o]);
      drop(me.late[o]);
    }
    std::sort(dropped.begin(), dropped.end());
    for (const auto* list : {&dropped, &dark})
      for (const std::uint32_t a : *list) {
        me.flags.clear(a);
        // As scan() does for a quiet term: its sine branch is counted as
        // dropped (truncation_error), then it is scaled by cos.
        if (plan.track) me.quiet_drops.add(plan.sn * c[a]);
        c[a] *= plan.cs;
      }
    if (plan.record) me.dark.append(dark.data(), dark.size());  // settle() sorts them
    if (plan.record) {                                          // into the late list, which stays ascending
      const std::size_t before = me.quiet_late.size();
      me.quiet_late.append(dropped.data(), dropped.size());
      std::inplace_merge(me.quiet_late.data(), me.quiet_late.data() + before,
                         me.quiet_late.data() + me.quiet_late.size());
    }
  }
  for (std::size_t o = 0; o < shards; ++o) {
    Shard& owner = shards_[o];
    owner.births.clear();
    for (Shard& src : shards_)
      for (auto* list : {&src.outbox[o], &src.late[o]})
        for (Query& q : *list)
          if (q.answer == Answer::Born) owner.births.push_back(&q);
    std::sort(owner.births.begin(), owner.births.end(), [](const Query* x, const Query* y) { return x->b < y->b; });
    for (const Query* q : owner.births) owner.birth_hashes.push_back(hashes[o][q->b]);
    owner.born = owner.births.size();
  }
}

}  // namespace monoprop
