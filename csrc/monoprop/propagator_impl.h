// Definitions of Propagator<Algebra, W>; included by propagator.h only.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>

namespace monoprop {

// Length of the parameter vector a per-layer mapping reads.
inline std::int32_t mapped_count(const std::vector<std::int32_t>& mapping) {
  std::int32_t top = -1;
  for (const std::int32_t p : mapping) top = std::max(top, p);
  return top + 1;
}

template <typename A, int W>
Propagator<A, W>::Propagator(Config config) : MonomialPropagator(std::move(config)) {
  const int n = config_.num_modes;
  for (const int mode : config_.occupied) {
    if (mode < 0 || mode >= n)
      throw ArgumentError("occupied mode " + std::to_string(mode) + " is out of range 0.." + std::to_string(n - 1) +
                          ".");
    occupied_.set(2 * static_cast<std::uint32_t>(mode));
  }
  std::vector<std::pair<Key, double>> terms;
  for (const Term& t : config_.initial_operator) terms.emplace_back(key_of(t.slots), t.coefficient);

  Shard* target = &store_;
  std::vector<double>* coefficients = &base_;
  if (schrodinger()) {
    expand_reference_state((std::min(*config_.schrodinger_cutoff, 2 * n) + 1) / 2);
    target = &observable_keys_;
    coefficients = &observable_coefficients_;
  }
  for (const auto& [key, h] : terms) {
    if (!schrodinger() && key.is_identity()) {
      core_ += h;
      continue;
    }
    accumulate(*target, *coefficients, key, h);
  }
  n_base_ = store_.size();
}

// Adds h to the coefficient of `key`, appending the key when it is new.
template <typename A, int W>
void Propagator<A, W>::accumulate(Shard& keys, std::vector<double>& coefficients, const Key& key, double h) {
  const auto slot = keys.find(key);
  if (slot != Shard::kEmpty) {
    coefficients[slot] += h;
    return;
  }
  keys.reserve_for(1);
  keys.append(key);
  coefficients.push_back(h);
}

template <typename A, int W>
auto Propagator<A, W>::key_of(const std::vector<std::uint32_t>& slots) const -> Key {
  Key k;
  const auto limit = static_cast<std::uint32_t>(2 * config_.num_modes);
  for (const std::uint32_t s : slots) {
    if (s >= limit)
      throw ArgumentError("slot " + std::to_string(s) + " is out of range; must be less than " + std::to_string(limit) +
                          ".");
    k.words[s >> 6] ^= std::uint64_t{1} << (s & 63);
  }
  return k;
}

// A key as users write it: Majorana indices "[0, 2]", or Pauli letters "X0 Z3".
template <typename A, int W>
std::string Propagator<A, W>::describe(const Key& key) const {
  std::string out;
  for (int q = 0; q < 2 * config_.num_modes; ++q) {
    const auto s = static_cast<std::uint32_t>(q);
    if constexpr (A::family == Family::Majorana) {
      if (key.test(s)) out += (out.empty() ? "" : ", ") + std::to_string(q);
    } else if (q % 2 == 0 && (key.test(s) || key.test(s + 1))) {
      const char letter = key.test(s) ? (key.test(s + 1) ? 'Z' : 'X') : 'Y';
      out += (out.empty() ? "" : " ") + std::string(1, letter) + std::to_string(q / 2);
    }
  }
  if constexpr (A::family == Family::Majorana) return "[" + out + "]";
  return out.empty() ? "I" : out;
}

// All products of at most `max_pairs` Z's: the truncated expansion of
// 2^n rho_ref = prod_j (1 + s_j Z_j); each coefficient is the product's own
// reference expectation.
template <typename A, int W>
void Propagator<A, W>::expand_reference_state(int max_pairs) {
  const int n = config_.num_modes;
  double count = 0, binom = 1;
  for (int k = 0; k <= max_pairs; ++k) {
    count += binom;
    binom = binom * (n - k) / (k + 1);
  }
  // Key columns, lengths, coefficient and about two index entries per term.
  const double bytes = count * (sizeof(Key) + sizeof(std::uint16_t) + sizeof(double) + 16.0);
  constexpr double kLimit = double(std::size_t{1} << 33);  // 8 GiB
  if (bytes > kLimit)
    throw std::runtime_error("the Schrodinger initial state expansion would hold about " +
                             std::to_string(static_cast<long long>(count)) + " terms (about " +
                             std::to_string(static_cast<long long>(bytes / (1 << 30))) +
                             " GiB, limit 8 GiB); lower schrodinger_cutoff.");
  store_.reserve_for(static_cast<std::size_t>(count));
  std::vector<int> modes;
  // Depth-first over increasing mode lists.
  auto visit = [&](auto&& self, int next) -> void {
    Key k;
    for (const int m : modes) {
      k.set(2 * static_cast<std::uint32_t>(m));
      k.set(2 * static_cast<std::uint32_t>(m) + 1);
    }
    store_.append(k);
    base_.push_back(A::reference_overlap(k, occupied_));
    if (static_cast<int>(modes.size()) == max_pairs) return;
    for (int m = next; m < n; ++m) {
      modes.push_back(m);
      self(self, m + 1);
      modes.pop_back();
    }
  };
  visit(visit, 0);
}

template <typename A, int W>
void Propagator<A, W>::check_circuit(const CircuitSpec& circuit, std::optional<int> k) const {
  if (k && (*k <= 0 || *k > 2 * config_.num_modes))
    throw ArgumentError("only_rotate_len_k=" + std::to_string(*k) + " is out of range; must be 0 < k <= 2*num_qubits");
  for (const LayerSpec& layer : circuit.layers) {
    key_of(layer.slots);
    if (layer.parameter < 0 || layer.parameter >= circuit.n_parameters)
      throw ArgumentError("layer parameter index " + std::to_string(layer.parameter) + " is outside 0.." +
                          std::to_string(circuit.n_parameters - 1) + ".");
    if (layer.gate < 0 || layer.gate >= circuit.n_gates)
      throw ArgumentError("layer gate index " + std::to_string(layer.gate) + " is outside 0.." +
                          std::to_string(circuit.n_gates - 1) + ".");
  }
}

template <typename A, int W>
void Propagator<A, W>::check_parameters(const std::vector<double>& parameters, std::int32_t expected) const {
  if (static_cast<std::int64_t>(parameters.size()) != expected)
    throw UsageError("Invalid functional call. Parameter length " + std::to_string(parameters.size()) +
                     " does not match the expected number of parameters " + std::to_string(expected) + ".");
}

// Argument checks of an evaluation; returns the per-layer parameter indices
// (graph order) of `mapping`, or nothing to use the graph's own.
template <typename A, int W>
std::vector<std::int32_t> Propagator<A, W>::checked_evaluation(const std::vector<double>& parameters,
                                                               const std::vector<std::int32_t>* mapping) const {
  check_valid();
  std::vector<std::int32_t> layer_parameters;
  if (mapping) layer_parameters = graph_order(*mapping);
  check_parameters(parameters, mapping ? mapped_count(*mapping) : n_parameters_);
  return layer_parameters;
}

template <typename A, int W>
std::vector<std::int32_t> Propagator<A, W>::graph_order(const std::vector<std::int32_t>& mapping) const {
  if (mapping.size() != graph_.size())
    throw ArgumentError("a per-layer mapping needs " + std::to_string(graph_.size()) + " entries; got " +
                        std::to_string(mapping.size()) + ".");
  for (const std::int32_t p : mapping)
    if (p < 0) throw ArgumentError("parameter mapping entries must be >= 0; got " + std::to_string(p) + ".");
  std::vector<std::int32_t> out(mapping);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W>
std::vector<const LayerSpec*> Propagator<A, W>::application_order(const CircuitSpec& circuit) const {
  std::vector<const LayerSpec*> order;
  for (const LayerSpec& layer : circuit.layers) order.push_back(&layer);
  // Heisenberg: the last gate acts on the observable first.
  if (!schrodinger()) std::reverse(order.begin(), order.end());
  return order;
}

template <typename A, int W>
bool Propagator<A, W>::keep_partner(const Key& partner, bool informed, double moved) const {
  const Truncation& t = config_.truncation;
  const int measure = t.type == CutoffType::Length ? partner.length() : partner.support();
  bool keep = measure <= t.cutoff || partner.fully_paired();
  if (informed) {
    if (!keep && t.upper_atol && moved > *t.upper_atol) keep = true;
    if (t.lower_atol && moved < *t.lower_atol) keep = false;
  }
  return keep;
}

template <typename A, int W>
void Propagator<A, W>::apply_layer(const Key& generator, double phi, std::vector<double>* c, GraphLayer* record,
                                   std::optional<int> k) {
  const Gen gen(generator);
  const double sn = std::sin(phi);
  const std::size_t n = store_.size();
  GraphLayer& L = scratch_;
  L.clear_entries();
  births_.clear();
  birth_signs_.clear();

  // Scan: classify every anticommuting term before anything changes. Terms go
  // in blocks: first the partners' hashes (and a prefetch of their index
  // lines), then the lookups, so the cache misses overlap.
  constexpr std::size_t kBlock = W <= 4 ? 256 : 64;  // enough misses in flight; bounded stack
  struct Candidate {
    Key partner;
    std::uint64_t hash;
    std::uint32_t slot;
    std::int8_t sign;
  };
  Candidate block[kBlock];
  std::uint32_t hits[kBlock];
  // The scan reads the generator's words straight from the store's columns.
  const std::uint64_t* columns[W];
  for (int w = 0; w < gen.n_active; ++w) columns[w] = store_.column(gen.active[w]);
  const std::uint16_t* lengths = store_.lengths();
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t end = std::min(n, start + kBlock);
    // Branch-free compaction: whether a term anticommutes is a coin flip the
    // branch predictor cannot learn.
    std::size_t h = 0;
    for (std::size_t i = start; i < end; ++i) {
      std::uint64_t odd = 0;
      for (int w = 0; w < gen.n_active; ++w) odd ^= A::odd_bits(columns[w][i], w, gen);
      bool hit = std::popcount(odd) & 1;
      if constexpr (A::kLengthMatters) hit ^= A::length_parity(lengths[i], gen);
      hits[h] = static_cast<std::uint32_t>(i);
      h += hit;
    }
    std::size_t m = 0;
    for (std::size_t e = 0; e < h; ++e) {
      if (k && store_.length(hits[e]) > *k) continue;
      const Key p = store_.key(hits[e]);
      Candidate& c = block[m++];
      c.partner = p ^ generator;
      c.hash = c.partner.hash();
      c.slot = hits[e];
      c.sign = static_cast<std::int8_t>(A::anticommuting_sign(p, gen));
      store_.prefetch(c.hash);
    }
    for (std::size_t e = 0; e < m; ++e) {
      const Candidate& cand = block[e];
      const std::uint32_t a = cand.slot;
      const auto j = store_.find(cand.partner, cand.hash);
      if (j != Shard::kEmpty) {
        if (k && cand.partner.length() > *k) {  // the partner does not rotate back
          L.halves.insert(L.halves.end(), {a, j});
          L.half_signs.push_back(cand.sign);
        } else if (a < j) {  // recorded once, from its lower slot
          L.pairs.insert(L.pairs.end(), {a, j});
          L.pair_signs.push_back(cand.sign);
        }
        continue;
      }
      if (keep_partner(cand.partner, c != nullptr, c ? std::abs(sn * (*c)[a]) : 0.0)) {
        births_.push_back(a);
        birth_signs_.push_back(cand.sign);
      } else {
        L.cos_only.push_back(a);
      }
    }
  }

  store_.reserve_for(births_.size());  // refuses before any change
  // A birth is a rotation whose partner starts at zero in every replay: recording
  // it as a pair lets the reverse sweep invert it instead of taping it.
  for (std::size_t e = 0; e < births_.size(); ++e) {
    const Key q = store_.key(births_[e]) ^ generator;
    L.pairs.insert(L.pairs.end(), {births_[e], store_.append(q)});
    L.pair_signs.push_back(birth_signs_[e]);
  }

  if (c) {
    c->resize(store_.size(), 0.0);
    rotate_layer(L, phi, *c);
  }
  if (record) {  // copies sized to fit: the scratch keeps its capacity for the next layer
    record->pairs = L.pairs;
    record->pair_signs = L.pair_signs;
    record->halves = L.halves;
    record->half_signs = L.half_signs;
    record->cos_only = L.cos_only;
  }
}

// Applies a circuit's layers in application order, reporting progress.
template <typename A, int W>
void Propagator<A, W>::apply_circuit(const CircuitSpec& circuit, const std::vector<double>* theta,
                                     std::int32_t parameter_shift, std::int32_t gate_shift, std::vector<double>* work,
                                     Graph* record, std::optional<int> k) {
  const auto order = application_order(circuit);
  for (std::size_t l = 0; l < order.size(); ++l) {
    const LayerSpec& layer = *order[l];
    GraphLayer* rec = nullptr;
    if (record) {
      rec = &record->emplace_back();
      rec->parameter = layer.parameter + parameter_shift;
      rec->gate = layer.gate + gate_shift;
      rec->frequency = frequency(layer);
    }
    const double phi = theta ? frequency(layer) * (*theta)[layer.parameter + parameter_shift] : 0.0;
    apply_layer(key_of(layer.slots), phi, work, rec, k);
    if (l == 0) maybe_fault(record ? "build_graph" : "propagate");
    if (progress_) progress_(l + 1, order.size(), store_.size());
  }
}

template <typename A, int W>
void Propagator<A, W>::propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                                 std::optional<int> k) {
  check_valid();
  check_circuit(circuit, k);
  if (!graph_.empty())
    throw UsageError(
        "propagate() cannot run on a propagator with a non-empty graph; contract it first "
        "(contract_partially) or use build_graph.");
  if (static_cast<std::int64_t>(parameters.size()) != circuit.n_parameters)
    throw UsageError("The length of parameters (" + std::to_string(parameters.size()) +
                     ") must be the same as max(parameter_mapping)+1 (" + std::to_string(circuit.n_parameters) + ").");
  guarded("propagate", [&] {
    const std::size_t before = store_.size();
    // A layer refuses the shard ceiling before it changes any coefficient, so
    // a one-layer call can work in place; a longer one works on a copy that
    // is committed only when every layer went through.
    const bool in_place = circuit.layers.size() <= 1;
    std::vector<double> copy;
    if (!in_place) copy = base_;
    std::vector<double>& work = in_place ? base_ : copy;
    try {
      apply_circuit(circuit, &parameters, 0, 0, &work, nullptr, k);
    } catch (const ShardCeilingError&) {
      store_.truncate(before);  // refused: as if nothing happened
      base_.resize(before);
      throw;
    }
    if (!in_place) base_ = std::move(copy);
    n_base_ = store_.size();
    weights_stale_ = true;
    ++generation_;
  });
}

template <typename A, int W>
void Propagator<A, W>::build_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                                   std::optional<int> k) {
  check_valid();
  check_circuit(circuit, k);
  const std::int32_t total = n_parameters_ + circuit.n_parameters;
  if (seed && static_cast<std::int64_t>(seed->size()) != total)
    throw UsageError("The length of parameters (" + std::to_string(seed->size()) +
                     ") must be the same as max(parameter_mapping)+1 (" + std::to_string(total) +
                     ") of the graph after this build.");
  guarded("build_graph", [&] {
    // Heisenberg: the new circuit acts first on the state, so its parameters
    // and gates come first on the axes; Schrodinger: they come last.
    const std::int32_t old_shift = schrodinger() ? 0 : circuit.n_parameters;
    const std::int32_t new_shift = schrodinger() ? n_parameters_ : 0;
    const std::int32_t old_gate_shift = schrodinger() ? 0 : circuit.n_gates;
    const std::int32_t new_gate_shift = schrodinger() ? n_gates_ : 0;

    std::vector<double> work;
    if (seed) {  // the operand at the seed, for coefficient-informed truncation
      std::vector<double> old_theta(static_cast<std::size_t>(n_parameters_));
      for (std::int32_t p = 0; p < n_parameters_; ++p) old_theta[p] = (*seed)[p + old_shift];
      work = base_;
      replay_forward(graph_, old_theta.data(), work, nullptr);
    }
    const std::size_t before = store_.size();
    Graph added;
    try {
      apply_circuit(circuit, seed ? &*seed : nullptr, new_shift, new_gate_shift, seed ? &work : nullptr, &added, k);
    } catch (const ShardCeilingError&) {
      store_.truncate(before);
      throw;
    }
    for (GraphLayer& layer : graph_) {
      layer.parameter += old_shift;
      layer.gate += old_gate_shift;
    }
    for (GraphLayer& layer : added) graph_.push_back(std::move(layer));
    base_.resize(store_.size(), 0.0);
    n_parameters_ = total;
    n_gates_ += circuit.n_gates;
    weights_stale_ = true;
    ++generation_;
  });
}

template <typename A, int W>
void Propagator<A, W>::replay_into(std::vector<double>& c, const std::vector<double>& parameters,
                                   std::vector<double>* tape, double pare,
                                   const std::vector<std::int32_t>* layer_parameters) const {
  c.assign(base_.begin(), base_.end());
  maybe_fault("evaluate");
  if (!graph_.empty())
    replay_forward(graph_, parameters.data(), c, tape, pare, layer_parameters ? layer_parameters->data() : nullptr);
}

template <typename A, int W>
std::vector<double> Propagator<A, W>::replayed(const std::vector<double>& parameters) const {
  std::vector<double> c;
  replay_into(c, parameters, nullptr, 0.0, nullptr);
  return c;
}

template <typename A, int W>
const std::vector<double>& Propagator<A, W>::weights() const {
  if (!weights_stale_ && weights_.size() == store_.size()) return weights_;
  weights_.resize(store_.size());
  for (std::size_t i = 0; i < store_.size(); ++i) {
    if (schrodinger()) {
      const auto slot = observable_keys_.find(store_.key(i));
      weights_[i] = slot == Shard::kEmpty ? 0.0 : observable_coefficients_[slot];
    } else {
      weights_[i] = A::reference_overlap(store_.key(i), occupied_);
    }
  }
  weights_stale_ = false;
  return weights_;
}

template <typename A, int W>
double Propagator<A, W>::expectation_value(const std::vector<double>& parameters, double pare,
                                           const std::vector<std::int32_t>* mapping) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  return guarded("evaluate", [&] {
    std::vector<double>& c = replay_c_;
    replay_into(c, parameters, nullptr, pare, mapping ? &layer_parameters : nullptr);
    const std::vector<double>& w = weights();
    double f = 0.0;
    for (std::size_t i = 0; i < c.size(); ++i) f += w[i] * c[i];
    return f + core_;
  });
}

template <typename A, int W>
double Propagator<A, W>::expectation_value_and_gradient(const std::vector<double>& parameters,
                                                        std::vector<double>& gradient, double pare,
                                                        const std::vector<std::int32_t>* mapping) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    // Buffers persist across calls: a VQE loop replays thousands of times and
    // fresh pages would cost more than the sweep.
    std::vector<double>& c = replay_c_;
    replay_into(c, parameters, &replay_tape_, pare, mapping ? &layer_parameters : nullptr);
    const std::vector<double>& w = weights();
    std::vector<double>& state = replay_state_;  // interleaved (c, lambda)
    state.resize(2 * c.size());
    double f = 0.0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      f += w[i] * c[i];
      state[2 * i] = c[i];
      state[2 * i + 1] = w[i];
    }
    gradient.assign(parameters.size(), 0.0);
    replay_adjoint(graph_, parameters.data(), replay_tape_, state.data(), gradient.data(), pare, lp);
    return f + core_;
  });
}

template <typename A, int W>
std::vector<double> Propagator<A, W>::contract(const std::vector<double>& parameters, bool inplace) {
  check_valid();
  check_parameters(parameters, n_parameters_);
  return guarded("contract_partially", [&] {
    std::vector<double> c = replayed(parameters);
    if (!inplace) return c;
    base_ = c;
    maybe_fault("contract");
    graph_.clear();
    n_parameters_ = 0;
    n_gates_ = 0;
    n_base_ = store_.size();
    ++generation_;
    return c;
  });
}

template <typename A, int W>
TermList Propagator<A, W>::evolved_terms(const std::vector<double>& parameters, double atol) const {
  check_valid();
  check_parameters(parameters, n_parameters_);
  const std::vector<double> c = guarded("evaluate", [&] { return replayed(parameters); });
  TermList out;
  auto emit = [&](const Key& key, double h) {
    for (std::uint32_t s = 0; s < static_cast<std::uint32_t>(2 * config_.num_modes); ++s)
      if (key.test(s)) out.slots.push_back(s);
    out.offsets.push_back(out.slots.size());
    out.coefficients.push_back(h);
  };
  if (!schrodinger() && (atol == 0.0 || std::abs(core_) >= atol)) emit(Key{}, core_);
  for (std::size_t i = 0; i < c.size(); ++i)
    if (atol == 0.0 || std::abs(c[i]) >= atol) emit(store_.key(i), c[i]);
  return out;
}

template <typename A, int W>
std::vector<double> Propagator<A, W>::coefficients_of(const std::vector<Term>& terms,
                                                      const std::vector<double>& parameters) const {
  check_valid();
  std::vector<Key> keys;
  for (const Term& t : terms) keys.push_back(key_of(t.slots));
  check_parameters(parameters, n_parameters_);
  const std::vector<double> c = guarded("evaluate", [&] { return replayed(parameters); });
  std::vector<double> out;
  for (const Key& key : keys) {
    if (!schrodinger() && key.is_identity()) {
      out.push_back(core_);
      continue;
    }
    const auto slot = store_.find(key);
    out.push_back(slot == Shard::kEmpty ? 0.0 : c[slot]);
  }
  return out;
}

template <typename A, int W>
void Propagator<A, W>::apply_initial_operator_(const std::vector<Term>& terms) {
  std::vector<std::pair<Key, double>> keyed;
  for (const Term& t : terms) keyed.emplace_back(key_of(t.slots), t.coefficient);
  if (schrodinger()) {
    Shard keys;
    std::vector<double> coefficients;
    for (const auto& [key, h] : keyed) accumulate(keys, coefficients, key, h);
    observable_keys_ = std::move(keys);
    observable_coefficients_ = std::move(coefficients);
  } else {
    // Only terms the graph started from can be set: later slots were born
    // inside the graph and their history before birth was not recorded.
    std::vector<std::pair<std::size_t, double>> slots;
    std::optional<double> core;
    for (const auto& [key, h] : keyed) {
      if (key.is_identity()) {
        core = h;
        continue;
      }
      const auto slot = store_.find(key);
      if (slot == Shard::kEmpty || slot >= n_base_) {
        throw UsageError("Operator term " + describe(key) + " not found in the operator.");
      }
      slots.emplace_back(slot, h);
    }
    std::fill(base_.begin(), base_.end(), 0.0);
    maybe_fault("update_initial_operator");
    for (const auto& [slot, h] : slots) base_[slot] = h;
    if (core) core_ = *core;
  }
  weights_stale_ = true;
  ++generation_;
}

template <typename A, int W>
std::pair<std::size_t, std::size_t> Propagator<A, W>::graph_size() const {
  check_valid();
  std::size_t cos_only = 0, cycles = 0;
  for (const GraphLayer& layer : graph_) {
    cos_only += layer.cos_only.size();
    cycles += layer.n_rotations();
  }
  return {cos_only, cycles};
}

// Graph layers are stored in application order; the circuit's order (the one
// parameter_mapping speaks in) is the reverse in the Heisenberg picture.
template <typename A, int W>
std::vector<std::int32_t> Propagator<A, W>::parameter_mapping() const {
  check_valid();
  std::vector<std::int32_t> out;
  for (const GraphLayer& layer : graph_) out.push_back(layer.parameter);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W>
std::vector<std::int32_t> Propagator<A, W>::layer_gates() const {
  check_valid();
  std::vector<std::int32_t> out;
  for (const GraphLayer& layer : graph_) out.push_back(layer.gate);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W>
void Propagator<A, W>::set_parameter_mapping(const std::vector<std::int32_t>& per_layer) {
  check_valid();
  if (per_layer.size() != graph_.size())
    throw ArgumentError("parameter_mapping has " + std::to_string(per_layer.size()) + " entries; expected " +
                        std::to_string(graph_.size()) + " (per graph layer).");
  std::int32_t top = -1;
  for (const std::int32_t p : per_layer) {
    if (p < 0) throw ArgumentError("parameter_mapping indices must be non-negative.");
    top = std::max(top, p);
  }
  const std::size_t L = graph_.size();
  for (std::size_t i = 0; i < L; ++i) graph_[schrodinger() ? i : L - 1 - i].parameter = per_layer[i];
  n_parameters_ = top + 1;
}

template <typename A, int W>
MemoryUsage Propagator<A, W>::memory() const {
  check_valid();
  MemoryUsage m;
  m.terms = store_.key_bytes() + base_.capacity() * sizeof(double);
  m.index = store_.index_bytes();
  for (const GraphLayer& layer : graph_) m.graph += layer.bytes();
  m.buffers = (replay_c_.capacity() + replay_tape_.capacity() + replay_state_.capacity()) * sizeof(double) +
              scratch_.bytes() + births_.capacity() * 4 + birth_signs_.capacity() + weights_.capacity() * 8 +
              observable_keys_.key_bytes() + observable_keys_.index_bytes();
  return m;
}

}  // namespace monoprop
