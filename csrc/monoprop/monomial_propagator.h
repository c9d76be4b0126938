// The engine's public C++ interface: a propagator of a sum of Hermitian
// monomials through layers exp(+i theta h G), with truncation, a recorded
// graph, and replay for values and gradients.
//
// Heisenberg picture (no Schrodinger cutoff): the store holds the observable,
// layers act last gate first, and the value is sum_S c_S <ref|M_S|ref> plus
// the identity ("core") coefficient, which is kept apart from the store.
// Schrodinger picture: the store holds R = 2^n rho (identity included), layers
// act first gate first at negated angle, and the value is sum_S c_S o_S with
// o the fixed observable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algebra.h"

namespace monoprop {

inline constexpr int kMaxNumModes = 1024;

enum class CutoffType : std::uint8_t { Length, Support };

struct Truncation {
  int cutoff = 0;
  CutoffType type = CutoffType::Length;
  std::optional<double> lower_atol;
  std::optional<double> upper_atol;
};

// A Hermitian-basis term: set slots and the real coefficient h of M_S.
struct Term {
  std::vector<std::uint32_t> slots;
  double coefficient = 0.0;
};

// One generator term of a gate: exp(+i theta h G), theta = parameters[parameter].
struct LayerSpec {
  std::vector<std::uint32_t> slots;
  double coefficient = 0.0;  // h
  std::int32_t parameter = 0;
  std::int32_t gate = 0;
};

// A circuit flattened to layers, first gate first, with circuit-local
// parameter and gate numbering.
struct CircuitSpec {
  std::vector<LayerSpec> layers;
  std::int32_t n_parameters = 0;
  std::int32_t n_gates = 0;
};

struct Config {
  Family family = Family::Majorana;
  int num_modes = 1;  // modes or qubits; 2 * num_modes slots
  std::vector<Term> initial_operator;
  std::vector<int> occupied;  // reference product state
  std::optional<int> schrodinger_cutoff;  // in slots
  Truncation truncation;
};

// Terms held, decoded: slots of term t are slots[offsets[t] .. offsets[t+1]).
struct TermList {
  std::vector<std::uint32_t> slots;
  std::vector<std::uint64_t> offsets{0};
  std::vector<double> coefficients;
};

struct MemoryUsage {
  std::size_t terms = 0, index = 0, graph = 0, buffers = 0;
};

// Argument errors: raised before anything changes.
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class MonomialPropagator {
 public:
  virtual ~MonomialPropagator() = default;
  virtual std::unique_ptr<MonomialPropagator> clone_() const = 0;

  // Evolves the operand at fixed parameters and keeps no graph.
  virtual void propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                         std::optional<int> only_rotate_len_k) = 0;
  // Appends the circuit to the graph. With a seed (the full post-call
  // parameter vector) truncation is coefficient-informed, else structural.
  virtual void build_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                           std::optional<int> only_rotate_len_k) = 0;

  virtual double expectation_value(const std::vector<double>& parameters, double pare = 0.0) const = 0;
  virtual double expectation_value_and_gradient(const std::vector<double>& parameters,
                                                std::vector<double>& gradient, double pare = 0.0) const = 0;
  // Hermitian-basis coefficients after replaying the graph (store order).
  virtual std::vector<double> contract(const std::vector<double>& parameters, bool inplace) = 0;
  virtual TermList evolved_terms(const std::vector<double>& parameters, double atol) const = 0;
  virtual std::vector<double> coefficients_of(const std::vector<Term>& terms,
                                              const std::vector<double>& parameters) const = 0;
  virtual void update_initial_operator(const std::vector<Term>& terms) { apply_initial_operator_(terms); }

  virtual std::size_t size() const = 0;
  virtual std::size_t graph_layers() const = 0;
  virtual std::pair<std::size_t, std::size_t> graph_size() const = 0;
  virtual std::int32_t n_parameters() const = 0;
  virtual std::int32_t n_gates() const = 0;
  virtual std::vector<std::int32_t> parameter_mapping() const = 0;
  virtual std::vector<std::int32_t> layer_gates() const = 0;
  virtual void set_parameter_mapping(const std::vector<std::int32_t>& per_layer) = 0;
  virtual MemoryUsage memory() const = 0;

  const Config& config() const { return config_; }
  Truncation& truncation() { return config_.truncation; }
  bool schrodinger() const { return config_.schrodinger_cutoff.has_value(); }
  // Bumped whenever the graph or the operand a replay starts from changes.
  std::uint64_t generation() const { return generation_; }

 protected:
  explicit MonomialPropagator(Config config) : config_(std::move(config)) {}
  virtual void apply_initial_operator_(const std::vector<Term>& terms) = 0;

  Config config_;
  std::uint64_t generation_ = 0;
};

std::unique_ptr<MonomialPropagator> make_propagator(Config config);

}  // namespace monoprop
