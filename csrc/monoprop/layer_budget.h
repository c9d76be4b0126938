// max_error: an error budget that chooses the truncation layer by layer.
// Included by propagator.h only.
//
// With Truncation::max_error = eps, propagate and a seeded build keep what
// they drop within eps, counted as the sum of sqrt(w) |sn c| over the dropped
// branches (w their reach weight, reach.h; 0 for a dark branch): the error if
// every branch that is not dark added with the same sign, each weighed by the
// geometric mean of its weight in the estimate (w) and in the bound (1). That
// sum is at least the estimate (kEstimateScale <= 1, w <= sqrt(w)) and at
// most the bound; with `rigorous` the budget counts |sn c| of every lit
// branch, the bound itself. Measured on the random circuits of the tests and
// the benchmark's workloads: a sum of squares (the estimate's own model) lets
// the actual error pass eps tenfold where dropped branches add up coherently
// (symmetric lattices), and a linear sum of w |sn c| passes 3 eps in one case
// in twelve on small circuits, where a weight 0.2^u undercounts the branches
// that the few layers left turn back; sqrt(w) kept it within eps in 98% of
// them and within 3 eps in all.
//
// When a layer's lookups are resolved every birth is known: an active term a
// whose partner b = a xor G is not held; leaving b out drops the branch
// sn c_a b. Each layer gets an even share of what is left of the budget over
// the layers left (those of the call, and of the pieces that follow it,
// CircuitSpec::following). The quiet terms of its scan (those below
// lower_atol, and past the cutoff) spend first; then the births go in order of
// |sn c_a|, the smallest first, while they fit what is left of the share: the
// layer's own lower_atol, as a uniform truncation would choose it (births
// picked by their weight instead go where the weights are least reliable).
// Dark births cost nothing and go whatever the share. What a layer leaves
// unspent passes on to the layers after it. As in the memory truncation
// (layer_fit.h), held terms keep rotating: pairs are never dropped.
//
// The budget is spent on one rank, on rotations, with coefficients: a
// structural build, only_rotate_len_k and several MPI ranks are refused
// (check_budget).
#pragma once

#include <algorithm>
#include <cmath>

namespace monoprop {

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_budget(bool coefficients, std::optional<int> k) const {
  const std::optional<double>& eps = config_.truncation.max_error;
  if (!eps) return;
  if (!(*eps > 0.0) || !std::isfinite(*eps))
    throw UsageError("max_error=" + std::to_string(*eps) + " must be a positive, finite number.");
  if (!coefficients)
    throw UsageError(
        "max_error needs coefficients to choose what to drop: pass seed_parameters to build_graph (or bind the "
        "circuit's parameters).");
  if (k)
    throw UsageError(
        "max_error cannot be combined with only_rotate_len_k, which leaves terms unrotated without a bound.");
  if (routing_.ranks() > 1)
    throw UsageError("max_error chooses the truncation on one MPI rank only; run on one rank, or use lower_atol.");
}

// What `tally` costs the budget: its sum of x sqrt(w), or (rigorous) the
// sum of its lit weights (the bound).
template <typename A, int W, typename I>
double Propagator<A, W, I>::budget_cost(const ReachTally& tally) const {
  return config_.truncation.rigorous ? tally.sum : tally.reached;
}

// Called at the start of a budgeted operation, with what counts before it.
template <typename A, int W, typename I>
void Propagator<A, W, I>::open_budget(std::size_t steps, std::size_t following, double spent) {
  const Truncation& t = config_.truncation;
  error_budget_ = {};
  if (!t.max_error) return;
  // In the units of budget_cost(): the raw sums truncation_error scales.
  const double eps = *t.max_error / error_scale();
  error_budget_.total = eps;
  error_budget_.spent = spent;
  error_budget_.steps = steps + following;
  error_budget_.on = true;
}

// Counts what the operation's layers dropped, and keeps it for a build in pieces.
template <typename A, int W, typename I>
void Propagator<A, W, I>::close_budget() {
  if (!error_budget_.on) return;
  const std::size_t closed = shards_[0].reach_layers.size();
  for (; error_budget_.counted < closed; ++error_budget_.counted)
    for (const Shard& shard : shards_) error_budget_.spent += budget_cost(shard.reach_layers[error_budget_.counted]);
  budget_spent_ = error_budget_.spent;
  budget_layers_ += closed;
  error_budget_.on = false;
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::spend_budget(const LayerPlan& plan, Column<double>** values) {
  // What the call's earlier layers dropped (closed: their take-backs are in), counted once.
  const std::size_t closed = shards_[0].reach_layers.size();
  for (; error_budget_.counted < closed; ++error_budget_.counted)
    for (const Shard& shard : shards_) error_budget_.spent += budget_cost(shard.reach_layers[error_budget_.counted]);
  // This layer's quiet terms so far (some may yet be found and rotate: counted all the same).
  double forced = 0.0;
  for (const Shard& shard : shards_) forced += budget_cost(shard.reach_tally);
  const std::size_t left = error_budget_.steps > plan.layer ? error_budget_.steps - plan.layer : 1;
  const double share = std::max(0.0, error_budget_.total - error_budget_.spent) / static_cast<double>(left) - forced;

  // Births go in order of |sn c_a|, the smallest first; dark ones cost
  // nothing and go whatever the share.
  const bool rigorous = config_.truncation.rigorous;
  struct Birth {
    double moved, cost;
  };
  auto weigh = [&](const Query& q, const double* c) {
    const double moved = std::abs(plan.sn * c[q.a]), reach = reach_of(plan, q.partner);
    return Birth{moved, reach == 0.0 ? 0.0 : (rigorous ? 1.0 : std::sqrt(reach)) * moved};
  };
  std::vector<Birth> births;
  for (std::size_t src = 0; src < shards_.size(); ++src) {
    const double* c = values[src]->data();
    for (std::size_t o = 0; o < shards_.size(); ++o)
      for (const auto* list : {&shards_[src].outbox[o], &shards_[src].late[o]})
        for (const Query& q : *list)
          if (q.answer == Answer::Born) births.push_back(weigh(q, c));
  }
  std::sort(births.begin(), births.end(), [](const Birth& x, const Birth& y) { return x.moved < y.moved; });
  // The largest |sn c| up to which the lit births fit the share (ties with it go too).
  double used = 0.0, threshold = -1.0;
  for (std::size_t i = 0; i < births.size();) {
    std::size_t j = i;
    double cost = 0.0;
    for (; j < births.size() && births[j].moved == births[i].moved; ++j) cost += births[j].cost;
    if (cost > 0.0 && used + cost > share) break;
    used += cost;
    threshold = births[i].moved;
    i = j;
  }
  drop_births(plan, values, [&](const Query& q, const double* c) {
    const Birth b = weigh(q, c);
    return b.moved <= threshold || b.cost == 0.0;
  });
  if (threshold >= 0.0) budget_thresholds_.emplace_back(budget_layers_ + plan.layer, threshold);
}

}  // namespace monoprop
