// Propagator: evaluations of the graph (evaluation.h): values, gradients,
// batches and their truncation error, checked here and replayed by the
// replayer (replayer.h), to which replay_source() lends the graph. Included
// by propagator.h only.
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

template <typename A, int W, typename I>
void Propagator<A, W, I>::evaluate_batch(const Points& points, const EvaluationRequest& request,
                                         const EvaluationResults& out) const {
  const std::size_t count = points.count, width = points.width;
  const bool gradient = request.gradient;
  const std::vector<std::int32_t>* mapping = request.mapping;
  // Every row is checked before any is replayed (an empty batch checks its width).
  std::vector<std::int32_t> layer_parameters;
  const std::vector<double> zeros(count ? 0 : width, 0.0);
  for (std::size_t i = 0; i < std::max<std::size_t>(count, 1); ++i)
    layer_parameters =
        checked_evaluation(count ? points.row(i) : std::span<const double>(zeros), mapping, gradient && count);
  if (count == 0) return;
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  // Paring decides per entry and per point, and several ranks meet per layer: point by point there.
  if (request.pare > 0.0 || routing_.ranks() > 1) return evaluate_rows(points, request, out);
  const bool batched = guarded("evaluate", [&] {
    return replayer_.batch(replay_source(), points.data, count, width, lp, out.values,
                           gradient ? out.gradients : nullptr);
  });
  if (!batched) evaluate_rows(points, request, out);
}

// Point by point, each as a one-point call replays it.
template <typename A, int W, typename I>
void Propagator<A, W, I>::evaluate_rows(const Points& points, const EvaluationRequest& request,
                                        const EvaluationResults& out) const {
  for (std::size_t k = 0; k < points.count; ++k) {
    Dropped total;
    Dropped* bounded = request.with_error ? &total : nullptr;
    const double value = request.gradient ? replay_gradient(points.row(k), out.gradients + k * points.width,
                                                            request.pare, request.mapping, bounded)
                                          : replay_value(points.row(k), request.pare, request.mapping, bounded);
    if (!request.with_error) {
      out.values[k] = value;
      continue;
    }
    const ValueWithError error = with_error(value, total);
    out.values[k] = error.value;
    out.bounds[k] = error.bound;
    out.estimates[k] = error.estimate;
  }
}

// What the replayer reads: the shards' graphs, starting coefficients and
// keys, the layers, the settings of this call.
template <typename A, int W, typename I>
ReplaySource Propagator<A, W, I>::replay_source() const {
  ReplaySource source;
  for (const Shard& shard : shards_) {
    source.graphs.push_back(&shard.graph);
    source.bases.push_back(&shard.base);
    source.keys.push_back({shard.keys.row(0), shard.keys.size()});
  }
  source.layers = &layers_;
  source.remote = &remote_;
  source.remote_entries = remote_entries_;
  source.entries = entries_;
  source.terms = total_size();
  source.generation = generation_;
  source.key_words = W;
  source.slots = 2 * config_.num_modes;
  source.comm = &config_.comm;
  source.interrupts = &interrupts_;
  source.budget = &budget_;
  source.small_work = small_work_;
  source.layout_use = layout_use_;
  source.point_lanes = point_lanes_;
  source.core = core_;
  source.held = held_;
  source.weigh = [this](std::size_t s, ReplaySource::Weights& out) { weigh(s, out); };
  return source;
}

// The nonzero weights of the value f = sum_i w_i c_i, ascending: the
// reference overlaps (Heisenberg) or the observable's coefficients
// (Schrodinger) of the terms the held keys stand for (clifford_frame.h).
template <typename A, int W, typename I>
void Propagator<A, W, I>::weigh(std::size_t s, ReplaySource::Weights& out) const {
  const Shard& me = shards_[s];
  for (std::size_t i = 0; i < me.keys.size(); ++i) {
    // Most terms weigh nothing, and only those that weigh something pay for
    // the sign of the term they stand for (clifford_frame.h).
    const Key held = me.keys.key(i);
    double w = 0.0;
    if (schrodinger()) {
      const auto slot = observable_keys_.find(frame_.image(held));
      if (slot != Keys::kEmpty) w = observable_coefficients_[slot];
    } else if (frame_.paired(held)) {
      w = A::reference_overlap(frame_.image(held), occupied_);
    }
    if (w != 0.0) w *= frame_.forward(held).sign;
    if (w != 0.0) out.emplace_back(static_cast<std::uint32_t>(i), w);
  }
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::replay_value(std::span<const double> parameters, double pare,
                                         const std::vector<std::int32_t>* mapping, Dropped* total) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    maybe_fault("evaluate");
    return replayer_.value(replay_source(), parameters, pare, lp, total);
  });
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::replay_gradient(std::span<const double> parameters, double* out, double pare,
                                            const std::vector<std::int32_t>* mapping, Dropped* total) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping, true);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    maybe_fault("evaluate");
    return replayer_.gradient(replay_source(), parameters, out, pare, lp, total);
  });
}

// Replays every shard's coefficients to the end of the graph (read-out and
// contraction read them as replayer_.replayed(s)).
template <typename A, int W, typename I>
void Propagator<A, W, I>::replay_all(const std::vector<double>& parameters, Dropped* dropped) const {
  maybe_fault("evaluate");
  replayer_.replay_all(replay_source(), parameters.data(), dropped);
}

}  // namespace monoprop
