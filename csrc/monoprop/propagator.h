// The engine: MonomialPropagator for one algebra and one key width.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph.h"
#include "monomial_propagator.h"
#include "store.h"

namespace monoprop {

template <typename Algebra, int W>
class Propagator final : public MonomialPropagator {
 public:
  using Key = Monomial<W>;
  using Shard = Store<W>;
  using Gen = typename Algebra::template Generator<W>;

  explicit Propagator(Config config);

  std::unique_ptr<MonomialPropagator> clone_() const override {
    check_valid();
    return std::make_unique<Propagator>(*this);
  }

  void propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                 std::optional<int> only_rotate_len_k) override;
  void build_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                   std::optional<int> only_rotate_len_k) override;

  double expectation_value(const std::vector<double>& parameters, double pare,
                           const std::vector<std::int32_t>* mapping) const override;
  double expectation_value_and_gradient(const std::vector<double>& parameters, std::vector<double>& gradient,
                                        double pare, const std::vector<std::int32_t>* mapping) const override;
  std::vector<double> contract(const std::vector<double>& parameters, bool inplace) override;
  TermList evolved_terms(const std::vector<double>& parameters, double atol) const override;
  std::vector<double> coefficients_of(const std::vector<Term>& terms,
                                      const std::vector<double>& parameters) const override;

  std::size_t size() const override {
    check_valid();
    return store_.size();
  }
  // Introspection refuses on an invalid propagator like every other member.
  std::size_t graph_layers() const override {
    check_valid();
    return graph_.size();
  }
  std::pair<std::size_t, std::size_t> graph_size() const override;
  std::int32_t n_parameters() const override {
    check_valid();
    return n_parameters_;
  }
  std::int32_t n_gates() const override {
    check_valid();
    return n_gates_;
  }
  std::vector<std::int32_t> parameter_mapping() const override;
  std::vector<std::int32_t> layer_gates() const override;
  void set_parameter_mapping(const std::vector<std::int32_t>& per_layer) override;
  MemoryUsage memory() const override;

 protected:
  void apply_initial_operator_(const std::vector<Term>& terms) override;

 private:
  Key key_of(const std::vector<std::uint32_t>& slots) const;
  std::string describe(const Key& key) const;
  static void accumulate(Shard& keys, std::vector<double>& coefficients, const Key& key, double h);
  void check_circuit(const CircuitSpec& circuit, std::optional<int> only_rotate_len_k) const;
  void check_parameters(const std::vector<double>& parameters, std::int32_t expected) const;
  std::vector<std::int32_t> checked_evaluation(const std::vector<double>& parameters,
                                               const std::vector<std::int32_t>* mapping) const;
  // Per-layer parameter indices in graph order for a circuit-order mapping.
  std::vector<std::int32_t> graph_order(const std::vector<std::int32_t>& mapping) const;
  // Order in which a circuit's layers act on the operand.
  std::vector<const LayerSpec*> application_order(const CircuitSpec& circuit) const;
  double frequency(const LayerSpec& layer) const { return (schrodinger() ? -2.0 : 2.0) * layer.coefficient; }
  bool keep_partner(const Key& partner, bool informed, double moved) const;
  // One layer on the current store; see graph.h for what is recorded.
  void apply_layer(const Key& generator, double phi, std::vector<double>* c, GraphLayer* record,
                   std::optional<int> only_rotate_len_k);
  void replay_into(std::vector<double>& c, const std::vector<double>& parameters, std::vector<double>* tape,
                   double pare, const std::vector<std::int32_t>* layer_parameters) const;
  std::vector<double> replayed(const std::vector<double>& parameters) const;
  void apply_circuit(const CircuitSpec& circuit, const std::vector<double>* theta, std::int32_t parameter_shift,
                     std::int32_t gate_shift, std::vector<double>* work, Graph* record, std::optional<int> k);
  const std::vector<double>& weights() const;
  void expand_reference_state(int max_pairs);

  Shard store_;
  std::vector<double> base_;  // coefficients a replay starts from
  double core_ = 0.0;         // Heisenberg identity term, kept apart
  Key occupied_;              // even slot of each occupied mode
  Shard observable_keys_;     // Schrodinger observable
  std::vector<double> observable_coefficients_;
  Graph graph_;  // in application order
  std::int32_t n_parameters_ = 0, n_gates_ = 0;
  std::size_t n_base_ = 0;  // terms held when the graph was empty
  mutable std::vector<double> weights_;
  mutable bool weights_stale_ = true;
  GraphLayer scratch_;
  mutable std::vector<double> replay_c_, replay_tape_, replay_state_;
  std::vector<std::uint32_t> births_;
  std::vector<std::int8_t> birth_signs_;
};

}  // namespace monoprop

#include "propagator_impl.h"
