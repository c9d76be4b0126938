// The engine: MonomialPropagator for one algebra and one key width.
//
// The operator is split into T shards (T = num_threads()), shard t owning the
// monomials whose splitmix hash maps to t. Every operation runs one OpenMP
// team of T threads, thread t working shard t (see team.h). A gate's partner
// M xor G of a term M usually lives in another shard: the scan routes such
// lookups through per-destination buffers, each owner resolves what it
// received in ascending source order, and the answers travel back the same
// way. Replays need no routing: a pair that spans two shards is replayed by
// one thread, which reads and writes the other shard's coefficient directly
// (no other thread touches that slot in that layer).
//
// With MPI the ranks compose with the shards (see routing.h): a rank asks the
// peer that owns a partner through the communicator, and entries that span
// two ranks are recorded on both (remote.h) and replayed by exchanging their
// inputs with the peer, layer by layer. The team's primary thread makes
// every MPI call while the others wait at a barrier.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph.h"
#include "monomial_propagator.h"
#include "remote.h"
#include "routing.h"
#include "store.h"
#include "team.h"

namespace monoprop {

// `Index` addresses a shard's terms; narrower types exist for testing the
// shard ceiling with few terms.
template <typename Algebra, int W, typename Index = std::uint32_t>
class Propagator final : public MonomialPropagator {
 public:
  using Key = Monomial<W>;
  using Keys = Store<W, Index>;
  using Gen = typename Algebra::template Generator<W>;

  Propagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis);

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
    return total_size();
  }
  // Introspection refuses on an invalid propagator like every other member.
  std::size_t graph_layers() const override {
    check_valid();
    return layers().size();
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
  std::size_t apply_initial_operator_(const std::vector<Term>& terms) override;
  OperatorView mp_op_() const override;
  IndexView indexing_() const override;
  const Graph& graph_() const override { return shards_[0].graph; }
  GraphData graph_data_() const override;

 private:
  // A lookup routed to another shard, and its answer.
  enum class Answer : std::uint8_t { Found, Born, Dropped };
  struct Query {
    Key partner;
    std::uint64_t hash;
    double moved;         // |sin phi * c_a|: what truncation would drop
    std::uint32_t slot;   // a, in the asking shard
    std::uint32_t found;  // b, in the owning shard (Found or Born)
    std::int8_t sign;
    Answer answer;
  };
  // What travels to the rank that owns a partner, and what that rank keeps
  // about each lookup it received.
  struct Wire {
    Key partner;
    double moved;
  };
  struct Incoming {
    std::uint64_t hash;
    std::uint32_t found;
    std::int32_t shard;
    Answer answer;
  };
  // A rank's side of one layer's exchange of lookups, by peer rank.
  struct Exchange {
    std::vector<std::vector<Wire>> out;
    std::vector<std::vector<std::byte>> in;  // Wire records from each peer
    std::vector<std::vector<Incoming>> incoming;
    std::vector<std::vector<Answer>> answers_out, answers_in;
  };
  // One shard: its terms and everything indexed by their slots.
  struct Shard {
    Keys keys;
    std::vector<double> base;  // coefficients a replay starts from
    Graph graph;               // in application order, layers aligned across shards
    std::size_t n_base = 0;    // terms held when the graph was empty
    std::vector<double> work;  // coefficients of a propagation at fixed parameters
    // Scratch of a layer being built: local births, and lookups by destination.
    GraphLayer scratch;
    std::vector<std::uint32_t> births;
    std::vector<std::int8_t> birth_signs;
    std::vector<std::vector<Query>> outbox;      // by destination shard
    std::vector<std::vector<Query>> remote_out;  // by destination rank (sized by release_exchange)
    // Replay buffers, kept across calls: a VQE loop replays thousands of
    // times and fresh pages would cost more than the sweep.
    mutable std::vector<double> c, tape, state, weights;
    mutable bool weights_stale = true;

    // What only a build or propagation uses, given back when it ends.
    void release_scratch() {
      work = {};
      scratch = {};
      births = {};
      birth_signs = {};
      for (auto& out : outbox) out = {};
      for (auto& out : remote_out) out = {};
    }
  };

  int threads() const { return num_threads_; }
  // The shard, within its rank, that owns a monomial of hash h.
  int owner(std::uint64_t h) const { return routing_.shard_of(h); }
  bool held_here(const Key& key) const { return routing_.rank_of(key.words.data(), W, key.hash()) == rank_; }
  // The peers a layer's lookups go to (none when they all stay on this rank).
  std::vector<int> peers_of(const Key& generator) const;
  std::size_t total_size() const;
  const Graph& layers() const { return shards_[0].graph; }  // metadata is the same in every shard
  Key key_of(const std::vector<std::uint32_t>& slots) const;
  std::string describe(const Key& key) const;
  // Adds h to the coefficient of `key` in its owner shard (construction).
  void accumulate(const Key& key, double h);
  static void accumulate(Keys& keys, std::vector<double>& coefficients, const Key& key, double h);
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

  // Team members: thread t, on shard t.
  // One layer on the current stores; `work` (each shard's `work` vector, whose
  // data pointers are `c`) is rotated when given; see graph.h for what is recorded.
  // `remote` is what the layer shares with other ranks (the primary fills it).
  void apply_layer(int t, Team& team, const Key& generator, double phi, double** c, GraphLayer* record,
                   RemoteLayer& remote, std::optional<int> only_rotate_len_k);
  // Steps of apply_layer that talk to the layer's `peers` (ascending ranks).
  void send_lookups(const std::vector<int>& peers);
  void sort_incoming(int t, const std::vector<int>& peers);
  std::size_t resolve_incoming(int t, const std::vector<int>& peers, bool informed);
  void answer_lookups(const std::vector<int>& peers, const Key& generator, std::optional<int> k, RemoteLayer& remote);
  void apply_circuit(int t, Team& team, const CircuitSpec& circuit, const std::vector<double>* theta,
                     std::int32_t parameter_shift, std::int32_t gate_shift, double** c, Graph* record,
                     std::vector<RemoteLayer>* remote_record, std::optional<int> k);
  // A remote layer forward (exchanging inputs) and backwards (exchanging
  // lambdas); `ours` and `theirs` hold both sides' inputs, `swap` 2 doubles per entry.
  void remote_step(int t, Team& team, const RemoteLayer& layer, double cs, double sn, double* const* c, double* ours,
                   double* theirs, double pare) const;
  void swap_with_peers(int t, Team& team, const RemoteLayer& layer, const double* const* base, std::size_t stride,
                       std::size_t offset, double* send, double* received) const;
  double remote_step_back(int t, Team& team, const RemoteLayer& layer, double cs, double sn, double* const* state,
                          const double* ours, const double* theirs, double* swap, double pare) const;
  // One COMMROUTE line when a circuit's rank shifts leave ranks empty.
  void report_routing(const CircuitSpec& circuit) const;
  // Replays the graph on shard buffers `out` (c per shard, pointers in `c`).
  void replay(int t, Team& team, std::vector<double>& out, double** c, const double* theta, std::vector<double>* tape,
              double pare, const std::int32_t* layer_parameters) const;
  // Replays at `parameters` into each shard's `c` buffer (a whole operation).
  void replay_all(const std::vector<double>& parameters) const;
  const std::vector<double>& weights(int t) const;
  void expand_reference_state(int max_pairs);
  // Gives back what only a build uses; sizes the per-shard and per-rank lists.
  void release_exchange();
  // Drops every term appended since `sizes` (a refused operation).
  void truncate_to(const std::vector<std::size_t>& sizes);

  // Thread t's part [lo, hi) of n entries.
  std::pair<std::size_t, std::size_t> chunk(int t, std::size_t n) const {
    const auto T = static_cast<std::size_t>(threads());
    return {n * static_cast<std::size_t>(t) / T, n * (static_cast<std::size_t>(t) + 1) / T};
  }

  std::vector<Shard> shards_;
  Routing routing_;
  int rank_ = 0;
  std::vector<RemoteLayer> remote_;  // aligned with the graph's layers
  std::size_t remote_entries_ = 0;   // over all layers of remote_
  Exchange exchange_;                // scratch of the layer being built, by peer rank
  RemoteLayer remote_scratch_;
  std::vector<double> remote_values_;                 // scratch of a rotation in a build
  mutable std::vector<double> ours_, theirs_, swap_;  // replay exchange buffers
  mutable bool routing_reported_ = false;
  double core_ = 0.0;     // Heisenberg identity term, kept apart
  Key occupied_;          // even slot of each occupied mode
  Keys observable_keys_;  // Schrodinger observable, whole on every shard's view
  std::vector<double> observable_coefficients_;
  std::int32_t n_parameters_ = 0, n_gates_ = 0;
};

}  // namespace monoprop

#include "propagator_impl.h"
