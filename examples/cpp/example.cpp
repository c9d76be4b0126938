// A C++ program on the installed monoprop core (find_package(monoprop)).
//
// (a) An engine from monoprop::make_propagator: the Pauli observable Z0 Z1 on
//     two qubits through exp(+i theta X0), recorded once and replayed for the
//     value cos(2 theta) and its gradient -2 sin(2 theta).
// (b) A class derived from monoprop::MonomialPropagator: a decorator that
//     forwards every operation to an engine from make_propagator and counts
//     evaluations, using the documented extension points (the constructor
//     tail, clone_(), update_initial_operator() and the protected
//     apply_initial_operator_()).
//
// Any thread budget works (monoprop_NUM_THREADS, read at construction).
// Prints one summary line and exits 0 when every check passes; otherwise
// names the failed checks and exits 1.
#include <monoprop/monomial_propagator.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using monoprop::MonomialPropagator;

// Forwards to an inner engine and counts what it was asked to do. The base
// class keeps its own copy of the settings (config(), truncation(), ...),
// which the decorator hands on to the engine before each build.
class CountingPropagator final : public MonomialPropagator {
 public:
  explicit CountingPropagator(std::unique_ptr<MonomialPropagator> inner)
      // The constructor tail: the caller's basis as the engine describes it.
      : MonomialPropagator(inner->config(), inner->basis_change(), inner->logical_num_modes(), inner->basis()),
        inner_(std::move(inner)) {}
  // A copy holds its own copy of the engine, and the counts so far.
  CountingPropagator(const CountingPropagator& other)
      : MonomialPropagator(other),
        inner_(other.inner_->clone_()),
        values_(other.values_),
        gradients_(other.gradients_),
        updates_(other.updates_) {}

  std::unique_ptr<MonomialPropagator> clone_() const override {
    check_valid();
    return std::make_unique<CountingPropagator>(*this);
  }

  std::size_t values() const { return values_; }
  std::size_t gradients() const { return gradients_; }
  std::size_t updates() const { return updates_; }

  // guarded() checks validity, refuses overlapping calls, and marks this
  // propagator invalid when the engine fails part-way (as the engine does).
  void propagate(const monoprop::CircuitSpec& circuit, const std::vector<double>& parameters,
                 std::optional<int> only_rotate_len_k) override {
    guarded("propagate", [&] {
      inner_->set_truncation(config_.truncation);
      inner_->propagate(circuit, parameters, only_rotate_len_k);
      generation_ = inner_->generation();
    });
  }
  void build_graph(const monoprop::CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                   std::optional<int> only_rotate_len_k) override {
    guarded("build_graph", [&] {
      inner_->set_truncation(config_.truncation);
      inner_->build_graph(circuit, seed, only_rotate_len_k);
      generation_ = inner_->generation();
    });
  }
  void continue_graph(const monoprop::CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                      std::optional<int> only_rotate_len_k) override {
    guarded("build_graph", [&] {
      inner_->set_truncation(config_.truncation);
      inner_->continue_graph(circuit, seed, only_rotate_len_k);
      generation_ = inner_->generation();
    });
  }

  // Every evaluation, one point or a batch, with or without gradients and
  // error bars, comes through this one member.
  void evaluate(const monoprop::Points& points, const monoprop::EvaluationRequest& request,
                const monoprop::EvaluationResults& results) const override {
    guarded("evaluate", [&] {
      inner_->evaluate(points, request, results);
      (request.gradient ? gradients_ : values_) += points.count;
    });
  }
  std::vector<double> contract(const std::vector<double>& parameters, bool inplace) override {
    return guarded("contract", [&] {
      auto coefficients = inner_->contract(parameters, inplace);
      generation_ = inner_->generation();
      return coefficients;
    });
  }
  monoprop::TermList evolved_terms(const std::vector<double>& parameters, double atol) const override {
    return guarded("evolved_terms", [&] { return inner_->evolved_terms(parameters, atol); });
  }
  std::vector<double> coefficients_of(const std::vector<monoprop::Term>& terms,
                                      const std::vector<double>& parameters) const override {
    return guarded("coefficients_of", [&] { return inner_->coefficients_of(terms, parameters); });
  }

  // The public entry point: guards the call and runs apply_initial_operator_.
  std::size_t update_initial_operator(const std::vector<monoprop::Term>& terms) override {
    ++updates_;
    return MonomialPropagator::update_initial_operator(terms);
  }

  std::size_t size() const override { return check_valid(), inner_->size(); }
  std::size_t graph_layers() const override { return check_valid(), inner_->graph_layers(); }
  std::pair<std::size_t, std::size_t> graph_size() const override { return check_valid(), inner_->graph_size(); }
  std::int32_t n_parameters() const override { return check_valid(), inner_->n_parameters(); }
  std::int32_t n_gates() const override { return check_valid(), inner_->n_gates(); }
  std::vector<std::int32_t> parameter_mapping() const override { return check_valid(), inner_->parameter_mapping(); }
  std::vector<std::int32_t> layer_gates() const override { return check_valid(), inner_->layer_gates(); }
  void set_parameter_mapping(const std::vector<std::int32_t>& per_layer) override {
    guarded("set_parameter_mapping", [&] {
      inner_->set_parameter_mapping(per_layer);
      generation_ = inner_->generation();
    });
  }
  monoprop::MemoryUsage memory() const override { return check_valid(), inner_->memory(); }
  std::uint64_t memory_budget() const override { return check_valid(), inner_->memory_budget(); }
  std::vector<std::pair<std::size_t, double>> memory_truncations() const override {
    return check_valid(), inner_->memory_truncations();
  }
  monoprop::SavedState save_state() const override { return check_valid(), inner_->save_state(); }

 protected:
  // Returns this rank's share of the update: the engine's answer.
  std::size_t apply_initial_operator_(const std::vector<monoprop::Term>& terms) override {
    const std::size_t held = inner_->update_initial_operator(terms);
    generation_ = inner_->generation();
    return held;
  }
  // The raw-layout hooks; the public mp_op() and friends have already checked
  // for a sole shard (T = 1), and the engine's accessors check again.
  monoprop::OperatorView mp_op_() const override { return inner_->mp_op(); }
  monoprop::IndexView indexing_() const override { return inner_->indexing(); }
  const monoprop::Graph& graph_() const override { return inner_->graph(); }
  monoprop::GraphData graph_data_() const override { return inner_->graph_data(); }

 private:
  std::unique_ptr<MonomialPropagator> inner_;
  mutable std::size_t values_ = 0, gradients_ = 0;
  std::size_t updates_ = 0;
};

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "monoprop example: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

void check_near(double got, double want, const std::string& what) {
  check(std::abs(got - want) <= 1e-12, what + ": got " + std::to_string(got) + ", want " + std::to_string(want));
}

// Pauli slots: qubit q owns slots 2q and 2q+1; X = {2q}, Y = {2q+1}, Z = {2q, 2q+1}.
const std::vector<std::uint32_t> kZ0Z1 = {0, 1, 2, 3};

monoprop::Config pauli_config() {
  monoprop::Config config;
  config.family = monoprop::Family::Pauli;
  config.num_modes = 2;
  config.initial_operator = {{kZ0Z1, 1.0}};  // observable Z0 Z1; reference state |00>
  config.truncation.cutoff = 4;
  return config;
}

// exp(+i theta X0): one layer, generator slots {0}, h = 1, parameter 0, gate 0.
monoprop::CircuitSpec circuit() {
  monoprop::CircuitSpec spec;
  spec.layers = {{{0}, 1.0, 0, 0}};
  spec.n_parameters = 1;
  spec.n_gates = 1;
  return spec;
}

int run() {
  const double theta = 0.3;
  const double want_value = std::cos(2 * theta), want_gradient = -2 * std::sin(2 * theta);

  // (a) The engine as make_propagator returns it.
  auto engine = monoprop::make_propagator(pauli_config());
  engine->build_graph(circuit(), std::nullopt, std::nullopt);
  const double value = engine->expectation_value({theta});
  std::vector<double> gradient;
  const double value_again = engine->expectation_value_and_gradient({theta}, gradient);
  check_near(value, want_value, "engine value");
  check_near(value_again, want_value, "engine value with gradient");
  check(gradient.size() == 1, "engine gradient has one entry");
  if (gradient.size() == 1) check_near(gradient[0], want_gradient, "engine gradient");

  // (b) The decorator: the same numbers, counted.
  CountingPropagator counting(monoprop::make_propagator(pauli_config()));
  counting.build_graph(circuit(), std::nullopt, std::nullopt);
  check(counting.graph_layers() == engine->graph_layers(), "decorator records the same graph");
  check(counting.size() == engine->size(), "decorator holds the same terms");
  check_near(counting.expectation_value({theta}), value, "decorator value");
  std::vector<double> counted_gradient;
  check_near(counting.expectation_value_and_gradient({theta}, counted_gradient), value,
             "decorator value with gradient");
  check(counted_gradient.size() == 1, "decorator gradient has one entry");
  if (counted_gradient.size() == 1) check_near(counted_gradient[0], gradient[0], "decorator gradient");
  check_near(counting.expectation_value({0.0}), 1.0, "decorator value at theta = 0");
  check(counting.values() == 2 && counting.gradients() == 1, "decorator counts 2 values and 1 gradient");

  // clone_(): an independent copy, counts included.
  const std::unique_ptr<MonomialPropagator> copy = counting.clone_();

  // update_initial_operator -> apply_initial_operator_: the value doubles.
  const std::uint64_t generation = counting.generation();
  const std::size_t held = counting.update_initial_operator({{kZ0Z1, 2.0}});
  check(held == 1, "update reports this rank's share, 1 term, got " + std::to_string(held));
  check(counting.updates() == 1, "decorator counts 1 update");
  check(counting.generation() != generation, "update bumps the generation");
  check_near(counting.expectation_value({theta}), 2 * want_value, "value after update");
  check_near(copy->expectation_value({theta}), want_value, "the copy keeps the old operator");
  const auto* counted_copy = dynamic_cast<const CountingPropagator*>(copy.get());
  check(counted_copy != nullptr && counted_copy->values() == 3, "the copy counts on from the original's 2 values");

  // The raw layout exists only for a sole shard (monoprop_NUM_THREADS=1).
  if (counting.num_threads() == 1) {
    check(counting.mp_op().size == counting.size(), "mp_op() through the decorator");
  } else {
    bool refused = false;
    try {
      (void)counting.mp_op();
    } catch (const monoprop::MultiShardUnsupported&) {
      refused = true;
    }
    check(refused, "mp_op() with T > 1 throws MultiShardUnsupported");
  }

  if (failures != 0) return 1;
  std::printf("monoprop C++ example: all checks passed (threads %d, value %.15f, gradient %.15f)\n",
              counting.num_threads(), value, gradient[0]);
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "monoprop example: FAILED with an exception: %s\n", e.what());
    return 1;
  }
}
