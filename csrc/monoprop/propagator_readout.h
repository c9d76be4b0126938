// Propagator: the operand after a replay: contracted into the base
// coefficients, read out as terms, or at given terms. Included by
// propagator.h only.
#pragma once

namespace monoprop {

template <typename A, int W, typename I>
std::vector<double> Propagator<A, W, I>::contract(const std::vector<double>& parameters, bool inplace) {
  check_valid();
  check_parameters(parameters, n_parameters_);
  return guarded("contract_partially", [&] {
    std::vector<Dropped> dropped(shards_.size());
    replay_all(parameters, dropped.data());
    // The shards' blocks in ascending shard order, each the coefficient of
    // the term its held key stands for.
    std::vector<double> out;
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      const Column<double>& c = replayer_.replayed(s);
      for (std::size_t i = 0; i < c.size(); ++i) out.push_back(frame_.forward(shards_[s].keys.key(i)).sign * c[i]);
    }
    if (!inplace) return out;
    maybe_fault("contract");
    replayer_.drop_layout();  // of the graph being folded
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      Shard& shard = shards_[s];
      shard.base = replayer_.replayed(s);
      shard.graph.clear();
      shard.n_base = shard.keys.size();
    }
    start_frame_ = frame_;
    for (const Dropped& part : dropped) held_ += part;  // what the folded graph dropped stays in the bound
    layers_.clear();
    reach_horizon_ = 0;
    remote_.clear();
    remote_entries_ = entries_ = 0;
    n_parameters_ = 0;
    n_gates_ = 0;
    ++generation_;
    return out;
  });
}

template <typename A, int W, typename I>
TermList Propagator<A, W, I>::evolved_terms(const std::vector<double>& parameters, double atol) const {
  check_valid();
  check_parameters(parameters, n_parameters_);
  guarded("evaluate", [&] { replay_all(parameters); });
  TermList out;
  auto emit = [&](const Key& key, double h) {
    for (std::uint32_t s = 0; s < static_cast<std::uint32_t>(2 * config_.num_modes); ++s)
      if (key.test(s)) out.slots.push_back(s);
    out.offsets.push_back(out.slots.size());
    out.coefficients.push_back(h);
  };
  // The identity term is replicated: rank 0 reports it, so that the ranks' terms add up. A
  // Heisenberg noise layer (amplitude damping) can add a held identity term: it is reported
  // with the replicated one, summed over the ranks.
  double identity = 0.0;
  if (!schrodinger()) {
    const Key none{};
    if (held_here(none)) {
      const auto s = static_cast<std::size_t>(owner(none.hash()));
      if (const auto slot = shards_[s].keys.find(none); slot != Keys::kEmpty) identity = replayer_.replayed(s)[slot];
    }
    config_.comm.sum(&identity, 1);
    identity += core_;
  }
  if (!schrodinger() && rank_ == 0 && (atol == 0.0 || std::abs(identity) >= atol)) emit(Key{}, identity);
  for (std::size_t s = 0; s < shards_.size(); ++s) {  // each shard decoded with its own index
    const Shard& shard = shards_[s];
    const Column<double>& c = replayer_.replayed(s);
    for (std::size_t i = 0; i < c.size(); ++i)
      if ((atol == 0.0 || std::abs(c[i]) >= atol) && (schrodinger() || !shard.keys.key(i).is_identity())) {
        const auto [key, sign] = frame_.forward(shard.keys.key(i));
        emit(key, sign * c[i]);
      }
  }
  return out;
}

template <typename A, int W, typename I>
std::vector<double> Propagator<A, W, I>::coefficients_of(const std::vector<Term>& terms,
                                                         const std::vector<double>& parameters) const {
  check_valid();
  std::vector<Key> keys;
  for (const Term& t : terms) keys.push_back(key_of(t.slots));
  check_parameters(parameters, n_parameters_);
  guarded("evaluate", [&] { replay_all(parameters); });
  // Each term from the rank that holds it; the sum over ranks adds zeros only.
  std::vector<double> out;
  for (const Key& term : keys) {
    // The identity's replicated part comes from rank 0; a held identity adds to it.
    const double core = !schrodinger() && term.is_identity() && rank_ == 0 ? core_ : 0.0;
    const auto [key, sign] = frame_.backward(term);  // the key that stands for the term
    if (!held_here(key)) {
      out.push_back(core);
      continue;
    }
    const auto s = static_cast<std::size_t>(owner(key.hash()));
    const auto slot = shards_[s].keys.find(key);
    out.push_back(core + (slot == Keys::kEmpty ? 0.0 : sign * replayer_.replayed(s)[slot]));
  }
  config_.comm.sum(out.data(), out.size());
  return out;
}

}  // namespace monoprop
