// Propagator: updates of the operand, the parameter mapping, and what
// describes the stores. Included by propagator.h only.
#pragma once

#include <type_traits>

namespace monoprop {

template <typename A, int W, typename I>
std::size_t Propagator<A, W, I>::apply_initial_operator_(const std::vector<Term>& terms) {
  std::vector<std::pair<Key, double>> keyed;
  for (const Term& t : terms) keyed.emplace_back(key_of(t.slots), t.coefficient);
  if (schrodinger()) {
    Keys keys(2 * config_.num_modes, false);
    Column<double> coefficients;
    for (const auto& [key, h] : keyed) accumulate(keys, coefficients, key, h);
    observable_keys_ = std::move(keys);
    observable_coefficients_ = std::move(coefficients);
    replayer_.stale_weights();
    // Dark branches were those that could not reach the old observable (reach.h).
    for (LayerInfo& layer : layers_) layer.stale = true;
    held_.forget_reach();
    ++generation_;
    return keyed.size();
  }
  // Only terms the graph started from can be set: later slots were born
  // inside the graph and their history before birth was not recorded.
  std::vector<std::vector<std::pair<std::size_t, double>>> slots(shards_.size());
  std::optional<double> core;
  std::size_t held = 0;
  // The first term no rank holds, agreed on by all ranks before any changes.
  std::uint64_t missing = ~std::uint64_t{0};
  for (std::size_t i = 0; i < keyed.size() && missing == ~std::uint64_t{0}; ++i) {
    if (keyed[i].first.is_identity()) {
      core = keyed[i].second;
      continue;
    }
    // The key that stands for the term where the graph starts (clifford_frame.h).
    const auto [key, sign] = start_frame_.backward(keyed[i].first);
    const double h = sign * keyed[i].second;
    if (!held_here(key)) continue;
    const int s = owner(key.hash());
    const auto slot = shards_[static_cast<std::size_t>(s)].keys.find(key);
    if (slot == Keys::kEmpty || slot >= shards_[static_cast<std::size_t>(s)].n_base) {
      missing = i;
      break;
    }
    slots[static_cast<std::size_t>(s)].emplace_back(slot, h);
    ++held;
  }
  std::uint64_t first = ~missing;  // the maximum of the complements is the minimum
  config_.comm.max(&first, 1);
  if (first != 0)
    throw UsageError("Operator term " + describe(keyed[static_cast<std::size_t>(~first)].first) +
                     " not found in the operator.");
  Team::run(threads(), total_size() < small_work_, [&](int t, Team& team) {
    if (t == 0) maybe_fault("update_initial_operator");
    team.each(t, [&](int s) {
      Shard& me = shards_[static_cast<std::size_t>(s)];
      std::fill(me.base.begin(), me.base.end(), 0.0);
      for (const auto& [slot, h] : slots[static_cast<std::size_t>(s)]) me.base[slot] = h;
    });
  });
  if (core) core_ = *core;
  observable_norm_ = 0.0;
  for (const auto& [key, h] : keyed)
    if (!key.is_identity()) observable_norm_ += std::abs(h);
  held_ = {};  // a new operand: what the old one dropped no longer applies
  ++generation_;
  return held;
}

template <typename A, int W, typename I>
std::pair<std::size_t, std::size_t> Propagator<A, W, I>::graph_size() const {
  check_valid();
  std::size_t cos_only = 0, rotations = 0;
  for (const Shard& shard : shards_)
    for (const ShardLayer& layer : shard.graph) {
      cos_only += layer.n_cos();
      rotations += layer.n_rotations();
    }
  // An entry that spans two ranks counts on the lower one: the ranks' sizes add up.
  for (const RemoteLayer& layer : remote_)
    for (const RemoteBlock& b : layer.blocks)
      if (b.counts) rotations += b.size();
  return {cos_only, rotations};
}

// Graph layers are stored in application order; the circuit's order (the one
// parameter_mapping speaks in) is the reverse in the Heisenberg picture.
template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::parameter_mapping() const {
  check_valid();
  std::vector<std::int32_t> out;
  for (const LayerInfo& layer : layers_) out.push_back(layer.parameter);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::layer_gates() const {
  check_valid();
  std::vector<std::int32_t> out;
  for (const LayerInfo& layer : layers_) out.push_back(layer.gate);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::set_parameter_mapping(const std::vector<std::int32_t>& per_layer) {
  check_valid();
  const std::size_t L = layers_.size();
  if (per_layer.size() != L)
    throw ArgumentError("parameter_mapping has " + std::to_string(per_layer.size()) + " entries; expected " +
                        std::to_string(L) + " (per graph layer).");
  std::vector<std::int32_t> graph_ordered(per_layer);
  if (!schrodinger()) std::reverse(graph_ordered.begin(), graph_ordered.end());
  check_layer_parameters(graph_ordered);
  for (std::size_t i = 0; i < L; ++i) layers_[schrodinger() ? i : L - 1 - i].parameter = per_layer[i];
  n_parameters_ = mapped_count(per_layer);
}

template <typename A, int W, typename I>
MemoryUsage Propagator<A, W, I>::memory() const {
  check_valid();
  MemoryUsage m;
  for (const Shard& shard : shards_) {
    m.terms += shard.keys.key_bytes() + shard.base.bytes();
    m.index += shard.keys.index_bytes();
    for (const ShardLayer& layer : shard.graph) m.graph += layer.memory();
    std::size_t queries = 0;
    for (const auto& out : shard.outbox) queries += out.capacity();
    for (const auto& out : shard.late) queries += out.capacity();
    m.buffers += shard.work.bytes() + shard.flags.bytes() + shard.quiet.bytes() + shard.quiet_late.bytes() +
                 queries * sizeof(Query);
  }
  m.graph += layers_.capacity() * sizeof(LayerInfo) + replayer_.graph_bytes();
  for (const RemoteLayer& layer : remote_) m.graph += layer.bytes();
  m.buffers += replayer_.buffer_bytes();
  m.buffers += observable_keys_.key_bytes() + observable_keys_.index_bytes();
  m.buffers += frame_.bytes() + start_frame_.bytes();
  return m;
}

template <typename A, int W, typename I>
OperatorView Propagator<A, W, I>::mp_op_() const {
  if (!frame_.identity())
    throw UsageError(
        "mp_op() is not available after a Clifford gate: the store then holds the operator in the gates' frame, "
        "not as its terms. Use evolved_operator() for the terms.");
  const Shard& shard = shards_[0];
  Column<std::uint16_t>& lengths = replayer_.lengths();
  lengths.resize(shard.keys.size());
  for (std::size_t i = 0; i < shard.keys.size(); ++i) lengths[i] = static_cast<std::uint16_t>(shard.keys.length(i));
  OperatorView view;
  view.words = W;
  view.size = shard.keys.size();
  view.keys = shard.keys.row(0);
  view.lengths = lengths.data();
  view.coefficients = shard.base.data();
  return view;
}

template <typename A, int W, typename I>
IndexView Propagator<A, W, I>::indexing_() const {
  // IndexGroup is the layout of the 32-bit index the engine is built with;
  // narrower test indices have no raw view.
  if constexpr (!std::is_same_v<I, std::uint32_t>) {
    throw UsageError("indexing() needs 32-bit shard indices.");
  } else {
    const auto& index = shards_[0].keys.index();
    return {index.data(), index.groups()};
  }
}

template <typename A, int W, typename I>
GraphData Propagator<A, W, I>::graph_data_() const {
  take_graph_back();
  GraphData data;
  for (const LayerInfo& layer : layers_) {
    data.parameter.push_back(layer.parameter);
    data.gate.push_back(layer.gate);
    data.frequency.push_back(layer.frequency);
  }
  return data;
}

}  // namespace monoprop
