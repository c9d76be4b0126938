// Definitions of Propagator<Algebra, W>; included by propagator.h only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <type_traits>

namespace monoprop {

// Length of the parameter vector a per-layer mapping reads.
inline std::int32_t mapped_count(const std::vector<std::int32_t>& mapping) {
  std::int32_t top = -1;
  for (const std::int32_t p : mapping) top = std::max(top, p);
  return top + 1;
}

template <typename A, int W, typename I>
Propagator<A, W, I>::Propagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis)
    : MonomialPropagator(std::move(config), std::move(basis_change), logical_num_modes, basis),
      shards_(static_cast<std::size_t>(num_threads_)),
      routing_((config_.comm.check_thread("construction"), config_.comm), num_threads_, 2 * config_.num_modes),
      rank_(config_.comm.rank()) {
  release_exchange();
  const int n = config_.num_modes;
  for (const int mode : config_.occupied) {
    if (mode < 0 || mode >= n)
      throw ArgumentError("occupied mode " + std::to_string(mode) + " is out of range 0.." + std::to_string(n - 1) +
                          ".");
    occupied_.set(2 * static_cast<std::uint32_t>(mode));
  }
  std::vector<std::pair<Key, double>> terms;
  for (const Term& t : config_.initial_operator) terms.emplace_back(key_of(t.slots), t.coefficient);

  if (schrodinger()) expand_reference_state((std::min(*config_.schrodinger_cutoff, 2 * n) + 1) / 2);
  for (const auto& [key, h] : terms) {
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
void Propagator<A, W, I>::accumulate(Keys& keys, std::vector<double>& coefficients, const Key& key, double h) {
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
  // Key columns, lengths, coefficient and about two index entries per term.
  const double bytes = count * (sizeof(Key) + sizeof(std::uint16_t) + sizeof(double) + 16.0);
  constexpr double kLimit = double(std::size_t{1} << 33);  // 8 GiB
  if (bytes > kLimit)
    throw std::runtime_error("the Schrodinger initial state expansion would hold about " +
                             std::to_string(static_cast<long long>(count)) + " terms (about " +
                             std::to_string(static_cast<long long>(bytes / (1 << 30))) +
                             " GiB, limit 8 GiB); lower schrodinger_cutoff.");
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
    if (layer.parameter < 0 || layer.parameter >= circuit.n_parameters)
      throw ArgumentError("layer parameter index " + std::to_string(layer.parameter) + " is outside 0.." +
                          std::to_string(circuit.n_parameters - 1) + ".");
    if (layer.gate < 0 || layer.gate >= circuit.n_gates)
      throw ArgumentError("layer gate index " + std::to_string(layer.gate) + " is outside 0.." +
                          std::to_string(circuit.n_gates - 1) + ".");
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::check_parameters(const std::vector<double>& parameters, std::int32_t expected) const {
  if (static_cast<std::int64_t>(parameters.size()) != expected)
    throw UsageError("Invalid functional call. Parameter length " + std::to_string(parameters.size()) +
                     " does not match the expected number of parameters " + std::to_string(expected) + ".");
}

// Argument checks of an evaluation; returns the per-layer parameter indices
// (graph order) of `mapping`, or nothing to use the graph's own.
template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::checked_evaluation(const std::vector<double>& parameters,
                                                                  const std::vector<std::int32_t>* mapping) const {
  check_valid();
  std::vector<std::int32_t> layer_parameters;
  if (mapping) layer_parameters = graph_order(*mapping);
  check_parameters(parameters, mapping ? mapped_count(*mapping) : n_parameters_);
  return layer_parameters;
}

template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::graph_order(const std::vector<std::int32_t>& mapping) const {
  if (mapping.size() != layers().size())
    throw ArgumentError("a per-layer mapping needs " + std::to_string(layers().size()) + " entries; got " +
                        std::to_string(mapping.size()) + ".");
  for (const std::int32_t p : mapping)
    if (p < 0) throw ArgumentError("parameter mapping entries must be >= 0; got " + std::to_string(p) + ".");
  std::vector<std::int32_t> out(mapping);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W, typename I>
std::vector<const LayerSpec*> Propagator<A, W, I>::application_order(const CircuitSpec& circuit) const {
  std::vector<const LayerSpec*> order;
  for (const LayerSpec& layer : circuit.layers) order.push_back(&layer);
  // Heisenberg: the last gate acts on the observable first.
  if (!schrodinger()) std::reverse(order.begin(), order.end());
  return order;
}

template <typename A, int W, typename I>
bool Propagator<A, W, I>::keep_partner(const Key& partner, bool informed, double moved) const {
  const Truncation& t = config_.truncation;
  const int measure = t.type == CutoffType::Length ? partner.length() : partner.support();
  bool keep = measure <= t.cutoff || partner.fully_paired();
  if (informed) {
    if (!keep && t.upper_atol && moved > *t.upper_atol) keep = true;
    if (t.lower_atol && moved < *t.lower_atol) keep = false;
  }
  return keep;
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::apply_layer(int t, Team& team, const Key& generator, double phi, double** c,
                                      GraphLayer* record, RemoteLayer& remote, std::optional<int> k) {
  if (t == 0) {  // what the last layer shared with other ranks is recorded by now
    remote.blocks.clear();
    remote.entries = 0;
  }
  const Gen gen(generator);
  const double sn = std::sin(phi);
  const bool informed = c != nullptr;
  Shard& me = shards_[t];
  Keys& keys = me.keys;
  const std::size_t n = keys.size();
  GraphLayer& L = me.scratch;
  L.clear_entries();
  me.births.clear();
  me.birth_signs.clear();
  for (auto& out : me.outbox) out.clear();
  for (auto& out : me.remote_out) out.clear();
  // Linear routing sends every lookup of a layer to one peer (or none);
  // splitmix routing may send to any rank.
  const std::vector<int> peers = peers_of(generator);
  const bool linear = routing_.linear();
  const int peer = linear && !peers.empty() ? peers[0] : rank_;

  // 1. Scan: classify every anticommuting term before anything changes.
  // Terms go in blocks: first the partners' hashes (and a prefetch of their
  // index lines), then the lookups, so the cache misses overlap. A partner
  // owned by another shard is posted to that shard's buffer instead.
  constexpr std::size_t kBlock = W <= 4 ? 256 : 64;  // enough misses in flight; bounded stack
  struct Candidate {
    Key partner;
    std::uint64_t hash;
    std::uint32_t slot;
    I match;  // first slot whose index tag matches the partner's
    std::int8_t sign;
  };
  Candidate block[kBlock];
  std::uint32_t hits[kBlock];
  // The scan reads the generator's words straight from the store's columns.
  const std::uint64_t* columns[W];
  for (int w = 0; w < gen.n_active; ++w) columns[w] = keys.column(gen.active[w]);
  const std::uint16_t* lengths = keys.lengths();
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
      if (k && keys.length(hits[e]) > *k) continue;
      const Key p = keys.key(hits[e]);
      Candidate& cand = block[m];
      cand.partner = p ^ generator;
      cand.hash = cand.partner.hash();
      cand.slot = hits[e];
      cand.sign = static_cast<std::int8_t>(A::anticommuting_sign(p, gen));
      const int r = peers.empty() ? rank_ : linear ? peer : routing_.spread_rank(cand.hash);
      if (r != rank_) {
        const double moved = informed ? std::abs(sn * c[t][cand.slot]) : 0.0;
        me.remote_out[r].push_back({cand.partner, cand.hash, moved, cand.slot, 0, cand.sign, Answer::Dropped});
        continue;
      }
      const int s = owner(cand.hash);
      if (s != t) {
        const double moved = informed ? std::abs(sn * c[t][cand.slot]) : 0.0;
        me.outbox[s].push_back({cand.partner, cand.hash, moved, cand.slot, 0, cand.sign, Answer::Dropped});
        continue;
      }
      keys.prefetch(cand.hash);
      ++m;
    }
    // The index lines are on their way: read them and ask for the keys they
    // point to, then compare.
    for (std::size_t e = 0; e < m; ++e) {
      block[e].match = keys.candidate(block[e].hash);
      keys.prefetch_key(block[e].match);
    }
    for (std::size_t e = 0; e < m; ++e) {
      const Candidate& cand = block[e];
      const std::uint32_t a = cand.slot;
      const auto j = keys.confirm(cand.partner, cand.hash, cand.match);
      if (j != Keys::kEmpty) {
        if (k && cand.partner.length() > *k) {  // the partner does not rotate back
          L.halves.insert(L.halves.end(), {a, j});
          L.half_signs.push_back(cand.sign);
        } else if (a < j) {  // recorded once, from its lower slot
          L.pairs.insert(L.pairs.end(), {a, j});
          L.pair_signs.push_back(cand.sign);
        }
        continue;
      }
      if (keep_partner(cand.partner, informed, informed ? std::abs(sn * c[t][a]) : 0.0)) {
        me.births.push_back(a);
        me.birth_signs.push_back(cand.sign);
      } else {
        L.cos_only.push_back(a);
      }
    }
  }
  team.sync(t);
  // The primary sends the lookups to their ranks; each thread then finds
  // the shards of its part of what arrived.
  if (!peers.empty()) {
    if (t == 0) send_lookups(peers);
    team.sync(t);
    sort_incoming(t, peers);
    team.sync(t);
  }

  // 2. Resolve what the other shards asked, in ascending source order, then
  // what other ranks asked, by ascending rank, then append the births:
  // local first, then for each source in the same order. A shard that would
  // cross its ceiling refuses before appending; the caller then rolls every
  // shard back to where the call began.
  std::size_t born = me.births.size();
  for (int src = 0; src < threads(); ++src) {
    if (src == t) continue;
    std::vector<Query>& inbox = shards_[src].outbox[t];
    for (std::size_t start = 0; start < inbox.size(); start += kBlock) {
      const std::size_t end = std::min(inbox.size(), start + kBlock);
      for (std::size_t e = start; e < end; ++e) keys.prefetch(inbox[e].hash);
      for (std::size_t e = start; e < end; ++e) {
        inbox[e].found = keys.candidate(inbox[e].hash);
        keys.prefetch_key(static_cast<I>(inbox[e].found));
      }
      for (std::size_t e = start; e < end; ++e) {
        Query& q = inbox[e];
        q.found = keys.confirm(q.partner, q.hash, static_cast<I>(q.found));
        if (q.found != Keys::kEmpty) {
          q.answer = Answer::Found;
        } else if (keep_partner(q.partner, informed, q.moved)) {
          q.answer = Answer::Born;
          ++born;
        } else {
          q.answer = Answer::Dropped;
        }
      }
    }
  }
  if (!peers.empty()) born += resolve_incoming(t, peers, informed);
  keys.reserve_for(born);
  // A birth is a rotation whose partner starts at zero in every replay:
  // recording it as a pair lets the reverse sweep invert it instead of taping it.
  for (std::size_t e = 0; e < me.births.size(); ++e) {
    const Key q = keys.key(me.births[e]) ^ generator;
    L.pairs.insert(L.pairs.end(), {me.births[e], static_cast<std::uint32_t>(keys.append(q))});
    L.pair_signs.push_back(me.birth_signs[e]);
  }
  for (int src = 0; src < threads(); ++src) {
    if (src == t) continue;
    for (Query& q : shards_[src].outbox[t])
      if (q.answer == Answer::Born) q.found = keys.append(q.partner, q.hash);
  }
  for (const int r : peers) {
    const auto* wire = reinterpret_cast<const Wire*>(exchange_.in[r].data());
    for (std::size_t e = 0; e < exchange_.incoming[r].size(); ++e) {
      Incoming& in = exchange_.incoming[r][e];
      if (in.shard == t && in.answer == Answer::Born) in.found = keys.append(wire[e].partner, in.hash);
    }
  }
  if (c) {
    me.work.resize(keys.size(), 0.0);
    c[t] = me.work.data();
  }
  team.sync(t);
  // The answers go back to the asking ranks, and both sides record the
  // entries they share in the same order.
  if (!peers.empty()) {
    if (t == 0) answer_lookups(peers, generator, k, remote);
    team.sync(t);
  }

  // 3. Answers back. A pair between two held terms is recorded once: both
  // asked, and the one whose partner holds the generator's top slot records
  // it (exactly one of M and M xor G does, and the choice splits the pairs
  // evenly between the shards). A birth or a half is recorded by the asking
  // shard, the only one that asked.
  std::uint32_t top = 0;
  for (int w = W; w-- > 0;)
    if (generator.words[w]) {
      top = static_cast<std::uint32_t>(64 * w + 63 - std::countl_zero(generator.words[w]));
      break;
    }
  for (int s = 0; s < threads(); ++s) {
    if (s == t) continue;
    const auto shard = static_cast<std::uint32_t>(s);
    for (const Query& q : me.outbox[s]) {
      if (q.answer == Answer::Dropped) {
        L.cos_only.push_back(q.slot);
      } else if (q.answer == Answer::Found && k && q.partner.length() > *k) {
        L.cross_halves.insert(L.cross_halves.end(), {q.slot, shard, q.found});
        L.cross_half_signs.push_back(q.sign);
      } else if (q.answer == Answer::Born || q.partner.test(top)) {
        L.cross_pairs.insert(L.cross_pairs.end(), {q.slot, shard, q.found});
        L.cross_pair_signs.push_back(q.sign);
      }
    }
  }
  for (const int r : peers)
    for (const Query& q : me.remote_out[r])
      if (q.answer == Answer::Dropped) L.cos_only.push_back(q.slot);
  if (c) {
    rotate_layer(L, phi, c, t);
    if (!remote.empty()) {
      if (t == 0) remote_values_.resize(2 * remote.entries);
      team.sync(t);
      double* ours = remote_values_.data();
      remote_step(t, team, remote, std::cos(phi), sn, c, ours, ours + remote.entries, 0.0);
    }
  }
  // Sized to fit: the scratch keeps its capacity for the next layer.
  if (record) record->copy_entries_from(L);
  // The next scan reads coefficients that other threads' cross entries may
  // have just written; without coefficients there is nothing to wait for.
  if (c) team.sync(t);
}

template <typename A, int W, typename I>
std::vector<int> Propagator<A, W, I>::peers_of(const Key& generator) const {
  std::vector<int> peers;
  if (routing_.ranks() == 1) return peers;
  if (routing_.linear()) {
    if (const auto shift = routing_.shift(generator.words.data(), W)) peers.push_back(rank_ ^ static_cast<int>(shift));
    return peers;
  }
  for (int r = 0; r < routing_.ranks(); ++r)
    if (r != rank_) peers.push_back(r);
  return peers;
}

// Primary: every shard's lookups for each peer, in shard order, go out; what
// the peers asked comes in.
template <typename A, int W, typename I>
void Propagator<A, W, I>::send_lookups(const std::vector<int>& peers) {
  Exchange& x = exchange_;
  std::vector<mpi::Parcel> parcels;
  for (const int r : peers) {
    std::vector<Wire>& out = x.out[r];
    out.clear();
    for (const Shard& shard : shards_)
      for (const Query& q : shard.remote_out[r]) out.push_back({q.partner, q.moved});
    parcels.push_back({r, out.data(), out.size(), nullptr, 0, &x.in[r]});
  }
  config_.comm.exchange(parcels, sizeof(Wire));
  for (const int r : peers) x.incoming[r].resize(x.in[r].size() / sizeof(Wire));
}

// Thread t hashes its part of the incoming lookups to find their shards.
template <typename A, int W, typename I>
void Propagator<A, W, I>::sort_incoming(int t, const std::vector<int>& peers) {
  for (const int r : peers) {
    const auto* wire = reinterpret_cast<const Wire*>(exchange_.in[r].data());
    std::vector<Incoming>& incoming = exchange_.incoming[r];
    const auto [lo, hi] = chunk(t, incoming.size());
    for (std::size_t e = lo; e < hi; ++e) {
      const std::uint64_t h = wire[e].partner.hash();
      incoming[e] = {h, 0, owner(h), Answer::Dropped};
    }
  }
}

// Thread t looks up the incoming lookups its shard owns; returns the births.
// In blocks, like the scan: the index lines, then the keys, then the compares.
template <typename A, int W, typename I>
std::size_t Propagator<A, W, I>::resolve_incoming(int t, const std::vector<int>& peers, bool informed) {
  const Keys& keys = shards_[t].keys;
  std::size_t born = 0;
  constexpr std::size_t kBlock = 256;
  std::size_t mine[kBlock];
  I match[kBlock];
  for (const int r : peers) {
    const auto* wire = reinterpret_cast<const Wire*>(exchange_.in[r].data());
    std::vector<Incoming>& incoming = exchange_.incoming[r];
    for (std::size_t e = 0; e < incoming.size();) {
      std::size_t m = 0;
      for (; e < incoming.size() && m < kBlock; ++e)
        if (incoming[e].shard == t) {
          keys.prefetch(incoming[e].hash);
          mine[m++] = e;
        }
      for (std::size_t i = 0; i < m; ++i) {
        match[i] = keys.candidate(incoming[mine[i]].hash);
        keys.prefetch_key(match[i]);
      }
      for (std::size_t i = 0; i < m; ++i) {
        Incoming& in = incoming[mine[i]];
        const Wire& w = wire[mine[i]];
        const auto j = keys.confirm(w.partner, in.hash, match[i]);
        if (j != Keys::kEmpty) {
          in.answer = Answer::Found;
          in.found = static_cast<std::uint32_t>(j);
        } else if (keep_partner(w.partner, informed, w.moved)) {
          in.answer = Answer::Born;
          ++born;
        }
      }
    }
  }
  return born;
}

// Primary: answers go back to the asking ranks, and the entries this rank
// shares with each peer are recorded in the canonical order (remote.h).
template <typename A, int W, typename I>
void Propagator<A, W, I>::answer_lookups(const std::vector<int>& peers, const Key& generator, std::optional<int> k,
                                         RemoteLayer& remote) {
  Exchange& x = exchange_;
  const Gen gen(generator);
  std::vector<mpi::Parcel> parcels;
  for (const int r : peers) {
    x.answers_out[r].clear();
    for (const Incoming& in : x.incoming[r]) x.answers_out[r].push_back(in.answer);
    x.answers_in[r].resize(x.out[r].size());
    parcels.push_back(
        {r, x.answers_out[r].data(), x.answers_out[r].size(), x.answers_in[r].data(), x.out[r].size(), nullptr});
  }
  config_.comm.exchange(parcels, sizeof(Answer));

  std::uint32_t top = 0;  // the generator's top slot decides who records a pair both asked about
  for (int w = W; w-- > 0;)
    if (generator.words[w]) {
      top = static_cast<std::uint32_t>(64 * w + 63 - std::countl_zero(generator.words[w]));
      break;
    }
  auto half = [&](const Key& partner) { return k && partner.length() > *k; };
  remote.blocks.clear();
  remote.entries = 0;
  for (const int r : peers) {
    RemoteBlock b;
    b.peer = r;
    b.counts = rank_ < r;
    const std::size_t most = x.out[r].size() + x.incoming[r].size();
    b.shards.reserve(most);
    b.slots.reserve(most);
    b.codes.reserve(most);
    auto add = [&](std::size_t shard, std::uint32_t slot, int code) {
      b.shards.push_back(static_cast<std::uint32_t>(shard));
      b.slots.push_back(slot);
      b.codes.push_back(static_cast<std::int8_t>(code));
    };
    auto asked = [&] {  // what this rank asked r, in shard order
      std::size_t e = 0;
      for (std::size_t s = 0; s < shards_.size(); ++s)
        for (Query& q : shards_[s].remote_out[r]) {
          q.answer = x.answers_in[r][e++];
          if (q.answer == Answer::Found && half(q.partner))
            add(s, q.slot, 2 * q.sign);
          else if (q.answer == Answer::Born || (q.answer == Answer::Found && q.partner.test(top)))
            add(s, q.slot, q.sign);
        }
    };
    auto answered = [&] {  // what r asked this rank, in r's order
      const auto* wire = reinterpret_cast<const Wire*>(x.in[r].data());
      for (std::size_t e = 0; e < x.incoming[r].size(); ++e) {
        const Incoming& in = x.incoming[r][e];
        if (in.answer == Answer::Dropped) continue;
        const Key& mine = wire[e].partner;
        const int sign = A::anticommuting_sign(mine ^ generator, gen);  // as the asker applies it
        if (in.answer == Answer::Found && half(mine))
          add(static_cast<std::size_t>(in.shard), in.found, 3 * sign);
        else if (in.answer == Answer::Born || mine.test(top))
          add(static_cast<std::size_t>(in.shard), in.found, -sign);
      }
    };
    if (rank_ < r) {
      asked();
      answered();
    } else {
      answered();
      asked();
    }
    if (b.size() == 0) continue;
    b.start = remote.entries;
    remote.entries += b.size();
    remote.blocks.push_back(std::move(b));
  }
}

// Thread t sends its part of the layer's entries, value base[shard][stride *
// slot + offset] each, the primary swaps them with the peers, and `received`
// holds the peers' values once every thread is past the last barrier.
template <typename A, int W, typename I>
void Propagator<A, W, I>::swap_with_peers(int t, Team& team, const RemoteLayer& layer, const double* const* base,
                                          std::size_t stride, std::size_t offset, double* send,
                                          double* received) const {
  const auto [lo, hi] = chunk(t, layer.entries);
  for_entries(layer, lo, hi, [&](const RemoteBlock& b, std::size_t e, std::size_t i) {
    send[i] = base[b.shards[e]][stride * b.slots[e] + offset];
  });
  team.sync(t);
  if (t == 0) {
    std::vector<mpi::Parcel> parcels;
    for (const RemoteBlock& b : layer.blocks)
      parcels.push_back({b.peer, send + b.start, b.size(), received + b.start, b.size(), nullptr});
    config_.comm.exchange(parcels, sizeof(double));
  }
  team.sync(t);
}

// Forward through a remote layer: the entries' inputs are swapped, then each
// thread updates its part.
template <typename A, int W, typename I>
void Propagator<A, W, I>::remote_step(int t, Team& team, const RemoteLayer& layer, double cs, double sn,
                                      double* const* c, double* ours, double* theirs, double pare) const {
  swap_with_peers(t, team, layer, c, 1, 0, ours, theirs);
  const auto [lo, hi] = chunk(t, layer.entries);
  remote_forward(layer, lo, hi, cs, sn, c, theirs, pare);
}

// Backwards: the entries' lambdas (odd places of the interleaved states) are swapped.
template <typename A, int W, typename I>
double Propagator<A, W, I>::remote_step_back(int t, Team& team, const RemoteLayer& layer, double cs, double sn,
                                             double* const* state, const double* ours, const double* theirs,
                                             double* swap, double pare) const {
  double* received = swap + layer.entries;
  swap_with_peers(t, team, layer, state, 2, 1, swap, received);
  const auto [lo, hi] = chunk(t, layer.entries);
  return remote_adjoint(layer, lo, hi, cs, sn, state, received, ours, theirs, pare);
}

// Applies a circuit's layers in application order, reporting progress.
template <typename A, int W, typename I>
void Propagator<A, W, I>::apply_circuit(int t, Team& team, const CircuitSpec& circuit, const std::vector<double>* theta,
                                        std::int32_t parameter_shift, std::int32_t gate_shift, double** c,
                                        Graph* record, std::vector<RemoteLayer>* remote_record, std::optional<int> k) {
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
    apply_layer(t, team, key_of(layer.slots), phi, c, rec, remote_scratch_, k);
    if (t != 0) continue;  // the primary thread records what spans ranks, and reports
    if (remote_record) remote_record->push_back(remote_scratch_);
    if (l == 0) maybe_fault(record ? "build_graph" : "propagate");
    if (progress_) progress_(l + 1, order.size(), total_size());
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::report_routing(const CircuitSpec& circuit) const {
  if (routing_reported_ || routing_.bits() == 0) return;
  std::vector<std::uint64_t> shifts;
  for (const LayerSpec& layer : circuit.layers) shifts.push_back(routing_.shift(key_of(layer.slots).words.data(), W));
  const int spanned = Routing::span(shifts);
  if (spanned >= routing_.bits()) return;
  routing_reported_ = true;
  if (rank_ == 0)
    std::fprintf(stderr,
                 "COMMROUTE: the circuit's rank shifts span %d of %d routing bits, so the terms of one rank reach "
                 "only %lld of the %d ranks and some ranks stay empty.\n",
                 spanned, routing_.bits(), 1LL << spanned, routing_.ranks());
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::release_exchange() {
  const auto ranks = static_cast<std::size_t>(routing_.ranks());
  for (Shard& shard : shards_) {
    shard.release_scratch();
    shard.outbox.resize(shards_.size());
    shard.remote_out.resize(ranks);
  }
  exchange_ = {};
  exchange_.out.resize(ranks);
  exchange_.in.resize(ranks);
  exchange_.incoming.resize(ranks);
  exchange_.answers_out.resize(ranks);
  exchange_.answers_in.resize(ranks);
  remote_scratch_ = {};
  remote_values_ = {};
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::truncate_to(const std::vector<std::size_t>& sizes) {
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    shards_[s].keys.truncate(sizes[s]);
    shards_[s].base.resize(std::min(shards_[s].base.size(), sizes[s]));
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                                    std::optional<int> k) {
  check_valid();
  check_circuit(circuit, k);
  if (!layers().empty())
    throw UsageError(
        "propagate() cannot run on a propagator with a non-empty graph; contract it first "
        "(contract_partially) or use build_graph.");
  if (static_cast<std::int64_t>(parameters.size()) != circuit.n_parameters)
    throw UsageError("The length of parameters (" + std::to_string(parameters.size()) +
                     ") must be the same as max(parameter_mapping)+1 (" + std::to_string(circuit.n_parameters) + ").");
  guarded("propagate", [&] {
    report_routing(circuit);
    std::vector<std::size_t> before;
    for (const Shard& shard : shards_) before.push_back(shard.keys.size());
    // Each shard works on a copy, committed only when every layer went through:
    // a refusal of the shard ceiling leaves the operator as it was.
    std::vector<double*> c(shards_.size());
    try {
      Team::run(threads(), [&](int t, Team& team) {
        shards_[t].work = shards_[t].base;
        c[t] = shards_[t].work.data();
        team.sync(t);
        apply_circuit(t, team, circuit, &parameters, 0, 0, c.data(), nullptr, nullptr, k);
      });
    } catch (const ShardCeilingError&) {
      truncate_to(before);
      throw;
    }
    for (Shard& shard : shards_) {
      shard.base.swap(shard.work);
      shard.n_base = shard.keys.size();
      shard.weights_stale = true;
    }
    release_exchange();
    ++generation_;
  });
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::build_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
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
    std::vector<double> old_theta;
    if (seed)
      for (std::int32_t p = 0; p < n_parameters_; ++p) old_theta.push_back((*seed)[p + old_shift]);

    std::vector<std::size_t> before;
    for (const Shard& shard : shards_) before.push_back(shard.keys.size());
    std::vector<Graph> added(shards_.size());
    std::vector<RemoteLayer> added_remote;
    std::vector<double*> c(shards_.size());
    report_routing(circuit);
    try {
      Team::run(threads(), [&](int t, Team& team) {
        // With a seed, the operand at the seed steers truncation.
        if (seed) replay(t, team, shards_[t].work, c.data(), old_theta.data(), nullptr, 0.0, nullptr);
        apply_circuit(t, team, circuit, seed ? &*seed : nullptr, new_shift, new_gate_shift, seed ? c.data() : nullptr,
                      &added[t], &added_remote, k);
      });
    } catch (const ShardCeilingError&) {
      truncate_to(before);
      throw;
    }
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      Shard& shard = shards_[s];
      for (GraphLayer& layer : shard.graph) {
        layer.parameter += old_shift;
        layer.gate += old_gate_shift;
      }
      for (GraphLayer& layer : added[s]) shard.graph.push_back(std::move(layer));
      shard.base.resize(shard.keys.size(), 0.0);
      shard.weights_stale = true;
    }
    release_exchange();
    for (RemoteLayer& layer : added_remote) {
      layer.offset = remote_entries_;
      remote_entries_ += layer.entries;
      remote_.push_back(std::move(layer));
    }
    n_parameters_ = total;
    n_gates_ += circuit.n_gates;
    ++generation_;
  });
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::replay(int t, Team& team, std::vector<double>& out, double** c, const double* theta,
                                 std::vector<double>* tape, double pare, const std::int32_t* layer_parameters) const {
  const Shard& me = shards_[t];
  out.assign(me.base.begin(), me.base.end());
  c[t] = out.data();
  double* tp = nullptr;
  if (tape) {
    std::size_t n = 0;
    for (const GraphLayer& layer : me.graph) n += tape_length(layer, pare > 0.0);
    tape->resize(n);
    tp = tape->data();
  }
  if (t == 0) {
    maybe_fault("evaluate");
    // Both sides' inputs of every remote entry: the remote part of the tape.
    ours_.resize(remote_entries_);
    theirs_.resize(remote_entries_);
  }
  team.sync(t);  // every shard's buffer is in place before cross entries reach into it
  for (std::size_t l = 0; l < me.graph.size(); ++l) {
    const GraphLayer& layer = me.graph[l];
    const double phi = layer.frequency * theta[layer_parameters ? layer_parameters[l] : layer.parameter];
    const double cs = std::cos(phi), sn = std::sin(phi);
    tp = forward_layer(layer, cs, sn, c, t, tp, pare);
    if (const RemoteLayer& remote = remote_[l]; !remote.empty())
      remote_step(t, team, remote, cs, sn, c, ours_.data() + remote.offset, theirs_.data() + remote.offset, pare);
    team.sync(t);
  }
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::replay_all(const std::vector<double>& parameters) const {
  std::vector<double*> c(shards_.size());
  Team::run(threads(), [&](int t, Team& team) {
    replay(t, team, shards_[t].c, c.data(), parameters.data(), nullptr, 0.0, nullptr);
  });
}

template <typename A, int W, typename I>
const std::vector<double>& Propagator<A, W, I>::weights(int t) const {
  const Shard& me = shards_[t];
  if (!me.weights_stale && me.weights.size() == me.keys.size()) return me.weights;
  me.weights.resize(me.keys.size());
  for (std::size_t i = 0; i < me.keys.size(); ++i) {
    if (schrodinger()) {
      const auto slot = observable_keys_.find(me.keys.key(i));
      me.weights[i] = slot == Keys::kEmpty ? 0.0 : observable_coefficients_[slot];
    } else {
      me.weights[i] = A::reference_overlap(me.keys.key(i), occupied_);
    }
  }
  me.weights_stale = false;
  return me.weights;
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::expectation_value(const std::vector<double>& parameters, double pare,
                                              const std::vector<std::int32_t>* mapping) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    std::vector<double*> c(shards_.size());
    std::vector<double> partial(shards_.size(), 0.0);
    Team::run(threads(), [&](int t, Team& team) {
      const Shard& me = shards_[t];
      replay(t, team, me.c, c.data(), parameters.data(), nullptr, pare, lp);
      const std::vector<double>& w = weights(t);
      double f = 0.0;
      for (std::size_t i = 0; i < me.c.size(); ++i) f += w[i] * me.c[i];
      partial[t] = f;
    });
    double f = 0.0;  // ascending shard order: bitwise reproducible for a fixed T
    for (const double part : partial) f += part;
    config_.comm.sum(&f, 1);  // then over the ranks
    return f + core_;
  });
}

template <typename A, int W, typename I>
double Propagator<A, W, I>::expectation_value_and_gradient(const std::vector<double>& parameters,
                                                           std::vector<double>& gradient, double pare,
                                                           const std::vector<std::int32_t>* mapping) const {
  const std::vector<std::int32_t> layer_parameters = checked_evaluation(parameters, mapping);
  const std::int32_t* lp = mapping ? layer_parameters.data() : nullptr;
  return guarded("evaluate", [&] {
    const std::size_t L = layers().size();
    std::vector<double*> c(shards_.size()), state(shards_.size());
    std::vector<double> partial(shards_.size(), 0.0);
    std::vector<std::vector<double>> dphi(shards_.size());
    Team::run(threads(), [&](int t, Team& team) {
      const Shard& me = shards_[t];
      replay(t, team, me.c, c.data(), parameters.data(), &me.tape, pare, lp);
      const std::vector<double>& w = weights(t);
      me.state.resize(2 * me.c.size());  // interleaved (c, lambda)
      double f = 0.0;
      for (std::size_t i = 0; i < me.c.size(); ++i) {
        f += w[i] * me.c[i];
        me.state[2 * i] = me.c[i];
        me.state[2 * i + 1] = w[i];
      }
      partial[t] = f;
      state[t] = me.state.data();
      dphi[t].assign(L, 0.0);
      const double* tp = me.tape.data() + me.tape.size();
      if (t == 0) {
        std::size_t widest = 0;
        for (const RemoteLayer& remote : remote_) widest = std::max(widest, remote.entries);
        swap_.resize(2 * widest);
      }
      team.sync(t);
      for (std::size_t l = L; l-- > 0;) {
        const GraphLayer& layer = me.graph[l];
        const double phi = layer.frequency * parameters[lp ? lp[l] : layer.parameter];
        const double cs = std::cos(phi), sn = std::sin(phi);
        dphi[t][l] = adjoint_layer(layer, cs, sn, state.data(), t, tp, pare);
        if (const RemoteLayer& remote = remote_[l]; !remote.empty())
          dphi[t][l] += remote_step_back(t, team, remote, cs, sn, state.data(), ours_.data() + remote.offset,
                                         theirs_.data() + remote.offset, swap_.data(), pare);
        team.sync(t);
      }
    });
    // Folds in ascending shard order: bitwise reproducible for a fixed T.
    gradient.assign(parameters.size(), 0.0);
    for (std::size_t l = L; l-- > 0;) {
      const GraphLayer& layer = layers()[l];
      double d = dphi[0][l];
      for (std::size_t s = 1; s < shards_.size(); ++s) d += dphi[s][l];
      gradient[lp ? lp[l] : layer.parameter] += layer.frequency * d;
    }
    double f = 0.0;
    for (const double part : partial) f += part;
    // Then over the ranks, in one reduction.
    gradient.push_back(f);
    config_.comm.sum(gradient.data(), gradient.size());
    f = gradient.back();
    gradient.pop_back();
    return f + core_;
  });
}

template <typename A, int W, typename I>
std::vector<double> Propagator<A, W, I>::contract(const std::vector<double>& parameters, bool inplace) {
  check_valid();
  check_parameters(parameters, n_parameters_);
  return guarded("contract_partially", [&] {
    replay_all(parameters);
    // The shards' blocks in ascending shard order.
    std::vector<double> out;
    for (const Shard& shard : shards_) out.insert(out.end(), shard.c.begin(), shard.c.end());
    if (!inplace) return out;
    maybe_fault("contract");
    for (Shard& shard : shards_) {
      shard.base = shard.c;
      shard.graph.clear();
      shard.n_base = shard.keys.size();
    }
    remote_.clear();
    remote_entries_ = 0;
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
  // The identity term is replicated: rank 0 reports it, so that the ranks' terms add up.
  if (!schrodinger() && rank_ == 0 && (atol == 0.0 || std::abs(core_) >= atol)) emit(Key{}, core_);
  for (const Shard& shard : shards_)  // each shard decoded with its own index
    for (std::size_t i = 0; i < shard.c.size(); ++i)
      if (atol == 0.0 || std::abs(shard.c[i]) >= atol) emit(shard.keys.key(i), shard.c[i]);
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
  for (const Key& key : keys) {
    if (!schrodinger() && key.is_identity()) {
      out.push_back(rank_ == 0 ? core_ : 0.0);
      continue;
    }
    if (!held_here(key)) {
      out.push_back(0.0);
      continue;
    }
    const Shard& shard = shards_[owner(key.hash())];
    const auto slot = shard.keys.find(key);
    out.push_back(slot == Keys::kEmpty ? 0.0 : shard.c[slot]);
  }
  config_.comm.sum(out.data(), out.size());
  return out;
}

template <typename A, int W, typename I>
std::size_t Propagator<A, W, I>::apply_initial_operator_(const std::vector<Term>& terms) {
  std::vector<std::pair<Key, double>> keyed;
  for (const Term& t : terms) keyed.emplace_back(key_of(t.slots), t.coefficient);
  if (schrodinger()) {
    Keys keys;
    std::vector<double> coefficients;
    for (const auto& [key, h] : keyed) accumulate(keys, coefficients, key, h);
    observable_keys_ = std::move(keys);
    observable_coefficients_ = std::move(coefficients);
    for (Shard& shard : shards_) shard.weights_stale = true;
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
    const auto& [key, h] = keyed[i];
    if (key.is_identity()) {
      core = h;
      continue;
    }
    if (!held_here(key)) continue;
    const int s = owner(key.hash());
    const auto slot = shards_[s].keys.find(key);
    if (slot == Keys::kEmpty || slot >= shards_[s].n_base) {
      missing = i;
      break;
    }
    slots[s].emplace_back(slot, h);
    ++held;
  }
  std::uint64_t first = ~missing;  // the maximum of the complements is the minimum
  config_.comm.max(&first, 1);
  if (first != 0)
    throw UsageError("Operator term " + describe(keyed[static_cast<std::size_t>(~first)].first) +
                     " not found in the operator.");
  Team::run(threads(), [&](int t, Team&) {
    Shard& me = shards_[t];
    std::fill(me.base.begin(), me.base.end(), 0.0);
    if (t == 0) maybe_fault("update_initial_operator");
    for (const auto& [slot, h] : slots[t]) me.base[slot] = h;
  });
  if (core) core_ = *core;
  ++generation_;
  return held;
}

template <typename A, int W, typename I>
std::pair<std::size_t, std::size_t> Propagator<A, W, I>::graph_size() const {
  check_valid();
  std::size_t cos_only = 0, cycles = 0;
  for (const Shard& shard : shards_)
    for (const GraphLayer& layer : shard.graph) {
      cos_only += layer.cos_only.size();
      cycles += layer.n_rotations();
    }
  // An entry that spans two ranks counts on the lower one: the ranks' sizes add up.
  for (const RemoteLayer& layer : remote_)
    for (const RemoteBlock& b : layer.blocks)
      if (b.counts) cycles += b.size();
  return {cos_only, cycles};
}

// Graph layers are stored in application order; the circuit's order (the one
// parameter_mapping speaks in) is the reverse in the Heisenberg picture.
template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::parameter_mapping() const {
  check_valid();
  std::vector<std::int32_t> out;
  for (const GraphLayer& layer : layers()) out.push_back(layer.parameter);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W, typename I>
std::vector<std::int32_t> Propagator<A, W, I>::layer_gates() const {
  check_valid();
  std::vector<std::int32_t> out;
  for (const GraphLayer& layer : layers()) out.push_back(layer.gate);
  if (!schrodinger()) std::reverse(out.begin(), out.end());
  return out;
}

template <typename A, int W, typename I>
void Propagator<A, W, I>::set_parameter_mapping(const std::vector<std::int32_t>& per_layer) {
  check_valid();
  const std::size_t L = layers().size();
  if (per_layer.size() != L)
    throw ArgumentError("parameter_mapping has " + std::to_string(per_layer.size()) + " entries; expected " +
                        std::to_string(L) + " (per graph layer).");
  std::int32_t top = -1;
  for (const std::int32_t p : per_layer) {
    if (p < 0) throw ArgumentError("parameter_mapping indices must be non-negative.");
    top = std::max(top, p);
  }
  for (Shard& shard : shards_)
    for (std::size_t i = 0; i < L; ++i) shard.graph[schrodinger() ? i : L - 1 - i].parameter = per_layer[i];
  n_parameters_ = top + 1;
}

template <typename A, int W, typename I>
MemoryUsage Propagator<A, W, I>::memory() const {
  check_valid();
  MemoryUsage m;
  for (const Shard& shard : shards_) {
    m.terms += shard.keys.key_bytes() + shard.base.capacity() * sizeof(double);
    m.index += shard.keys.index_bytes();
    for (const GraphLayer& layer : shard.graph) m.graph += layer.bytes();
    std::size_t queries = 0;
    for (const auto& out : shard.outbox) queries += out.capacity();
    m.buffers += (shard.c.capacity() + shard.tape.capacity() + shard.state.capacity() + shard.weights.capacity() +
                  shard.work.capacity()) *
                     sizeof(double) +
                 shard.scratch.bytes() + shard.births.capacity() * 4 + shard.birth_signs.capacity() +
                 queries * sizeof(Query);
  }
  for (const RemoteLayer& layer : remote_) m.graph += layer.bytes();
  m.buffers += (ours_.capacity() + theirs_.capacity() + swap_.capacity()) * sizeof(double);
  m.buffers += observable_keys_.key_bytes() + observable_keys_.index_bytes();
  return m;
}

template <typename A, int W, typename I>
OperatorView Propagator<A, W, I>::mp_op_() const {
  const Shard& shard = shards_[0];
  OperatorView view;
  view.words = W;
  view.size = shard.keys.size();
  for (int w = 0; w < W; ++w) view.columns.push_back(shard.keys.column(w));
  view.lengths = shard.keys.lengths();
  view.coefficients = shard.base.data();
  return view;
}

template <typename A, int W, typename I>
IndexView Propagator<A, W, I>::indexing_() const {
  // IndexEntry is the layout of the 32-bit index the engine is built with;
  // narrower test indices have no raw view.
  if constexpr (!std::is_same_v<I, std::uint32_t>) throw UsageError("indexing() needs 32-bit shard indices.");
  const Keys& keys = shards_[0].keys;
  return {static_cast<const IndexEntry*>(keys.table_data()), keys.table_capacity()};
}

template <typename A, int W, typename I>
GraphData Propagator<A, W, I>::graph_data_() const {
  GraphData data;
  for (const GraphLayer& layer : layers()) {
    data.parameter.push_back(layer.parameter);
    data.gate.push_back(layer.gate);
    data.frequency.push_back(layer.frequency);
  }
  return data;
}

}  // namespace monoprop
