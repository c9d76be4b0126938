// Propagator: propagate and build_graph, which apply a circuit's layers to the
// stores. Included by propagator.h only.
#pragma once

namespace monoprop {

// Applies a circuit's layers in application order, reporting progress.
// `theta` (with `parameter_shift` onto its axis) gives the angles when the
// coefficients in `values` are evolved; `record` and `infos` receive the graph.
template <typename A, int W, typename I>
void Propagator<A, W, I>::apply_circuit(int t, Team& team, const CircuitPlan& circuit, const std::vector<double>* theta,
                                        std::int32_t parameter_shift, Column<double>** values,
                                        std::vector<Graph>* record, std::vector<RemoteLayer>* remote_record,
                                        std::optional<int> k) {
  const std::vector<Step>& order = circuit.steps;
  const int slots = 2 * config_.num_modes;
  for (std::size_t l = 0; l < order.size(); ++l) {
    const Step& step = order[l];
    LayerPlan plan(step.generator);
    plan.frame = step.frame ? &circuit.frames[step.frame - 1] : nullptr;
    plan.kind = step.noise.kind;
    if (plan.kind == LayerKind::Rotation || plan.kind == LayerKind::Damp) {
      A::scan_columns(plan.generator, slots, plan.columns);
    } else {  // the pattern's bits are the layer's slots of the terms the keys stand for
      for (int s = 0; s < slots; ++s)
        if (step.slots.test(static_cast<std::uint32_t>(s))) plan.columns.push_back(s);
      if (plan.frame)  // slot t of F(Y) is the xor of Y's slots s whose image F(e_s) holds t
        for (const int t : plan.columns) {
          std::vector<int>& probe = plan.probes.emplace_back();
          for (int s = 0; s < slots; ++s) {
            Key unit;
            unit.set(static_cast<std::uint32_t>(s));
            if (plan.frame->image(unit).test(static_cast<std::uint32_t>(t))) probe.push_back(s);
          }
        }
      const auto all = (std::uint32_t{1} << plan.columns.size()) - 1;
      plan.patterns = plan.kind == LayerKind::Select ? step.noise.patterns : schrodinger() ? 1u : 1u << all;
      plan.transfer_sign = A::family == Family::Majorana ? -1 : 1;  // the pair's value on an empty mode
    }
    for (int w = W; w-- > 0;)
      if (plan.generator.words[w]) {
        plan.top = static_cast<std::uint32_t>(64 * w + 63 - std::countl_zero(plan.generator.words[w]));
        break;
      }
    if (theta || step.parameter < 0) {
      const LayerInfo info{step.parameter, step.gate, step.frequency, step.noise};
      const Turn turn =
          info.turn(step.parameter < 0 ? 0.0 : (*theta)[static_cast<std::size_t>(step.parameter + parameter_shift)]);
      plan.cs = turn.cs;
      plan.sn = turn.sn;
      plan.inverse_cs = 1.0 / plan.cs;
    }
    plan.informed = values != nullptr;
    plan.record = record != nullptr;
    // propagate sums what its rotations and transfers drop (a scaling drops
    // nothing); so does a seeded build whose progress is shown, for the bar.
    plan.track = values && (!record || progress_) && (plan.kind == LayerKind::Rotation || plan.transfer());
    plan.k = plan.kind == LayerKind::Rotation ? k : std::nullopt;  // only_rotate_len_k limits rotations only
    // What a rotation or transfer drops is classified by its reach (reach.h),
    // unless only_rotate_len_k leaves truncation_error without a bound.
    plan.classify = !k && (plan.kind == LayerKind::Rotation || plan.transfer());
    plan.dark = step.dark ? &circuit.dark[step.dark - 1] : nullptr;
    plan.reach_frame = step.reach_frame ? &circuit.frames[step.reach_frame - 1] : nullptr;
    plan.target_support = circuit.target_support;
    plan.targets = circuit.targets;
    if (plan.kind == LayerKind::Rotation || plan.transfer())  // a scaling asks nobody
      plan.peers = routing_.peers(rank_, plan.generator.words.data(), W);
    plan.operation = record ? "build_graph" : "propagate";
    plan.layer = l;
    plan.layers = order.size();
    if (t == 0 && budget_.granted_any()) budget_.refresh();
    apply_layer(t, team, plan, values, record, &remote_scratch_);
    interrupts_.poll(t == 0, 4096);  // between layers; long layers poll inside too (layer_step.h)
    if (t != 0) continue;            // the primary thread records what spans ranks, and reports
    if (remote_record) remote_record->push_back(remote_scratch_);
    if (l == 0) maybe_fault(plan.operation);
    if (progress_) progress_(l + 1, order.size(), total_size(), dropped_so_far());
  }
}

// What this call has dropped so far on this rank: the quiet terms' sine
// branches less those of the quiet partners found, folded in ascending shard
// order. Each term found is one counted as quiet, so the difference is >= 0
// but for rounding, and exactly 0 when every quiet term was found.
template <typename A, int W, typename I>
Dropped Propagator<A, W, I>::dropped_in_call() const {
  Dropped quiet, found;
  std::size_t n_quiet = 0, n_found = 0;
  for (const Shard& shard : shards_) {
    quiet += shard.quiet_drops.at(1.0);  // the weights are sn * c already
    found += shard.found_drops.at(1.0);
    n_quiet += shard.quiet_drops.count();
    n_found += shard.found_drops.count();
  }
  Dropped out;
  if (n_found < n_quiet) {
    out.plain_sum = std::max(0.0, quiet.sum - found.sum);
    out.plain_squares = std::max(0.0, quiet.squares - found.squares);
  }
  ReachTally lit;
  for (const Shard& shard : shards_) lit += shard.reach_total;
  if (lit.count > 0) {
    out.sum = std::max(0.0, lit.sum);
    out.squares = std::max(0.0, lit.weighted);
  }
  return out;
}

// What each layer of this call dropped of the lit branches (reach.h), over
// the rank's shards in ascending order.
template <typename A, int W, typename I>
std::vector<ReachTally> Propagator<A, W, I>::reach_by_layer() const {
  std::vector<ReachTally> out(shards_.empty() ? 0 : shards_[0].reach_layers.size());
  for (const Shard& shard : shards_)
    for (std::size_t l = 0; l < out.size() && l < shard.reach_layers.size(); ++l) out[l] += shard.reach_layers[l];
  return out;
}

// The bound in the value's units, for the progress bar: never less than it
// showed before (what a layer drops is >= 0; the difference of the sums may
// wobble by rounding).
template <typename A, int W, typename I>
double Propagator<A, W, I>::dropped_so_far() {
  reported_dropped_ = std::max(reported_dropped_, error_scale() * dropped_in_call().sum);
  return reported_dropped_;
}

// The rotations with Clifford layers folded into the frame (clifford_frame.h).
// Truncation reads the frame only where it can tell: a cutoff below the
// largest measure, or only_rotate_len_k.
template <typename A, int W, typename I>
auto Propagator<A, W, I>::plan_circuit(const CircuitSpec& circuit, std::optional<int> k) const -> CircuitPlan {
  CircuitPlan out;
  out.after = frame_;
  const Truncation& t = config_.truncation;
  const int n = config_.num_modes;
  const bool measured = k || t.cutoff < (t.type == CutoffType::Support ? n : 2 * n);
  bool changed = true;  // since the last frame kept
  // The frame in force, kept (once for the steps it serves) for a step that reads it.
  auto kept_frame = [&] {
    if (out.after.identity()) return std::size_t{0};
    if (changed) out.frames.push_back(out.after);
    changed = false;
    return out.frames.size();
  };
  std::vector<Move> moves;
  for (const LayerSpec* spec : application_order(circuit)) {
    const Key g = key_of(spec->slots);
    if (spec->quarter_turns) {
      // The Schrodinger picture turns the state the other way (frequency()).
      const int turns = (schrodinger() ? -spec->quarter_turns : spec->quarter_turns) & 3;
      out.after.apply(g, turns);
      changed = true;
      moves.push_back({g, turns, false, 0});
      continue;
    }
    if (!spec->noise.rotation()) {
      // A Damp anticommutes with F^-1(Q) where it stands, and a Transfer's partner is
      // a xor F^-1(K): the keys of the preimages. A Select or Transfer reads its slots
      // of the terms F(Y) through the frame (apply_circuit), and so needs it.
      Step step{out.after.backward(g).key, 1.0, spec->parameter, spec->gate, 0, 0, 0, spec->noise, g};
      if (spec->noise.kind != LayerKind::Damp || measured) step.frame = kept_frame();
      step.reach_frame = kept_frame();
      moves.push_back({g, 0, spec->noise.kind == LayerKind::Transfer, out.steps.size()});
      out.steps.push_back(step);
      continue;
    }
    const auto [held, sign] = out.after.backward(g);
    Step step{held, sign * frequency(*spec), spec->parameter, spec->gate, 0, 0, 0, spec->noise, g};
    if (measured) step.frame = kept_frame();
    step.reach_frame = kept_frame();
    moves.push_back({g, 0, true, out.steps.size()});
    out.steps.push_back(step);
  }
  // The layers later pieces of the circuit apply: only their keys (true monomials) matter here.
  CircuitSpec rest;
  rest.layers = circuit.following;
  for (const LayerSpec* spec : application_order(rest)) {
    const Key g = key_of(spec->slots);
    const int turns = (schrodinger() ? -spec->quarter_turns : spec->quarter_turns) & 3;
    const bool feeds = !spec->quarter_turns && (spec->noise.rotation() || spec->noise.kind == LayerKind::Transfer);
    moves.push_back({g, spec->quarter_turns ? turns : 0, feeds, out.steps.size()});
    if (!spec->quarter_turns) ++out.following;
  }
  if (!k) plan_reach(out, moves);
  return out;
}

// The checks of the branches that may still reach the end (reach.h), step by
// step from the end back, until no check is left; each step's on held keys.
template <typename A, int W, typename I>
void Propagator<A, W, I>::plan_reach(CircuitPlan& plan, const std::vector<Move>& moves) const {
  const int slots = 2 * config_.num_modes;
  ReachSpace<W> space = ReachSpace<W>::paired(config_.num_modes);
  if (schrodinger()) {
    space = ReachSpace<W>::zero(slots);
    const double norm = error_scale();
    for (std::size_t i = 0; i < observable_keys_.size(); ++i) {
      const Key& term = observable_keys_.key(i);
      space.add(term);
      plan.target_support = std::max(plan.target_support, term.support());
      if (!term.is_identity() && norm > 0.0)
        plan.targets.emplace_back(term, std::abs(observable_coefficients_[i]) / norm);
    }
    if (plan.targets.size() > kNearestTargets) plan.targets.clear();
  }
  for (std::size_t i = moves.size(); i-- > 0 && !space.everything();) {
    const Move& move = moves[i];
    if (move.quarter_turns) {
      if (move.quarter_turns & 1)
        space.turn(move.key, anticommutation_vector<A::family == Family::Majorana>(move.key, slots));
      continue;
    }
    if (move.step == plan.steps.size()) {  // a later piece's: nothing of this build drops there
      if (move.feeds) space.add(move.key);
      continue;
    }
    Step& step = plan.steps[move.step];
    const Frame* frame = step.reach_frame ? &plan.frames[step.reach_frame - 1] : nullptr;
    plan.dark.push_back(held_checks(space.checks(), slots, [&](int s) {
      Key unit;
      unit.set(static_cast<std::uint32_t>(s));
      return frame ? frame->image(unit) : unit;
    }));
    step.dark = plan.dark.size();
    if (move.feeds) space.add(move.key);
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::report_routing(const CircuitPlan& circuit) const {
  if (routing_reported_ || routing_.bits() == 0) return;
  std::vector<std::uint64_t> shifts;
  for (const Step& step : circuit.steps) shifts.push_back(routing_.shift(step.generator.words.data(), W));
  const int spanned = Routing::span(shifts);
  if (spanned >= routing_.bits()) return;
  routing_reported_ = true;
  if (rank_ == 0)
    std::fprintf(stderr,
                 "COMMROUTE: the circuit's rank shifts span %d of %d routing bits, so the terms of one rank reach "
                 "only %lld of the %d ranks and some ranks stay empty.\n",
                 spanned, routing_.bits(), 1LL << spanned, routing_.ranks());
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::release_scratch() {
  const auto ranks = static_cast<std::size_t>(routing_.ranks());
  for (Shard& shard : shards_) {
    shard.release_scratch();
    shard.outbox.resize(shards_.size());
    shard.late.resize(shards_.size());
    shard.remote_out.resize(ranks);
  }
  exchange_ = RankExchange<Key>(ranks);
  remote_scratch_ = {};
  give_back(remote_values_);
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::truncate_to(const std::vector<std::size_t>& sizes) {
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    shards_[s].keys.truncate(sizes[s]);
    shards_[s].base.resize(std::min(shards_[s].base.size(), sizes[s]));
  }
}

// The operand evolves in place; a refusal (the shard ceiling or the memory
// budget) or an interrupt restores it from a copy of its coefficients taken at
// the start.
template <typename A, int W, typename I>
void Propagator<A, W, I>::propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                                    std::optional<int> k) {
  check_valid();
  check_circuit(circuit, k);
  if (!layers_.empty())
    throw UsageError(
        "propagate() cannot run on a propagator with a non-empty graph; contract it first "
        "(contract_partially) or use build_graph.");
  if (static_cast<std::int64_t>(parameters.size()) != circuit.n_parameters)
    throw UsageError("The length of parameters (" + std::to_string(parameters.size()) +
                     ") must be the same as max(parameter_mapping)+1 (" + std::to_string(circuit.n_parameters) + ").");
  check_circuit_rates(circuit, parameters, 0);
  check_budget(true, k);
  guarded("propagate", [&] {
    const CircuitPlan plan = plan_circuit(circuit, k);
    report_routing(plan);
    std::vector<std::size_t> before;
    std::vector<Column<double>> saved;
    std::vector<Column<double>*> values;
    for (Shard& shard : shards_) {
      before.push_back(shard.keys.size());
      saved.push_back(shard.base);
      values.push_back(&shard.base);
    }
    budget_.start();
    raised_atol_.reset();
    truncating_.clear();
    reported_dropped_ = 0.0;
    for (Shard& shard : shards_) {
      shard.quiet_drops = shard.found_drops = {};
      shard.reach_layers.clear();
      shard.reach_total = {};
    }
    // What the operand dropped before counts too (with weight 1: these layers come after it).
    budget_thresholds_.clear();
    budget_layers_ = 0;
    open_budget(plan.steps.size(), 0, held_.plain_sum);
    try {
      Team::run(threads(), false, [&](int t, Team& team) {
        apply_circuit(t, team, plan, &parameters, 0, values.data(), nullptr, nullptr, k);
      });
    } catch (const Refusal&) {
      raised_atol_.reset();
      error_budget_ = {};
      rollback(before, std::move(saved));
      throw;
    }
    close_budget();
    raised_atol_.reset();
    truncations_.swap(truncating_);
    frame_ = start_frame_ = plan.after;  // the graph is empty: it starts here
    held_.forget_reach();                // these layers come after what the operand dropped before
    held_ += dropped_in_call();
    if (k) unbounded_ = true;
    for (Shard& shard : shards_) shard.n_base = shard.keys.size();
    replayer_.stale_weights();
    release_scratch();
    ++generation_;
  });
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::rollback(const std::vector<std::size_t>& sizes, std::vector<Column<double>> saved) {
  truncate_to(sizes);
  for (std::size_t s = 0; s < shards_.size() && s < saved.size(); ++s) shards_[s].base.swap(saved[s]);
  release_scratch();
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::build(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                                std::optional<int> k, bool continuing) {
  check_valid();
  check_circuit(circuit, k);
  if (continuing && (circuit.n_parameters > n_parameters_ || circuit.n_gates > n_gates_))
    throw UsageError("continue_graph() continues the circuit of the last build_graph, whose " +
                     std::to_string(circuit.n_parameters) + " parameters and " + std::to_string(circuit.n_gates) +
                     " gates are on the graph's axes; this graph has only " + std::to_string(n_parameters_) +
                     " parameters and " + std::to_string(n_gates_) + " gates. Begin the circuit with build_graph.");
  const std::int32_t total = n_parameters_ + (continuing ? 0 : circuit.n_parameters);
  if (seed && static_cast<std::int64_t>(seed->size()) != total)
    throw UsageError("The length of parameters (" + std::to_string(seed->size()) +
                     ") must be the same as max(parameter_mapping)+1 (" + std::to_string(total) +
                     ") of the graph after this build.");
  // Where the graph's parameters so far and the new ones sit in the seed (adopt_graph).
  const std::int32_t old_shift = schrodinger() || continuing ? 0 : circuit.n_parameters;
  const std::int32_t new_shift = schrodinger() ? total - circuit.n_parameters : 0;
  if (seed) {
    check_circuit_rates(circuit, *seed, new_shift);
    check_rates(seed->data() + old_shift, nullptr, false);  // the graph's own
  }
  check_budget(seed.has_value(), k);
  take_graph_back();  // a build replays (with a seed) and extends the shards' graph
  guarded("build_graph", [&] {
    std::vector<double> old_theta;
    if (seed) old_theta.assign(seed->begin() + old_shift, seed->begin() + old_shift + n_parameters_);

    std::vector<std::size_t> before;
    std::vector<Column<double>*> values;
    for (Shard& shard : shards_) {
      before.push_back(shard.keys.size());
      values.push_back(&shard.work);
    }
    std::vector<Graph> added(shards_.size());
    std::vector<RemoteLayer> added_remote;
    CircuitPlan plan = plan_circuit(circuit, k);
    report_routing(plan);
    budget_.start();
    raised_atol_.reset();
    truncating_.clear();
    reported_dropped_ = 0.0;
    for (Shard& shard : shards_) {
      shard.quiet_drops = shard.found_drops = {};  // the progress bar's bound (a graph keeps its own)
      shard.reach_layers.clear();
      shard.reach_total = {};
    }
    // A later piece of a build goes on from what the pieces before it spent,
    // and lists its thresholds after theirs.
    if (!continuing) {
      budget_thresholds_.clear();
      budget_layers_ = 0;
    }
    const double before_graph = held_.plain_sum;
    open_budget(plan.steps.size(), plan.following, continuing ? budget_spent_ : before_graph);
    std::vector<double*> c(shards_.size());
    if (seed) maybe_fault("evaluate");
    const ReplaySource source = replay_source();  // the seed's values by shard, for the build
    try {
      Team::run(threads(), false, [&](int t, Team& team) {
        // With a seed, the operand at the seed steers truncation.
        if (seed) {
          team.each(t, [&](int s) {
            Shard& me = shards_[static_cast<std::size_t>(s)];
            me.work = me.base;
            c[static_cast<std::size_t>(s)] = me.work.data();
          });
          team.sync(t);
          replayer_.sweep_shards(t, team, source, c.data(), old_theta.data());
        }
        apply_circuit(t, team, plan, seed ? &*seed : nullptr, new_shift, seed ? values.data() : nullptr, &added,
                      &added_remote, k);
      });
    } catch (const Refusal&) {
      raised_atol_.reset();
      error_budget_ = {};
      rollback(before, {});
      throw;
    }
    close_budget();
    raised_atol_.reset();
    truncations_.swap(truncating_);
    adopt_graph(circuit, plan, added, added_remote, continuing);
    if (k) unbounded_ = true;
  });
}

// Joins a build's layers to the graph. Heisenberg: the new circuit acts first
// on the state, so its parameters and gates come first on the axes;
// Schrodinger: they come last.
template <typename A, int W, typename I>
void Propagator<A, W, I>::adopt_graph(const CircuitSpec& circuit, CircuitPlan& plan, std::vector<Graph>& added,
                                      std::vector<RemoteLayer>& added_remote, bool continuing) {
  const std::int32_t old_shift = schrodinger() || continuing ? 0 : circuit.n_parameters;
  const std::int32_t old_gate_shift = schrodinger() || continuing ? 0 : circuit.n_gates;
  const std::int32_t new_shift = schrodinger() ? n_parameters_ - (continuing ? circuit.n_parameters : 0) : 0;
  const std::int32_t new_gate_shift = schrodinger() ? n_gates_ - (continuing ? circuit.n_gates : 0) : 0;
  // A fixed noise layer keeps parameter and gate -1.
  auto shifted = [](std::int32_t index, std::int32_t shift) { return index < 0 ? index : index + shift; };
  for (LayerInfo& layer : layers_) {
    layer.parameter = shifted(layer.parameter, old_shift);
    layer.gate = shifted(layer.gate, old_gate_shift);
  }
  // The layers there are come before the new ones: their reach is no longer
  // known (reach.h), unless the build they came from planned through these
  // (a build in pieces); nor is that of what the operand dropped before them.
  if (layers_.size() + plan.steps.size() > reach_horizon_)
    for (LayerInfo& layer : layers_) layer.stale = true;
  reach_horizon_ = layers_.size() + plan.steps.size() + plan.following;
  held_.forget_reach();
  std::vector<ReachTally> reach = reach_by_layer();
  std::vector<double> sums;  // over the ranks, in one reduction
  for (const ReachTally& r : reach)
    sums.insert(sums.end(), {r.squares, r.weighted, r.counted_squares, r.counted_weighted});
  config_.comm.sum(sums.data(), sums.size());
  for (std::size_t l = 0; l < plan.steps.size(); ++l) {
    const Step& step = plan.steps[l];
    LayerInfo info{shifted(step.parameter, new_shift), shifted(step.gate, new_gate_shift), step.frequency, step.noise};
    if (4 * l + 3 < sums.size()) {
      ReachTally all;
      all.squares = sums[4 * l];
      all.weighted = sums[4 * l + 1];
      all.counted_squares = sums[4 * l + 2];
      all.counted_weighted = sums[4 * l + 3];
      info.reach = all.reach();
    }
    layers_.push_back(info);
  }
  frame_ = std::move(plan.after);
  release_scratch();  // first: the build's working coefficients go before the operand grows
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = shards_[s];
    for (ShardLayer& layer : added[s]) {
      entries_ += layer.n_cos() + layer.n_rotations();
      shard.graph.push_back(std::move(layer));
    }
    shard.base.resize(shard.keys.size(), 0.0);
    replayer_.stale_weights(s);
  }
  for (RemoteLayer& layer : added_remote) {
    layer.offset = remote_entries_;
    remote_entries_ += layer.entries;
    remote_.push_back(std::move(layer));
  }
  if (!continuing) {
    n_parameters_ += circuit.n_parameters;
    n_gates_ += circuit.n_gates;
  }
  ++generation_;
}

}  // namespace monoprop
