// Propagator: evaluations of the graph (evaluation.h): values, gradients and
// their truncation error, one point at a time; a batch side by side is in
// propagator_points.h. Included by propagator.h only.
#pragma once

namespace monoprop {

// The truncation error. Write the operand after layer k as the exact image of
// the one before, minus what the layer dropped: D_k, a sum of sine branches
// s sn c M' (each a quiet term's, which the layer only scales by cos; or a
// pared entry's; or a Transfer's). The error of the value then telescopes to
// the sum over k of <exact later image of D_k>. In the Heisenberg picture
// every later layer is a unitary conjugation or the Heisenberg map of a
// channel (unital and positive), neither of which raises the operator norm,
// and a Hermitian monomial has norm 1, so for every state
//     |exact - value| <= sum over dropped branches of |sn c|.
// In the Schrodinger picture D_k belongs to the state 2^n rho: its error is
// 2^-n Tr(O E(D_k)) = 2^-n Tr(E*(O) D_k) with E the later (trace-preserving)
// maps, at most ||O|| |sn c| per branch since 2^-n ||M'||_1 = 1; ||O|| is
// bounded by the sum of |h| over O's terms, the identity's left out (D_k is
// traceless and stays so). A branch that cannot reach the end (reach.h)
// contributes exactly 0 and is left out.
//
// Also exact lies in [h_I - N, h_I + N], with h_I the observable's identity
// coefficient and N the sum of |h| over its other terms: the later maps are
// unital contractions (Heisenberg) or take states to states (Schrodinger). So
// |exact - value| <= N + |value - h_I| as well, and the bound is the smaller.
//
// The estimate, kEstimateScale sqrt(sum (w sn c)^2) times the same factor,
// is the typical error if the reachable branches' later contributions were
// independent with random signs and of size about w, their reach weight
// (reach.h): a model, not a bound, and never above the bound.
template <typename A, int W, typename I>
auto Propagator<A, W, I>::with_error(double value, const Dropped& total) const -> ValueWithError {
  const double scale = error_scale();
  double identity = core_, norm = observable_norm_;
  if (schrodinger()) {
    norm = scale;
    const auto slot = observable_keys_.find(Key{});
    identity = slot == Keys::kEmpty ? 0.0 : observable_coefficients_[slot];
  }
  const double bound = std::min(scale * total.sum, norm + std::abs(value - identity));
  return {value, bound, std::min(bound, kEstimateScale * scale * std::sqrt(total.squares))};
}

// A single vector, and a batch with its truncation error, go point by point;
// a batch of values (and gradients) side by side where that pays.
template <typename A, int W, typename I>
void Propagator<A, W, I>::evaluate(const Points& points, const EvaluationRequest& request,
                                   const EvaluationResults& results) const {
  check_valid();
  request.check();
  points.check_finite();
  if (request.with_error) check_bounded(request.pare);
  if (points.single || request.with_error) return evaluate_rows(points, request, results);
  evaluate_batch(points, request, results);
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_bounded(double pare) const {
  check_valid();
  if (unbounded_)
    throw UsageError(
        "truncation_error: this propagator was propagated or built with only_rotate_len_k, which leaves "
        "anticommuting terms unrotated without recording them, so no bound is known; propagate or build "
        "without only_rotate_len_k.");
  // Every rank refuses alike (a rank alone would leave the others in the reduction).
  if (pare > 0.0 && routing_.ranks() > 1)
    throw UsageError(
        "truncation_error: a pared replay (pare_threshold) on more than one MPI rank does not count what paring "
        "drops between ranks; replay without pare_threshold.");
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::error_scale() const {
  if (!schrodinger()) return 1.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < observable_keys_.size(); ++i)
    if (!observable_keys_.key(i).is_identity()) norm += std::abs(observable_coefficients_[i]);
  return norm;
}

// The value; with `total`, also what the operand held dropped (held_) and
// what the replay drops, per shard, folded in ascending shard order and then
// over the ranks with the value.
template <typename A, int W, typename I>
double Propagator<A, W, I>::replay_value(std::span<const double> parameters, double pare,
                                         const std::vector<std::int32_t>* mapping, Dropped* total) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    std::vector<Dropped> dropped(total ? shards_.size() : 0);
    std::vector<double*> c(shards_.size());
    std::vector<double> partial(shards_.size(), 0.0);
    const ReplayView view = replay_view(replay_layout(), true);
    Team::run(threads(), small_replay(), [&](int t, Team& team) {
      team.each(t, [&](int s) {
        const Shard& me = shards_[static_cast<std::size_t>(s)];
        if (layers_.empty())  // no layer writes: read the coefficients where they are
          c[static_cast<std::size_t>(s)] = const_cast<double*>(me.base.data());
        else
          c[static_cast<std::size_t>(s)] = replay_start(s, view, false);
      });
      replay(t, team, view, c.data(), parameters.data(), pare, lp, false, total ? dropped.data() : nullptr);
      team.each(t, [&](int s) {
        partial[static_cast<std::size_t>(s)] = weighted_sum(s, view, c[static_cast<std::size_t>(s)]);
      });
    });
    double f = 0.0;  // ascending shard order: bitwise reproducible for a fixed T
    for (const double part : partial) f += part;
    if (!total) {
      config_.comm.sum(&f, 1);  // then over the ranks
      return f + core_;
    }
    *total = held_;
    for (const Dropped& part : dropped) *total += part;
    double sums[3] = {f, total->sum, total->squares};  // over the ranks, in one reduction
    config_.comm.sum(sums, 3);
    *total = {sums[1], sums[2]};
    return sums[0] + core_;
  });
}

// One buffer serves both sweeps: the forward one runs on the first half, with
// the coefficients packed (half the cache lines), which then spread into the
// interleaved states (c, lambda) the reverse sweep reads in pairs.
template <typename A, int W, typename I>
double Propagator<A, W, I>::replay_gradient(std::span<const double> parameters, double* out, double pare,
                                            const std::vector<std::int32_t>* mapping, Dropped* total) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping, true);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    const std::size_t L = layers_.size();
    std::vector<double*> state(shards_.size());
    std::vector<double> partial(shards_.size(), 0.0);
    std::vector<std::vector<double>> dphi(shards_.size());
    std::vector<Dropped> dropped(total ? shards_.size() : 0);
    const ReplayView view = replay_view(replay_layout(), true);
    Team::run(threads(), small_replay(), [&](int t, Team& team) {
      team.each(t, [&](int s) {
        state[static_cast<std::size_t>(s)] = replay_start(s, view, true);
        dphi[static_cast<std::size_t>(s)].assign(L, 0.0);
      });
      replay(t, team, view, state.data(), parameters.data(), pare, lp, true, total ? dropped.data() : nullptr);
      team.each(t, [&](int s) {
        partial[static_cast<std::size_t>(s)] = weighted_sum(s, view, state[static_cast<std::size_t>(s)]);
        state[static_cast<std::size_t>(s)] = spread_adjoint(s, view);
      });
      replay_back(t, team, view, state.data(), parameters.data(), pare, lp, dphi);
    });
    // Folds in ascending shard order: bitwise reproducible for a fixed T.
    std::vector<double> gradient(parameters.size(), 0.0);
    for (std::size_t l = L; l-- > 0;) {
      const LayerInfo& info = layers_[l];
      const std::int32_t p = lp ? lp[l] : info.parameter;
      if (p < 0) continue;  // a noise layer of fixed rate
      double d = dphi[0][l];
      for (std::size_t s = 1; s < shards_.size(); ++s) d += dphi[s][l];
      gradient[static_cast<std::size_t>(p)] += info.frequency * d;
    }
    double f = 0.0;
    for (const double part : partial) f += part;
    // Then over the ranks, in one reduction (with the dropped sums, folded as in evaluate).
    if (total) {
      *total = held_;
      for (const Dropped& part : dropped) *total += part;
      gradient.push_back(total->sum);
      gradient.push_back(total->squares);
    }
    gradient.push_back(f);
    config_.comm.sum(gradient.data(), gradient.size());
    f = gradient.back();
    gradient.pop_back();
    if (total) {
      total->squares = gradient.back();
      gradient.pop_back();
      total->sum = gradient.back();
      gradient.pop_back();
    }
    std::copy(gradient.begin(), gradient.end(), out);
    return f + core_;
  });
}

}  // namespace monoprop
