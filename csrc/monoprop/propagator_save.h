// Propagator: its whole state as named arrays (saved_state.h), and the
// checks a load makes of what it reads (the propagator rebuilt from them is
// propagator_restore.h). Included by propagator.h only.
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
#include <exception>
#include <string>

#include "saved_state.h"

namespace monoprop {

namespace state_io {

// Words of a saved Section (count, offset, length, partners, base, width)
// and of a saved Part (shard, then births, pairs and halves).
inline constexpr std::size_t kSectionWords = 6, kPartWords = 1 + 3 * kSectionWords;

inline std::string shard_name(std::size_t s, const char* what) { return "shard" + std::to_string(s) + "." + what; }

[[noreturn]] inline void damaged(const std::string& what) { throw ArgumentError("the save is damaged: " + what + "."); }

// Checks that a section's entries decode inside their bytes, in ascending a
// below `own`, with partners below `other`: `kind` 0 for cos entries, 1 for
// births (partners base, base + 1, ...), 2 for pairs and halves.
inline void check_section(const ShardLayer& layer, const Section& s, int kind, std::size_t own, std::size_t other,
                          const std::string& where) {
  const std::size_t end = layer.bytes.size() - kPadding;
  const std::size_t stop = std::size_t{s.offset} + s.length;
  if (s.offset > s.partners || s.partners > stop || stop > end) damaged(where + " has a section outside its bytes");
  if (s.width > 4 || (kind == 2 && s.count > 0 && s.width == 0)) damaged(where + " has a partner width above 4");
  if (std::size_t{s.width} * s.count != stop - s.partners) damaged(where + " has partners that do not fit");
  if (kind == 1 && std::size_t{s.base} + s.count > other) damaged(where + " has births past the partner shard");
  std::size_t p = s.offset;
  std::uint32_t a = 0;  // wraps like SectionReader's: entries need not ascend
  for (std::uint32_t k = 0; k < s.count; ++k) {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (p >= s.partners || shift > 35) damaged(where + " has an entry that does not decode");
      const std::uint8_t byte = layer.bytes[p++];
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) break;
    }
    a += static_cast<std::uint32_t>(kind == 0 ? v : v >> 1);
    if (a >= own) damaged(where + " names a slot its shard does not hold");
    if (kind == 2) {
      std::uint32_t b = 0;
      for (int i = 0; i < s.width; ++i)
        b |= std::uint32_t{layer.bytes[s.partners + std::size_t{s.width} * k + static_cast<std::size_t>(i)]} << (8 * i);
      if (b >= other) damaged(where + " names a partner its shard does not hold");
    }
  }
  if (p != s.partners) damaged(where + " has bytes its entries do not account for");
}

// After a step that may have failed on some ranks only (`error` set there),
// every rank learns of it before it goes on into a collective that the
// failed ranks left: those rethrow their error, the others throw naming the
// lowest failed rank. On one rank it only rethrows.
inline void agree(const mpi::Comm& comm, std::exception_ptr error) {
  if (comm.distributed()) {
    const auto ranks = static_cast<std::uint64_t>(comm.size());
    std::uint64_t lowest = error ? ranks - static_cast<std::uint64_t>(comm.rank()) : 0;  // max: the lowest rank
    comm.max(&lowest, 1);
    if (lowest && !error)
      throw ArgumentError("the save's part for rank " + std::to_string(ranks - lowest) +
                          " could not be loaded (that rank says why); nothing was loaded.");
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace state_io

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

    const std::size_t L = layers_.size();
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
      std::vector<std::uint8_t> bytes;
      std::vector<std::uint64_t> byte_ends, part_ends;
      std::vector<std::uint32_t> cos, parts;
      auto section = [](std::vector<std::uint32_t>& to, const Section& x) {
        to.insert(to.end(), {x.count, x.offset, x.length, x.partners, x.base, std::uint32_t{x.width}});
      };
      for (const ShardLayer& layer : shard.graph) {
        bytes.insert(bytes.end(), layer.bytes.begin(), layer.bytes.end());
        byte_ends.push_back(bytes.size());
        section(cos, layer.cos);
        for (const Part& part : layer.parts) {
          parts.push_back(part.shard);
          section(parts, part.births);
          section(parts, part.pairs);
          section(parts, part.halves);
        }
        part_ends.push_back(parts.size() / state_io::kPartWords);
      }
      out.put(state_io::shard_name(s, "graph_bytes"), bytes);
      out.put(state_io::shard_name(s, "graph_byte_ends"), byte_ends);
      out.put(state_io::shard_name(s, "graph_cos"), cos.data(), {L, state_io::kSectionWords});
      out.put(state_io::shard_name(s, "graph_part_ends"), part_ends);
      out.put(state_io::shard_name(s, "graph_parts"), parts.data(),
              {parts.size() / state_io::kPartWords, state_io::kPartWords});
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
    // Per layer its blocks' end; per block its peer, whether this rank counts
    // it, and its entries' end; per entry its shard, slot and code.
    std::vector<std::uint64_t> layer_blocks, entry_ends;
    std::vector<std::int32_t> peers;
    std::vector<std::uint8_t> counts;
    std::vector<std::uint32_t> remote_shards, remote_slots;
    std::vector<std::int8_t> codes;
    for (const RemoteLayer& layer : remote_) {
      for (const RemoteBlock& b : layer.blocks) {
        peers.push_back(b.peer);
        counts.push_back(b.counts);
        remote_shards.insert(remote_shards.end(), b.shards.begin(), b.shards.end());
        remote_slots.insert(remote_slots.end(), b.slots.begin(), b.slots.end());
        codes.insert(codes.end(), b.codes.begin(), b.codes.end());
        entry_ends.push_back(codes.size());
      }
      layer_blocks.push_back(peers.size());
    }
    out.put("remote.layer_block_ends", layer_blocks);
    out.put("remote.block_peer", peers);
    out.put("remote.block_counts", counts);
    out.put("remote.block_entry_ends", entry_ends);
    out.put("remote.shards", remote_shards);
    out.put("remote.slots", remote_slots);
    out.put("remote.codes", codes);

    put_frame("frame", frame_);
    put_frame("start_frame", start_frame_);
    const std::size_t m = observable_keys_.size();
    out.put("observable.keys", m ? observable_keys_.row(0) : nullptr, {m, std::size_t{W}});
    out.put("observable.coefficients", observable_coefficients_.data(), {observable_coefficients_.size()});
    return out;
  });
}

}  // namespace monoprop
