// Propagator: the propagator rebuilt from a save (propagator_save.h), with
// its terms dealt to the shards anew where the thread count changed.
// Included by propagator.h only.
#pragma once

namespace monoprop {

template <typename A, int W, typename I>
Propagator<A, W, I>::Propagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis,
                                const SavedState& state)
    : Propagator(Bare{}, std::move(config), std::move(basis_change), logical_num_modes, basis) {
  // A damaged part fails on its rank only; every rank learns of it before the
  // next collective step, so none waits for a rank that left.
  std::exception_ptr error;
  try {
    restore(state);
  } catch (...) {
    error = std::current_exception();
  }
  state_io::agree(config_.comm, error);
  if (config_.comm.distributed()) check_remote_peers(config_.comm, remote_);
}

// The settings were restored by the constructor; this fills the rest.
template <typename A, int W, typename I>
void Propagator<A, W, I>::restore(const SavedState& state) {
  const auto ranks = state.scalar<std::int32_t>("ranks");
  const auto rank = state.scalar<std::int32_t>("rank");
  if (ranks != routing_.ranks() || rank != rank_)
    throw UsageError("this part was saved by rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                     ", and this load runs as rank " + std::to_string(rank_) + " of " +
                     std::to_string(routing_.ranks()) + "; load a save on as many ranks as saved it (" +
                     std::to_string(ranks) + ").");
  if (state.scalar<std::uint8_t>("routing.kind") != static_cast<std::uint8_t>(routing_.kind()) ||
      state.get<std::uint64_t>("routing.basis") != routing_.basis())
    throw UsageError(
        "the save was made with another rank routing (monoprop_ROUTING, monoprop_ROUTING_SEED); set them as they "
        "were when it was saved.");
  const std::size_t slots = 2 * static_cast<std::size_t>(config_.num_modes);
  n_parameters_ = state.scalar<std::int32_t>("n_parameters");
  n_gates_ = state.scalar<std::int32_t>("n_gates");
  core_ = state.scalar<double>("core");
  // Saves made before the bound read it: no limit from the observable's norm.
  observable_norm_ =
      state.has("observable_norm") ? state.scalar<double>("observable_norm") : std::numeric_limits<double>::infinity();
  if (!(observable_norm_ >= 0.0)) state_io::damaged("a negative or undefined observable norm");
  if (state.has("dropped.sum")) {  // saves made before truncation_error hold none
    const double sum = state.scalar<double>("dropped.sum"), squares = state.scalar<double>("dropped.squares");
    held_ = {sum, squares, sum, squares};  // saves made before the reach of dropped branches count every branch
    if (state.has("dropped.plain_sum"))
      held_.plain_sum = state.scalar<double>("dropped.plain_sum"),
      held_.plain_squares = state.scalar<double>("dropped.plain_squares");
    unbounded_ = state.scalar<std::uint8_t>("dropped.unbounded") != 0;
  }
  generation_ = state.scalar<std::uint64_t>("generation");
  replayer_.drop_layout();  // of the graph this load replaces
  if (n_parameters_ < 0 || n_gates_ < 0) state_io::damaged("a negative parameter or gate count");

  auto parameter = state.get<std::int32_t>("layer.parameter");
  const std::size_t L = parameter.size();
  auto column = [&](auto tag, const char* name) {
    auto v = state.get<decltype(tag)>(name);
    if (v.size() != L) state_io::damaged(std::string("'") + name + "' has another length than the layers");
    return v;
  };
  const auto gate = column(std::int32_t{}, "layer.gate");
  const auto frequency = column(double{}, "layer.frequency");
  const auto kind = column(std::uint8_t{}, "layer.noise_kind");
  const auto form = column(std::uint8_t{}, "layer.noise_form");
  const auto patterns = column(std::uint16_t{}, "layer.noise_patterns");
  const auto alpha = column(double{}, "layer.noise_alpha");
  const auto beta = column(double{}, "layer.noise_beta");
  const auto lowest = column(double{}, "layer.noise_lowest");
  const auto highest = column(double{}, "layer.noise_highest");
  // Saves made before the reach of dropped branches: no dark entries, weight 1.
  const bool reached = state.has("layer.reach");
  const auto reach = reached ? column(double{}, "layer.reach") : std::vector<double>(L, 1.0);
  const auto stale = reached ? column(std::uint8_t{}, "layer.stale") : std::vector<std::uint8_t>(L, 0);
  for (std::size_t l = 0; l < L; ++l) {
    LayerInfo layer;
    layer.parameter = parameter[l];
    layer.gate = gate[l];
    layer.frequency = frequency[l];
    if (kind[l] > 3 || form[l] > 2) state_io::damaged("layer " + std::to_string(l) + " is of an unknown kind");
    layer.noise = {static_cast<LayerKind>(kind[l]),
                   static_cast<RateForm>(form[l]),
                   patterns[l],
                   alpha[l],
                   beta[l],
                   lowest[l],
                   highest[l]};
    layer.reach = reach[l];
    layer.stale = stale[l] != 0;
    if (!(layer.reach >= 0.0 && layer.reach <= 1.0))
      state_io::damaged("layer " + std::to_string(l) + " has a reach weight outside [0, 1]");
    const std::int32_t least = layer.noise.rotation() ? 0 : -1;
    if (layer.parameter < least || layer.parameter >= n_parameters_ || layer.gate < least ||
        !std::isfinite(layer.frequency))
      state_io::damaged("layer " + std::to_string(l) + " reads a parameter outside the saved parameter axis");
    layers_.push_back(layer);
  }
  reach_horizon_ = state.has("reach.horizon") ? state.scalar<std::uint64_t>("reach.horizon") : layers_.size();
  budget_spent_ = state.has("budget.spent") ? state.scalar<double>("budget.spent") : 0.0;
  budget_layers_ = state.has("budget.layers") ? state.scalar<std::uint64_t>("budget.layers") : 0;
  restore_shards(state);

  const std::vector<std::string> frames = {"frame", "start_frame"};
  for (const std::string& name : frames) {
    std::vector<typename Frame::Signed> tables[2];
    for (int side = 0; side < 2; ++side) {
      const std::string prefix = name + (side == 0 ? ".forward" : ".backward");
      const auto keys = saved_keys(state, prefix + "_keys", "'" + prefix + "'");
      const auto signs = state.get<std::int8_t>(prefix + "_signs");
      if (signs.size() != keys.size() || (!signs.empty() && signs.size() != slots))
        state_io::damaged("'" + prefix + "' is not a table of one image a slot");
      for (std::size_t i = 0; i < signs.size(); ++i) {
        if (signs[i] != 1 && signs[i] != -1) state_io::damaged("'" + prefix + "' has a sign other than +-1");
        tables[side].push_back({keys[i], signs[i]});
      }
    }
    Frame& frame = name == "frame" ? frame_ : start_frame_;
    if (!frame.restore(std::move(tables[0]), std::move(tables[1])))
      state_io::damaged("'" + name + "' is not a Clifford frame and its inverse");
  }
  for (const Key& key : saved_keys(state, "observable.keys", "the observable")) {
    if (observable_keys_.find(key) != Keys::kEmpty) state_io::damaged("the observable holds a key twice");
    observable_keys_.reserve_for(1);
    observable_keys_.append(key);
  }
  const auto h = state.get<double>("observable.coefficients");
  if (h.size() != observable_keys_.size()) state_io::damaged("the observable's keys and coefficients differ in length");
  observable_coefficients_.append(h.data(), h.size());
  for (const Shard& shard : shards_)
    for (const ShardLayer& layer : shard.graph) entries_ += layer.n_cos() + layer.n_rotations();
  release_scratch();
}

// A saved store's keys, each checked to lie below the last slot.
template <typename A, int W, typename I>
std::vector<typename Propagator<A, W, I>::Key> Propagator<A, W, I>::saved_keys(const SavedState& state,
                                                                               const std::string& name,
                                                                               const std::string& what) const {
  const auto rows = state.get<std::uint64_t>(name, W);
  const std::size_t slots = 2 * static_cast<std::size_t>(config_.num_modes);
  std::vector<Key> keys(rows.size() / W);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (std::size_t w = 0; w < W; ++w) keys[i].words[w] = rows[W * i + w];
    for (std::size_t s = slots; s < 64 * std::size_t{W}; ++s)
      if (keys[i].test(static_cast<std::uint32_t>(s))) state_io::damaged(what + " holds a key past the last slot");
  }
  return keys;
}

// The shards and their graphs. Saved with this T, every key goes back to its
// slot (the graph names slots). Saved with another T, the terms are dealt to
// the shards that own them now, those held before the graph first (n_base),
// and every graph entry is re-encoded between the slots its terms moved to.
template <typename A, int W, typename I>
void Propagator<A, W, I>::restore_shards(const SavedState& state) {
  const auto saved_threads = static_cast<std::size_t>(state.scalar<std::int32_t>("threads"));
  const bool same = saved_threads == shards_.size();
  // Splitmix routing deals terms to the ranks by T too: they would change rank.
  if (!same && routing_.ranks() > 1 && !routing_.linear())
    throw UsageError("the save was made with " + std::to_string(saved_threads) +
                     " threads a rank and splitmix rank routing, under which the thread count decides the rank of a "
                     "term; load it with monoprop_NUM_THREADS=" +
                     std::to_string(saved_threads) + ".");
  struct Saved {
    std::vector<Key> keys;
    std::vector<double> base;
    std::size_t n_base = 0;
  };
  std::vector<Saved> saved(saved_threads);
  std::vector<std::size_t> sizes;
  for (std::size_t s = 0; s < saved_threads; ++s) {
    const std::string where = "shard " + std::to_string(s);
    saved[s].keys = saved_keys(state, state_io::shard_name(s, "keys"), where);
    saved[s].base = state.get<double>(state_io::shard_name(s, "base"));
    saved[s].n_base = state.scalar<std::uint64_t>(state_io::shard_name(s, "n_base"));
    if (saved[s].base.size() != saved[s].keys.size())
      state_io::damaged(where + " has keys and coefficients of different lengths");
    if (saved[s].n_base > saved[s].keys.size()) state_io::damaged(where + " has n_base past its terms");
    sizes.push_back(saved[s].keys.size());
  }
  std::vector<Graph> graphs;
  for (std::size_t s = 0; s < saved_threads; ++s) graphs.push_back(restore_graph(state, s, sizes, layers_.size()));

  // Where each saved term goes: (shard, slot) now; first its shard, so that
  // every store is sized once.
  Moves moved(saved_threads);
  std::vector<std::size_t> counts(shards_.size());
  for (std::size_t s = 0; s < saved_threads; ++s) {
    moved[s].resize(sizes[s]);
    for (std::size_t i = 0; i < sizes[s]; ++i) {
      moved[s][i].first = static_cast<std::uint32_t>(owner(saved[s].keys[i].hash()));
      ++counts[moved[s][i].first];
    }
  }
  for (std::size_t t = 0; t < shards_.size(); ++t) {
    shards_[t].keys.reserve_for(counts[t]);
    shards_[t].base.reserve(counts[t]);
  }
  for (const bool before_graph : {true, false})
    for (std::size_t s = 0; s < saved_threads; ++s)
      for (std::size_t i = 0; i < sizes[s]; ++i) {
        if ((i < saved[s].n_base) != before_graph) continue;
        const Key& key = saved[s].keys[i];
        const std::size_t t = moved[s][i].first;
        if (!held_here(key)) state_io::damaged("shard " + std::to_string(s) + " holds a key of another rank");
        if (same && t != s) state_io::damaged("shard " + std::to_string(s) + " holds a key of another shard");
        Shard& shard = shards_[t];
        moved[s][i].second = static_cast<std::uint32_t>(shard.keys.size());
        shard.keys.append_unindexed(key);
        shard.base.push_back(saved[s].base[i]);
        if (before_graph) shard.n_base = shard.keys.size();
      }
  // Indexed in bulk; a key held twice is then found at its first slot only.
  for (Shard& shard : shards_) {
    Keys& keys = shard.keys;
    keys.index_appended(0, [&](std::size_t slot) { return keys.key(slot).hash(); });
    lookup_all(
        keys, keys.size(), [&](std::size_t slot) { return keys.key(slot); },
        [&](std::size_t slot, auto found, std::uint64_t) {
          if (found != slot) state_io::damaged("a key is held twice");
        });
  }
  if (same) {
    for (std::size_t s = 0; s < saved_threads; ++s) shards_[s].graph = std::move(graphs[s]);
  } else {
    std::vector<std::size_t> now;
    for (const Shard& shard : shards_) now.push_back(shard.keys.size());
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      std::vector<ShardLayer> layer = reshard_layer(graphs, l, moved, now);
      for (std::size_t t = 0; t < shards_.size(); ++t) shards_[t].graph.push_back(std::move(layer[t]));
    }
  }
  remote_ = restore_remote(state, sizes, moved, layers_.size(), rank_, routing_.ranks());
  for (const RemoteLayer& layer : remote_) remote_entries_ += layer.entries;
}

}  // namespace monoprop
