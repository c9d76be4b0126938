// Propagator: construction, the operand's terms, and argument checks.
// Included by propagator.h only.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace monoprop {

// Length of the parameter vector a per-layer mapping reads.
inline std::int32_t mapped_count(const std::vector<std::int32_t>& mapping) {
  std::int32_t top = -1;
  for (const std::int32_t p : mapping) top = std::max(top, p);
  return top + 1;
}

template <typename A, int W, typename I>
Propagator<A, W, I>::Propagator(Bare, Config config, BasisChange basis_change, int logical_num_modes, Family basis)
    : MonomialPropagator(std::move(config), std::move(basis_change), logical_num_modes, basis),
      routing_((config_.comm.check_thread("construction"), config_.comm), num_threads_, 2 * config_.num_modes),
      rank_(config_.comm.rank()),
      budget_(config_.memory_limit),
      observable_keys_(2 * config_.num_modes, false),
      frame_(2 * config_.num_modes),
      start_frame_(2 * config_.num_modes) {
  const int n = config_.num_modes;
  check_shards_fit();
  shards_.reserve(static_cast<std::size_t>(num_threads_));
  for (int t = 0; t < num_threads_; ++t) shards_.emplace_back(2 * n);
  replayer_ = Replayer(shards_.size());
  release_scratch();
  for (const int mode : config_.occupied) {
    if (mode < 0 || mode >= n)
      throw ArgumentError("occupied mode " + std::to_string(mode) + " is out of range 0.." + std::to_string(n - 1) +
                          ".");
    occupied_.set(2 * static_cast<std::uint32_t>(mode));
  }
}

// Each shard holds its Shard object, an empty store (bit-column headers and
// the first index group) and lists of lookups: one for every shard of the
// rank, twice (outbox and late, layer_scan.h), and one for every rank. So T
// shards take at least T (b + (2T + R) v) bytes, quadratic in T: measured
// resident growth is 48 T^2 plus about 2 kB a shard on 4 qubits (11 kB on
// 100, 98 kB on 1000, where the column headers dominate), a little above
// this bound. monoprop_NUM_THREADS=999999 would ask for 48 TB.
template <typename A, int W, typename I>
std::uint64_t Propagator<A, W, I>::empty_shards_bytes(std::uint64_t threads, std::uint64_t ranks, int slots) {
  using Wide = unsigned __int128;  // 2^31 threads squared overflows 64 bits
  const Wide lists = 2 * Wide{threads} + Wide{ranks};
  const Wide each = sizeof(Shard) + Keys::empty_bytes(slots, A::kParityColumn) + lists * sizeof(std::vector<Query>);
  const Wide total = each * threads;
  const Wide most = std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(total < most ? total : most);
}

// The check runs before the first shard is allocated and before any OpenMP
// team is opened (a team of T threads would be the next thing to fail). It is
// collective: when one rank would pass its budget, every rank raises, so no
// rank goes on to wait for one that left.
template <typename A, int W, typename I>
void Propagator<A, W, I>::check_shards_fit() const {
  const int slots = 2 * config_.num_modes;
  const auto ranks = static_cast<std::uint64_t>(routing_.ranks());
  const auto threads = static_cast<std::uint64_t>(num_threads_);
  const std::uint64_t limit = budget_.limit(), held = resident_bytes();
  const std::uint64_t room = held < limit ? limit - held : 0;
  const std::uint64_t need = empty_shards_bytes(threads, ranks, slots);
  std::uint64_t over = need > room;
  config_.comm.max(&over, 1);
  if (!over) return;
  // The largest thread count that fits (the bytes grow with T).
  std::uint64_t lo = 0, hi = threads;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (empty_shards_bytes(mid, ranks, slots) <= room)
      lo = mid;
    else
      hi = mid - 1;
  }
  const std::string t = std::to_string(num_threads_);
  std::string source;
  if (config_.threads)
    source = "This propagator's " + t + " threads (the count of the propagator it copies or loads)";
  else if (std::getenv("monoprop_NUM_THREADS"))
    source = "monoprop_NUM_THREADS=" + t;
  else
    source = "The OpenMP default of " + t + " threads (monoprop_NUM_THREADS is unset)";
  std::string message = source + " would give this propagator " + t + " shards";
  if (need > room && ranks > 1) message += " on each rank";
  message += ", whose empty stores and lookup lists alone take at least " + format_bytes(need) +
             " (each shard keeps a list for every shard, so this grows as the square of the thread count)";
  if (need > room)
    message += "; with the " + format_bytes(held) + " this process holds, that passes its " + budget_.describe();
  else
    message += ", which fits here, but another rank would pass its memory budget";
  message += ". Nothing was allocated. Set monoprop_NUM_THREADS to fewer threads (";
  if (need > room) message += lo > 0 ? "at most " + std::to_string(lo) + " fit here; " : "not even one fits here; ";
  message += "one per core is the usual choice), or raise the budget (memory_limit=, monoprop_MEMORY_LIMIT).";
  throw MemoryBudgetError(message);
}

template <typename A, int W, typename I>
Propagator<A, W, I>::Propagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis)
    : Propagator(Bare{}, std::move(config), std::move(basis_change), logical_num_modes, basis) {
  const int n = config_.num_modes;
  std::vector<std::pair<Key, double>> terms;
  for (const Term& t : config_.initial_operator) terms.emplace_back(key_of(t.slots), t.coefficient);

  if (schrodinger()) {
    const int pairs = (std::min(*config_.schrodinger_cutoff, 2 * n) + 1) / 2;
    expand_reference_state(pairs);
    // 2^n rho = prod_m (I +- Z_m) has C(n, k) terms of k pairs, each of
    // weight 1: those past the cutoff are dropped (held_), counted on rank 0.
    double binom = 1.0, dropped = 0.0;
    for (int k = 0; k <= n; ++k) {
      if (k > pairs) dropped += binom;
      binom = binom * (n - k) / (k + 1);
    }
    if (rank_ == 0) held_ = {dropped, dropped, dropped, dropped};
  }
  for (const auto& [key, h] : terms) {
    if (!key.is_identity()) observable_norm_ += std::abs(h);
    if (schrodinger())
      accumulate(observable_keys_, observable_coefficients_, key, h);
    else if (key.is_identity())
      core_ += h;
    else
      accumulate(key, h);
  }
  for (Shard& shard : shards_) shard.n_base = shard.keys.size();
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::accumulate(const Key& key, double h) {
  if (!held_here(key)) return;  // another rank's term
  Shard& shard = shards_[owner(key.hash())];
  accumulate(shard.keys, shard.base, key, h);
}

// Adds h to the coefficient of `key`, appending the key when it is new.
template <typename A, int W, typename I>
void Propagator<A, W, I>::accumulate(Keys& keys, Column<double>& coefficients, const Key& key, double h) {
  const auto slot = keys.find(key);
  if (slot != Keys::kEmpty) {
    coefficients[slot] += h;
    return;
  }
  keys.reserve_for(1);
  keys.append(key);
  coefficients.push_back(h);
}

template <typename A, int W, typename I>
std::size_t Propagator<A, W, I>::total_size() const {
  std::size_t n = 0;
  for (const Shard& shard : shards_) n += shard.keys.size();
  return n;
}

template <typename A, int W, typename I>
auto Propagator<A, W, I>::key_of(const std::vector<std::uint32_t>& slots) const -> Key {
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
template <typename A, int W, typename I>
std::string Propagator<A, W, I>::describe(const Key& key) const {
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
template <typename A, int W, typename I>
void Propagator<A, W, I>::expand_reference_state(int max_pairs) {
  const int n = config_.num_modes;
  double count = 0, binom = 1;
  for (int k = 0; k <= max_pairs; ++k) {
    count += binom;
    binom = binom * (n - k) / (k + 1);
  }
  // Key rows and bits, coefficient and index per term.
  const double bytes = count * (sizeof(Key) + n / 4.0 + sizeof(double) + 12.0);
  if (bytes > static_cast<double>(budget_.limit()))
    throw std::runtime_error("the Schrodinger initial state expansion would hold about " +
                             std::to_string(static_cast<long long>(count)) + " terms (about " +
                             format_bytes(static_cast<std::uint64_t>(bytes)) + ", above the memory budget of " +
                             format_bytes(budget_.limit()) + "); lower schrodinger_cutoff.");
  std::vector<int> modes;
  // Depth-first over increasing mode lists; each product goes to its owner.
  auto visit = [&](auto&& self, int next) -> void {
    Key k;
    for (const int m : modes) {
      k.set(2 * static_cast<std::uint32_t>(m));
      k.set(2 * static_cast<std::uint32_t>(m) + 1);
    }
    if (held_here(k)) {
      Shard& shard = shards_[owner(k.hash())];
      shard.keys.reserve_for(1);
      shard.keys.append(k);
      shard.base.push_back(A::reference_overlap(k, occupied_));
    }
    if (static_cast<int>(modes.size()) == max_pairs) return;
    for (int m = next; m < n; ++m) {
      modes.push_back(m);
      self(self, m + 1);
      modes.pop_back();
    }
  };
  visit(visit, 0);
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_circuit(const CircuitSpec& circuit, std::optional<int> k) const {
  if (k && (*k <= 0 || *k > 2 * config_.num_modes))
    throw ArgumentError("only_rotate_len_k=" + std::to_string(*k) + " is out of range; must be 0 < k <= 2*num_qubits");
  for (const LayerSpec& layer : circuit.layers) {
    key_of(layer.slots);
    if (layer.quarter_turns < 0 || layer.quarter_turns > 3)
      throw ArgumentError("layer quarter_turns " + std::to_string(layer.quarter_turns) + " is outside 0..3.");
    if (layer.quarter_turns) continue;  // a Clifford layer takes no parameter
    if (!layer.noise.rotation()) check_noise(layer);
    if (!layer.noise.rotation() && layer.parameter == -1 && layer.gate == -1) continue;  // a fixed rate
    if (layer.parameter < 0 || layer.parameter >= circuit.n_parameters)
      throw ArgumentError("layer parameter index " + std::to_string(layer.parameter) + " is outside 0.." +
                          std::to_string(circuit.n_parameters - 1) + ".");
    if (layer.gate < 0 || layer.gate >= circuit.n_gates)
      throw ArgumentError("layer gate index " + std::to_string(layer.gate) + " is outside 0.." +
                          std::to_string(circuit.n_gates - 1) + ".");
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_noise(const LayerSpec& layer) const {
  const Noise& noise = layer.noise;
  const auto kind = static_cast<int>(noise.kind);
  if (kind < 1 || kind > 3 || static_cast<int>(noise.form) > 2)
    throw ArgumentError("noise layer kind " + std::to_string(kind) + " or form " +
                        std::to_string(static_cast<int>(noise.form)) + " is unknown.");
  if (noise.kind != LayerKind::Damp && (layer.slots.empty() || layer.slots.size() > 4))
    throw ArgumentError("a Select or Transfer noise layer reads 1 to 4 slots; got " +
                        std::to_string(layer.slots.size()) + ".");
  if (noise.kind == LayerKind::Select && (noise.patterns & 1))
    throw ArgumentError("a Select noise layer cannot scale pattern 0 (terms without the channel's qubits).");
  if (!std::isfinite(noise.alpha) || !std::isfinite(noise.beta))
    throw ArgumentError("noise layer numbers must be finite; got alpha " + std::to_string(noise.alpha) + ", beta " +
                        std::to_string(noise.beta) + ".");
}

// The rates a circuit's noise layers read from `theta` (at p + shift) lie
// in their channels' ranges.
template <typename A, int W, typename I>
void Propagator<A, W, I>::check_circuit_rates(const CircuitSpec& circuit, const std::vector<double>& theta,
                                              std::int32_t shift) const {
  for (const LayerSpec& layer : circuit.layers) {
    if (layer.noise.rotation() || layer.quarter_turns || layer.parameter < 0) continue;
    const std::int32_t p = layer.parameter + shift;
    const double rate = theta[static_cast<std::size_t>(p)];
    if (!(rate >= layer.noise.lowest && rate <= layer.noise.highest))
      throw ArgumentError("parameter " + std::to_string(p) + " = " + std::to_string(rate) +
                          " is the rate of a noise channel, which is defined for rates in [" +
                          std::to_string(layer.noise.lowest) + ", " + std::to_string(layer.noise.highest) +
                          "]; keep the rate in that range.");
  }
}

// Every rate a layer reads from `theta` (per-layer indices `lp`, or the
// graph's) lies in its channel's range; with `gradient`, no layer scales by 0,
// since the reverse sweep recovers a layer's inputs by dividing by its scale.
template <typename A, int W, typename I>
void Propagator<A, W, I>::check_rates(const double* theta, const std::int32_t* lp, bool gradient) const {
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const LayerInfo& info = layers_[l];
    if (info.noise.rotation()) continue;
    const std::int32_t p = lp ? lp[l] : info.parameter;
    const double rate = p < 0 ? 0.0 : theta[p];
    if (p >= 0 && !(rate >= info.noise.lowest && rate <= info.noise.highest))
      throw ArgumentError("parameter " + std::to_string(p) + " = " + std::to_string(rate) +
                          " is the rate of a noise channel, which is defined for rates in [" +
                          std::to_string(info.noise.lowest) + ", " + std::to_string(info.noise.highest) +
                          "]; keep the rate in that range (for example with bounds in scipy.optimize.minimize).");
    if (gradient && info.noise.scales() && !(std::abs(info.turn(rate).cs) >= std::numeric_limits<double>::min()))
      throw ArgumentError("a noise channel " +
                          std::string(p < 0 ? "of fixed rate" : "at parameter " + std::to_string(p)) +
                          " erases the terms it acts on (it scales them by 0, as depolarizing at p = 1 does), so "
                          "the gradient cannot be taken through it; evaluate values only, or use a rate that keeps "
                          "some signal.");
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_parameters(std::span<const double> parameters, std::int32_t expected) const {
  if (static_cast<std::int64_t>(parameters.size()) != expected)
    throw UsageError("Invalid functional call. Parameter length " + std::to_string(parameters.size()) +
                     " does not match the expected number of parameters " + std::to_string(expected) +
                     ". Pass a vector of " + std::to_string(expected) +
                     " values: one per graph parameter (after a Heisenberg build_graph extension the new "
                     "circuit's parameters come first).");
}

// Argument checks of an evaluation; returns the per-layer parameter indices
// (graph order) of `mapping`, or nothing to use the graph's own.
template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::checked_evaluation(std::span<const double> parameters,
                                                                  const std::vector<std::int32_t>* mapping,
                                                                  bool gradient) const {
  check_valid();
  std::vector<std::int32_t> layer_parameters;
  if (mapping) layer_parameters = graph_order(*mapping);
  check_parameters(parameters, mapping ? mapped_count(*mapping) : n_parameters_);
  check_rates(parameters.data(), mapping ? layer_parameters.data() : nullptr, gradient);
  return layer_parameters;
}

template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::graph_order(const std::vector<std::int32_t>& mapping) const {
  if (mapping.size() != layers_.size())
    throw ArgumentError("a per-layer mapping needs " + std::to_string(layers_.size()) + " entries; got " +
                        std::to_string(mapping.size()) + ".");
  std::vector<std::int32_t> out(mapping);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  check_layer_parameters(out);
  return out;
}

// Per-layer parameter indices (graph order) are >= 0, except -1 exactly at
// the noise layers of fixed rate.
template <typename A, int W, typename I>
void Propagator<A, W, I>::check_layer_parameters(const std::vector<std::int32_t>& per_layer) const {
  for (std::size_t l = 0; l < per_layer.size(); ++l) {
    const bool fixed = layers_[l].parameter < 0;
    const std::size_t position = schrodinger() ? l : per_layer.size() - 1 - l;
    if (fixed && per_layer[l] != -1)
      throw ArgumentError("parameter mapping entry " + std::to_string(position) +
                          " belongs to a noise channel of fixed rate " + "and must be -1; got " +
                          std::to_string(per_layer[l]) + ".");
    if (!fixed && per_layer[l] < 0)
      throw ArgumentError("parameter mapping entries must be >= 0 (-1 only at noise channels of fixed rate); got " +
                          std::to_string(per_layer[l]) + " at entry " + std::to_string(position) + ".");
  }
}

// Heisenberg: the last gate acts on the observable first. Every ordering
// between circuit order and application order goes through this function,
// graph_order and parameter_mapping.
template <typename A, int W, typename I>
std::vector<const LayerSpec*> Propagator<A, W, I>::application_order(const CircuitSpec& circuit) const {
  std::vector<const LayerSpec*> order;
  for (const LayerSpec& layer : circuit.layers) order.push_back(&layer);
  if (!schrodinger()) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace monoprop
