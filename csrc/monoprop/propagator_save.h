// Propagator: its whole state as named arrays (saved_state.h); the graph's
// arrays are snapshot.h's, and the propagator rebuilt from them is
// propagator_restore.h. Included by propagator.h only.
//
// What is saved is what the operations read: per shard the keys in slot
// order (the graph names slots), the coefficients a replay starts from and
// the graph's layers as their encoded bytes and sections; the layers'
// parameters and noise; the Clifford frames; the Schrodinger observable; the
// settings and counters; on several ranks, each rank's part, with the graph
// entries it shares with each peer. What can be derived is rebuilt: the hash index and
// bit columns of every store, the entry counts, the replay caches. A load
// checks what it reads against itself (every key in the shard that owns it,
// no key twice, every graph entry inside its bytes and naming held slots),
// so a damaged save is refused, never replayed out of bounds.
#pragma once

#include <cmath>
#include <string>

#include "saved_state.h"
#include "snapshot.h"

namespace monoprop {

template <typename A, int W, typename I>
SavedState Propagator<A, W, I>::save_state() const {
  take_graph_back();
  return guarded("save", [&] {
    SavedState out;
    out.put_scalar("family", static_cast<std::uint8_t>(A::family));
    out.put_scalar("num_modes", static_cast<std::int32_t>(config_.num_modes));
    out.put_scalar("threads", static_cast<std::int32_t>(num_threads_));
    out.put_scalar("logical_num_modes", static_cast<std::int32_t>(logical_num_modes_));
    out.put_scalar("basis", static_cast<std::uint8_t>(basis_));
    out.put_scalar("schrodinger_cutoff", static_cast<std::int32_t>(config_.schrodinger_cutoff.value_or(-1)));
    const Truncation& t = config_.truncation;
    out.put_scalar("cutoff", t.cutoff);
    out.put_scalar("cutoff_type", static_cast<std::uint8_t>(t.type));
    // NaN stands for "not set": a set tolerance is never NaN.
    out.put_scalar("lower_atol", t.lower_atol.value_or(std::nan("")));
    out.put_scalar("upper_atol", t.upper_atol.value_or(std::nan("")));
    out.put_scalar("max_error", t.max_error.value_or(std::nan("")));
    out.put_scalar("rigorous", static_cast<std::uint8_t>(t.rigorous));
    std::vector<std::int32_t> occupied(config_.occupied.begin(), config_.occupied.end());
    out.put("occupied", occupied);
    std::vector<std::uint32_t> change_slots;
    std::vector<std::uint64_t> change_ends;
    for (const auto& image : basis_change_) {
      change_slots.insert(change_slots.end(), image.begin(), image.end());
      change_ends.push_back(change_slots.size());
    }
    out.put("basis_change_slots", change_slots);
    out.put("basis_change_ends", change_ends);
    out.put_scalar("n_parameters", n_parameters_);
    out.put_scalar("n_gates", n_gates_);
    out.put_scalar("core", core_);
    out.put_scalar("observable_norm", observable_norm_);
    out.put_scalar("dropped.sum", held_.sum);
    out.put_scalar("dropped.squares", held_.squares);
    out.put_scalar("dropped.unbounded", static_cast<std::uint8_t>(unbounded_));
    out.put_scalar("dropped.plain_sum", held_.plain_sum);
    out.put_scalar("dropped.plain_squares", held_.plain_squares);
    out.put_scalar("generation", generation_);
    // Each rank saves its own part: its terms, and the entries it shares with
    // other ranks, which only this routing places alike.
    out.put_scalar("rank", static_cast<std::int32_t>(rank_));
    out.put_scalar("ranks", static_cast<std::int32_t>(routing_.ranks()));
    out.put_scalar("routing.kind", static_cast<std::uint8_t>(routing_.kind()));
    out.put("routing.basis", routing_.basis());

    // One array a field of the layers.
    auto column = [&](const char* name, auto field) {
      std::vector<decltype(field(LayerInfo{}))> values;
      for (const LayerInfo& layer : layers_) values.push_back(field(layer));
      out.put(name, values);
    };
    column("layer.parameter", [](const LayerInfo& x) { return x.parameter; });
    column("layer.gate", [](const LayerInfo& x) { return x.gate; });
    column("layer.frequency", [](const LayerInfo& x) { return x.frequency; });
    column("layer.noise_kind", [](const LayerInfo& x) { return static_cast<std::uint8_t>(x.noise.kind); });
    column("layer.noise_form", [](const LayerInfo& x) { return static_cast<std::uint8_t>(x.noise.form); });
    column("layer.noise_patterns", [](const LayerInfo& x) { return x.noise.patterns; });
    column("layer.noise_alpha", [](const LayerInfo& x) { return x.noise.alpha; });
    column("layer.noise_beta", [](const LayerInfo& x) { return x.noise.beta; });
    column("layer.noise_lowest", [](const LayerInfo& x) { return x.noise.lowest; });
    column("layer.noise_highest", [](const LayerInfo& x) { return x.noise.highest; });
    out.put_scalar("reach.horizon", static_cast<std::uint64_t>(reach_horizon_));
    out.put_scalar("budget.spent", budget_spent_);
    out.put_scalar("budget.layers", static_cast<std::uint64_t>(budget_layers_));
    column("layer.reach", [](const LayerInfo& x) { return x.reach; });
    column("layer.stale", [](const LayerInfo& x) { return static_cast<std::uint8_t>(x.stale); });

    for (std::size_t s = 0; s < shards_.size(); ++s) {
      const Shard& shard = shards_[s];
      const std::size_t n = shard.keys.size();
      out.put(state_io::shard_name(s, "keys"), n ? shard.keys.row(0) : nullptr, {n, std::size_t{W}});
      out.put(state_io::shard_name(s, "base"), shard.base.data(), {shard.base.size()});
      out.put_scalar(state_io::shard_name(s, "n_base"), static_cast<std::uint64_t>(shard.n_base));
      save_graph(out, s, shard.graph);
    }

    auto put_frame = [&](const std::string& name, const Frame& frame) {
      for (const bool forward : {true, false}) {
        const auto& table = forward ? frame.forward_table() : frame.backward_table();
        std::vector<std::uint64_t> keys;
        std::vector<std::int8_t> signs;
        for (const auto& image : table) {
          keys.insert(keys.end(), image.key.words.begin(), image.key.words.end());
          signs.push_back(static_cast<std::int8_t>(image.sign));
        }
        const std::string side = name + (forward ? ".forward" : ".backward");
        out.put(side + "_keys", keys.data(), {table.size(), std::size_t{W}});
        out.put(side + "_signs", signs);
      }
    };
    save_remote(out, remote_);
    put_frame("frame", frame_);
    put_frame("start_frame", start_frame_);
    const std::size_t m = observable_keys_.size();
    out.put("observable.keys", m ? observable_keys_.row(0) : nullptr, {m, std::size_t{W}});
    out.put("observable.coefficients", observable_coefficients_.data(), {observable_coefficients_.size()});
    return out;
  });
}

}  // namespace monoprop
