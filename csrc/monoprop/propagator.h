// The engine: MonomialPropagator for one algebra and one key width.
//
// This file is the class body, which declares every member of the engine
// (hence its length, past 600 lines); the members are defined by concern in
// the files it includes at its end: setup and checks (propagator_setup.h),
// terms (propagator_terms.h), a layer's phases (layer_*.h), builds
// (propagator_build.h), evaluations (propagator_evaluate.h, which hands
// the replays to the replayer, replayer.h), read-out (propagator_readout.h),
// save and load (propagator_save.h, propagator_restore.h).
//
// The operator is split into T shards (T = num_threads()), shard t owning the
// monomials whose splitmix hash maps to t. Every operation runs one OpenMP
// team of T threads, thread t working shard t (team.h; small replays run on
// the calling thread over all shards). A gate layer is three phases:
//   scan     each shard finds its terms that anticommute with the generator
//            (bit columns), decides which are active, and posts a lookup of
//            each active term's partner to the partner's owner;
//   resolve  each owner looks up what it was asked, in ascending source
//            order, and appends the births;
//   record   each shard applies and records the rotations it asked for.
// The truncation rule (truncation_rule.h) decides which terms rotate; the
// scan (layer_scan.h), what becomes of the others. Replays need no routing:
// an entry that spans two shards is replayed by the thread of the shard that
// recorded it, which reads and writes the other shard's coefficient directly
// (no other thread touches that slot in that layer).
//
// With MPI the ranks compose with the shards (see routing.h): a rank asks the
// peer that owns a partner through the communicator (layer_exchange.h), and
// entries that span two ranks are recorded on both (remote.h) and replayed by
// exchanging their inputs with the peer, layer by layer. The team's primary
// thread makes every MPI call while the others wait at a barrier.
#pragma once

#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "clifford_frame.h"
#include "graph.h"
#include "memory_budget.h"
#include "monomial_propagator.h"
#include "rank_exchange.h"
#include "rank_layout.h"
#include "reach.h"
#include "remote.h"
#include "remote_exchange.h"
#include "replay.h"
#include "replay_layout.h"
#include "replayer.h"
#include "rotation.h"
#include "routing.h"
#include "snapshot.h"
#include "store.h"
#include "team.h"
#include "term_flags.h"
#include "truncation_rule.h"

namespace monoprop {

// `Index` addresses a shard's terms; narrower types exist for testing the
// shard ceiling with few terms.
template <typename Algebra, int W, typename Index = std::uint32_t>
class Propagator final : public MonomialPropagator {
 public:
  using Key = Monomial<W>;
  using Keys = Store<W, Index>;
  using Gen = typename Algebra::template Generator<W>;
  using Frame = CliffordFrame<Algebra, W>;

  Propagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis);
  // The propagator `state` describes (propagator_restore.h); `config` carries
  // its settings and T.
  Propagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis, const SavedState& state);

  // Bytes that `threads` empty shards on `ranks` ranks of `slots` key slots
  // write at construction, at least (saturating at 2^64 - 1); construction
  // refuses a thread count whose shards would pass the memory budget.
  static std::uint64_t empty_shards_bytes(std::uint64_t threads, std::uint64_t ranks, int slots);

  std::unique_ptr<MonomialPropagator> clone_() const override {
    check_valid();
    return std::make_unique<Propagator>(*this);
  }

  void propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                 std::optional<int> only_rotate_len_k) override;
  void build_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                   std::optional<int> only_rotate_len_k) override {
    build(circuit, seed, only_rotate_len_k, false);
  }
  void continue_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                      std::optional<int> only_rotate_len_k) override {
    build(circuit, seed, only_rotate_len_k, true);
  }

  void evaluate(const Points& points, const EvaluationRequest& request,
                const EvaluationResults& results) const override;
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
    return layers_.size();
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
  std::size_t replay_blocks() const override {
    check_valid();
    return replayer_.blocks(replay_source());
  }
  std::uint64_t memory_budget() const override { return budget_.limit(); }
  std::vector<std::pair<std::size_t, double>> memory_truncations() const override { return truncations_; }
  std::vector<std::pair<std::size_t, double>> budget_thresholds() const override { return budget_thresholds_; }
  SavedState save_state() const override;

 protected:
  std::size_t apply_initial_operator_(const std::vector<Term>& terms) override;
  OperatorView mp_op_() const override;
  IndexView indexing_() const override;
  const Graph& graph_() const override {
    take_graph_back();
    return shards_[0].graph;
  }
  GraphData graph_data_() const override;

 private:
  // Settings, empty shards and frames, the reference state: what both public
  // constructors begin with.
  struct Bare {};
  Propagator(Bare, Config config, BasisChange basis_change, int logical_num_modes, Family basis);
  // Refuses with MemoryBudgetError, before any shard exists, a thread count
  // whose empty shards would pass the memory budget (propagator_setup.h).
  void check_shards_fit() const;
  void restore(const SavedState& state);
  std::vector<Key> saved_keys(const SavedState& state, const std::string& name, const std::string& what) const;
  // The shards' terms and graphs (the graph's arrays are snapshot.h's).
  void restore_shards(const SavedState& state);

  // A lookup of a partner, and what a rank keeps of those it received (rank_exchange.h).
  using Query = monoprop::Query<Key>;
  using Incoming = typename RankExchange<Key>::Incoming;
  // One layer as every shard applies it.
  struct LayerPlan {
    explicit LayerPlan(const Key& g) : generator(g), gen(g) {}
    Key generator;
    Gen gen;
    std::vector<int> columns;              // bit columns whose xor marks the anticommuting terms
    std::uint32_t patterns = 0;            // else, the patterns of the columns that mark the layer's terms (noise.h)
    std::vector<std::vector<int>> probes;  // in a Clifford frame: the columns whose xor is each pattern bit
    LayerKind kind = LayerKind::Rotation;
    int transfer_sign = 1;  // s of a Transfer, before the Majorana length sign
    std::uint32_t top = 0;  // the generator's highest slot
    double cs = 1.0, sn = 0.0;
    double inverse_cs = 1.0;       // 1 / cs: never infinite, as cos of a double angle is never 0
    bool informed = false;         // coefficients steer truncation
    bool record = false;           // the layer goes into the graph
    bool track = false;            // propagate sums the sine branches it drops (Shard::quiet_drops)
    std::optional<int> k;          // only_rotate_len_k
    const Frame* frame = nullptr;  // when truncation measures keys in a Clifford frame
    // The reach of what the layer drops (reach.h), where it is counted:
    // `dark` holds the checks (on held keys) a branch that can still reach the
    // end passes (null: every branch passes). The estimate weighs a branch
    // y by how far F(y) is from the end (reach.h), F the `reach_frame`.
    bool classify = false;
    const std::vector<Key>* dark = nullptr;
    const Frame* reach_frame = nullptr;
    int target_support = 0;                           // Schrodinger: the most modes a term of the observable touches
    std::span<const std::pair<Key, double>> targets;  // and its terms with their shares, where there are few
    // The term a held key stands for, up to sign: what truncation measures.
    Key truth(const Key& key) const { return frame ? frame->image(key) : key; }
    bool transfer() const { return kind == LayerKind::Transfer; }
    // s of the entry of an active term a: i a G = s (a xor G) for a rotation;
    // for a Transfer, the sign of K in a = s' (a xor K) K, which on Majorana
    // monomials (Hermitian phases) is (-1)^|a| times the transfer sign.
    // In a Clifford frame F the entry moves c_a F(a) = c_a s_a A to the term
    // A xor K = s_b F(a xor G), G = F^-1(K): its sign is s_a s_b times A's.
    int sign(const Key& a) const {
      if (!transfer()) return Algebra::anticommuting_sign(a, gen);
      if (!frame) return transfer_sign_of(a);
      const auto image = frame->forward(a);
      return image.sign * frame->forward(a ^ generator).sign * transfer_sign_of(image.key);
    }
    int transfer_sign_of(const Key& a) const {
      return Algebra::family == Family::Majorana && (a.length() & 1) ? -transfer_sign : transfer_sign;
    }
    std::vector<int> peers;  // ranks the layer's lookups go to (ascending)
    const char* operation = "";
    std::size_t layer = 0, layers = 0;  // position in the call, for messages
  };
  // One shard: its terms and everything indexed by their slots.
  struct Shard {
    explicit Shard(int slots) : keys(slots, Algebra::kParityColumn) {}
    Keys keys;
    Column<double> base;  // coefficients a replay starts from
    // In application order, aligned with layers_. While laid out (a layout of replayer_)
    // its layers keep their sections and the layout holds their bytes.
    mutable Graph graph;
    std::size_t n_base = 0;  // terms held when the graph was empty
    Column<double> work;     // coefficients of a build at its seed
    // Scratch of the layer being applied.
    TermFlags flags;
    // Recorded: the anticommuting terms that do not ask, each list ascending:
    // the scan's, and those its batches found past the cutoff (or a memory
    // truncation dropped), which come later than terms after them. settle()
    // merges them, so that cos sections ascend (their gaps stay small).
    Column<std::uint32_t> quiet, quiet_late;
    // Tracked, over the operation: the sine branches |sn * c| (before the
    // scaling) of the quiet terms of this shard's scans, and of the quiet
    // partners its lookups found (settle_part(), unscale_remote()), which
    // rotate after all. What was dropped is the difference over all shards
    // (dropped_in_call()).
    DropSum quiet_drops, found_drops;
    // Of the lit branches (those that may reach the end) the layer being
    // applied drops, net of those found: sum x, x^2, x^2 w^2 and x sqrt(w) for x = |sn c|
    // (1 without coefficients) and w their reach weight (reach.h).
    ReachTally reach_tally;
    std::vector<ReachTally> reach_layers;  // the tally of each layer of the operation, in order
    ReachTally reach_total;                // and their sum
    // Recorded: the quiet terms whose branch is dark (reach.h), in any order.
    Column<std::uint32_t> dark;
    SectionWriter writers[4];                    // cos, births, pairs, halves of the part being recorded
    std::vector<std::uint8_t> staging;           // the bytes of the layer being recorded
    std::vector<std::vector<Query>> outbox;      // by owner shard (this shard's own included)
    std::vector<std::vector<Query>> late;        // lookups of upper terms, held back (layer_step.h)
    std::vector<Query*> births;                  // lookups (of any shard) whose partner this shard appends
    std::vector<std::uint64_t> birth_hashes;     // of their partners, then of those other ranks asked for
    std::vector<std::vector<Query>> remote_out;  // by owner rank
    std::size_t born = 0;
    // What only a build or propagation uses, given back when it ends.
    void release_scratch() {
      work.release();
      flags.release();
      quiet.release();
      quiet_late.release();
      dark.release();
      give_back(births);
      give_back(staging);
      give_back(birth_hashes);
      for (SectionWriter& writer : writers) writer.release();
      for (auto& out : outbox) give_back(out);
      for (auto& out : late) give_back(out);
      for (auto& out : remote_out) give_back(out);
    }
  };

  // Frees a vector's memory (`v = {}` would assign an empty list and keep it).
  template <typename V>
  static void give_back(V& v) {
    V().swap(v);
  }
  int threads() const { return num_threads_; }
  // The shard, within its rank, that owns a monomial of hash h.
  int owner(std::uint64_t h) const { return routing_.shard_of(h); }
  bool held_here(const Key& key) const { return routing_.rank_of(key.words.data(), W, key.hash()) == rank_; }
  std::size_t total_size() const;
  Key key_of(const std::vector<std::uint32_t>& slots) const;
  std::string describe(const Key& key) const;
  // Adds h to the coefficient of `key` in its owner shard (construction).
  void accumulate(const Key& key, double h);
  static void accumulate(Keys& keys, Column<double>& coefficients, const Key& key, double h);
  void expand_reference_state(int max_pairs);
  void check_circuit(const CircuitSpec& circuit, std::optional<int> only_rotate_len_k) const;
  void check_noise(const LayerSpec& layer) const;
  void check_parameters(std::span<const double> parameters, std::int32_t expected) const;
  void check_rates(const double* theta, const std::int32_t* lp, bool gradient) const;
  void check_layer_parameters(const std::vector<std::int32_t>& per_layer) const;
  std::vector<std::int32_t> checked_evaluation(std::span<const double> parameters,
                                               const std::vector<std::int32_t>* mapping, bool gradient = false) const;
  void check_circuit_rates(const CircuitSpec& circuit, const std::vector<double>& theta, std::int32_t shift) const;
  // Per-layer parameter indices in graph order for a circuit-order mapping.
  std::vector<std::int32_t> graph_order(const std::vector<std::int32_t>& mapping) const;
  // Order in which a circuit's layers act on the operand.
  std::vector<const LayerSpec*> application_order(const CircuitSpec& circuit) const;
  double frequency(const LayerSpec& layer) const { return (schrodinger() ? -2.0 : 2.0) * layer.coefficient; }

  // A circuit's rotations as the held terms see them (clifford_frame.h): the
  // Clifford layers fold into the frame, and each rotation's generator is
  // pulled back through the frame in force where it acts.
  struct Step {
    Key generator;           // F^-1 of the layer's generator, without its sign
    double frequency = 0.0;  // the layer's, times the sign of F^-1
    std::int32_t parameter = 0, gate = 0;
    std::size_t frame = 0;        // 1 + the index in CircuitPlan::frames truncation reads; 0: none
    std::size_t reach_frame = 0;  // the same for the reach of dropped branches (0: the identity)
    std::size_t dark = 0;         // 1 + the index in CircuitPlan::dark of its checks; 0: none
    Noise noise;
    Key slots;  // the layer's own slots (a Select or Transfer reads them)
  };
  struct CircuitPlan {
    std::vector<Step> steps;    // application order
    std::vector<Frame> frames;  // the frames truncation and reach measure in, when they matter
    Frame after;                // the frame once the circuit is applied
    // The checks, on held keys, of the steps whose dropped branches may be
    // dark (reach.h): the steps near the end of the propagation.
    std::vector<std::vector<Key>> dark;
    std::size_t following = 0;                    // steps of CircuitSpec::following the reach was planned through
    int target_support = 0;                       // Schrodinger: the most modes a term of the observable touches
    std::vector<std::pair<Key, double>> targets;  // and its terms with their shares (none where there are many)
  };
  // Fills plan.dark and each step's dark, given each step's true generator
  // (or, for a quarter turn, its monomial and k) in application order.
  struct Move {
    Key key;
    int quarter_turns = 0;  // 1..3: a quarter turn; 0: a step
    bool feeds = false;     // a rotation or Transfer: the step spans its key
    std::size_t step = 0;   // of a step: its index in plan.steps (past the end: a later piece's)
  };
  void plan_reach(CircuitPlan& plan, const std::vector<Move>& moves) const;
  // The reach of a branch a layer drops (a held key): 0 where it is dark, else
  // its weight in the estimate. Inlined: the scan weighs every branch it drops.
  [[gnu::always_inline]] double reach_of(const LayerPlan& plan, const Key& branch) const {
    if (plan.dark)
      for (const Key& h : *plan.dark)
        if (parity(h, branch)) return 0.0;
    if (!schrodinger())
      return reach_weight(plan.reach_frame ? plan.reach_frame->unpaired_modes(branch) : unpaired_modes(branch));
    return state_reach(plan, branch);
  }
  // Schrodinger: the modes of F(y) past the widest observable term's, or the
  // fewest modes in which F(y) differs from a term, weighed by that term's
  // share of the observable's norm (reach.h).
  double state_reach(const LayerPlan& plan, const Key& branch) const {
    const Key truth = plan.reach_frame ? plan.reach_frame->image(branch) : branch;
    if (plan.targets.empty()) return reach_weight(std::max(0, truth.support() - plan.target_support), kStateBase);
    double best = 0.0;
    for (const auto& [target, share] : plan.targets)
      best = std::max(best, share * reach_weight((truth ^ target).support(), kStateBase));
    return best;
  }
  std::vector<ReachTally> reach_by_layer() const;
  CircuitPlan plan_circuit(const CircuitSpec& circuit, std::optional<int> only_rotate_len_k) const;
  // `continuing`: the circuit's parameters and gates are on the axes already
  // (continue_graph).
  void build(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed, std::optional<int> k,
             bool continuing);
  void adopt_graph(const CircuitSpec& circuit, CircuitPlan& plan, std::vector<Graph>& added,
                   std::vector<RemoteLayer>& added_remote, bool continuing);
  // One layer on the current stores (layer_step.h, layer_scan.h).
  void apply_layer(int t, Team& team, const LayerPlan& plan, Column<double>** values, std::vector<Graph>* record,
                   RemoteLayer* remote);
  // Active terms waiting for their key rows during a scan.
  struct ActiveBatch {
    static constexpr std::size_t kSize = 16;
    std::uint32_t term[kSize];
    double moved[kSize];  // |sin * c| of each
    std::size_t size = 0;
  };
  void scan(int s, const LayerPlan& plan, double* c);
  // The layer's cs and record are passed as values: the scan keeps them in registers.
  static void quiet(Shard& me, Column<std::uint32_t>& list, double* c, std::uint32_t i, double cs, double sn,
                    bool record, bool track);
  void test_partners(int s, const LayerPlan& plan, const TruncationRule& truncation, double* c, ActiveBatch& batch);
  [[gnu::always_inline]] inline void ask(Shard& me, const LayerPlan& plan, std::uint32_t i, const Key& key,
                                         const Key& partner);
  void resolve(int s, const LayerPlan& plan, bool late);
  void post_late(int s);
  Answer found(Shard& me, std::uint32_t b, const LayerPlan& plan);
  void check_growth(int s, const LayerPlan& plan, bool evolving);
  // on_memory_limit="truncate" (layer_fit.h).
  bool fits_by_truncation(const LayerPlan& plan, Column<double>** values) const;
  void fit_births(const LayerPlan& plan, Column<double>** values);
  template <typename Drop>
  void drop_births(const LayerPlan& plan, Column<double>** values, Drop&& drop);
  // max_error (layer_budget.h).
  void check_budget(bool coefficients, std::optional<int> k) const;
  double budget_cost(const ReachTally& tally) const;
  void open_budget(std::size_t steps, std::size_t following, double spent);
  void close_budget();
  void spend_budget(const LayerPlan& plan, Column<double>** values);
  void append_births(int s, const LayerPlan& plan, Column<double>* values);
  void settle(int s, const LayerPlan& plan, Column<double>** values, Graph* record);
  void settle_part(int s, std::size_t o, const std::vector<Query>& queries, const LayerPlan& plan,
                   Column<double>** values, ShardLayer* layer);
  void clear_flags(int s);
  // A found partner too long to rotate back (only_rotate_len_k): a half.
  // Every entry of a Transfer is a half: a keeps its coefficient (cs = 1).
  // So a born partner makes a half only in a Transfer, which records no
  // births: in a rotation every born partner is a birth, and the births of
  // one part stay one run of consecutive slots, as their section records them.
  static bool half(Answer answer, const Key& partner, const LayerPlan& plan) {
    return plan.transfer() || (answer != Answer::Born && plan.k && plan.truth(partner).length() > *plan.k);
  }
  // Whether the asking shard applies and records a lookup's rotation: always,
  // unless both terms asked and the partner lacks the generator's top slot.
  static bool owns_rotation(Answer answer, const Key& partner, const LayerPlan& plan) {
    return answer != Answer::FoundAsking || partner.test(plan.top);
  }
  // The rank exchange of a layer (layer_exchange.h); no-ops on one rank.
  // f(shard, query) for each lookup this rank's shards ask of rank r, in
  // shard order and each shard's asking order.
  template <typename F>
  void each_remote_lookup(std::size_t r, F&& f) {
    for (std::size_t s = 0; s < shards_.size(); ++s)
      for (Query& q : shards_[s].remote_out[r]) f(s, q);
  }
  void send_lookups(const LayerPlan& plan);
  void sort_incoming(int t, Team& team, const LayerPlan& plan);
  void resolve_incoming(int s, const LayerPlan& plan);
  void answer_lookups(const LayerPlan& plan, RemoteLayer& remote);
  void unscale_remote(int s, const RemoteLayer& remote, const LayerPlan& plan, double* const* c);
  void apply_circuit(int t, Team& team, const CircuitPlan& circuit, const std::vector<double>* theta,
                     std::int32_t parameter_shift, Column<double>** values, std::vector<Graph>* record,
                     std::vector<RemoteLayer>* remote_record, std::optional<int> k);
  // One COMMROUTE line when a circuit's rank shifts leave ranks empty.
  void report_routing(const CircuitPlan& circuit) const;
  void release_scratch();
  // Drops every term appended since `sizes` (a refused operation), and puts
  // back the operand's coefficients from `saved` when given.
  void truncate_to(const std::vector<std::size_t>& sizes);
  void rollback(const std::vector<std::size_t>& sizes, std::vector<Column<double>> saved);

  // Evaluations (propagator_evaluate.h) go through the replayer (replayer.h),
  // which reads the graph as replay_source() lends it.
  ReplaySource replay_source() const;
  // Shard s's nonzero weights of the value, ascending (ReplaySource::weigh).
  void weigh(std::size_t s, ReplaySource::Weights& out) const;
  void take_graph_back() const { replayer_.take_graph_back(replay_source()); }
  void replay_all(const std::vector<double>& parameters, Dropped* dropped = nullptr) const;
  // The value and, with `total`, the bounded replay's sums.
  double replay_value(std::span<const double> parameters, double pare, const std::vector<std::int32_t>* mapping,
                      Dropped* total) const;
  // The value and gradient (into `gradient`, n_parameters of them); with `total`, as replay_value.
  double replay_gradient(std::span<const double> parameters, double* gradient, double pare,
                         const std::vector<std::int32_t>* mapping, Dropped* total) const;
  // The factor a dropped state term's weight carries in the value: 1
  // (Heisenberg), or the sum of |h| over the observable's non-identity terms
  // (Schrodinger; propagator_evaluate.h).
  double error_scale() const;
  // A value with its bound and estimate from what the replay dropped (propagator_evaluate.h).
  ValueWithError with_error(double value, const Dropped& total) const;
  // What the running propagate (or seeded build) has dropped so far on this
  // rank: raw weights (the lit branches', and every branch's as the plain
  // sums), and dropped_so_far() in the value's units (progress reports).
  Dropped dropped_in_call() const;
  double dropped_so_far();
  // A batch's points side by side (replayer_batch.cpp), or one by one.
  void evaluate_batch(const Points& points, const EvaluationRequest& request, const EvaluationResults& out) const;
  void evaluate_rows(const Points& points, const EvaluationRequest& request, const EvaluationResults& out) const;
  // Refuses a bound that cannot be had (only_rotate_len_k; pare on several ranks).
  void check_bounded(double pare) const;

  std::vector<Shard> shards_;
  std::vector<LayerInfo> layers_;  // the graph's layers, in application order
  // How many layers the reach of the graph's layers was planned through
  // (reach.h): more than layers_.size() while a build in pieces goes on.
  std::size_t reach_horizon_ = 0;
  Routing routing_;
  int rank_ = 0;
  MemoryBudget budget_;
  // The lower_atol a memory truncation raised for the rest of the operation,
  // and the layers it thinned: of the operation running, then of the last.
  std::optional<double> raised_atol_;
  std::vector<std::pair<std::size_t, double>> truncating_, truncations_;
  // The error budget of the operation running (layer_budget.h): in the units
  // of budget_cost(), its total and what is spent, the layers it spreads over
  // and how many of the call's layers are counted in `spent`.
  struct ErrorBudget {
    bool on = false;
    double total = 0.0, spent = 0.0;
    std::size_t steps = 0, counted = 0;
  };
  ErrorBudget error_budget_;
  double budget_spent_ = 0.0;      // what the last budgeted build spent: a build in pieces goes on from it
  std::size_t budget_layers_ = 0;  // and the layers it applied, which number the next piece's thresholds
  // (layer, threshold) of each layer the last operation's budget thinned.
  std::vector<std::pair<std::size_t, double>> budget_thresholds_;
  std::vector<RemoteLayer> remote_;  // aligned with layers_
  std::size_t remote_entries_ = 0;   // over all layers of remote_
  std::size_t entries_ = 0;          // graph entries on this rank, over all shards
  RankExchange<Key> exchange_;       // scratch of the layer being built, by peer rank
  RemoteLayer remote_scratch_;
  std::vector<double> remote_values_;  // scratch of a rotation in a build
  // Replays, and what they keep from call to call (the layouts of the graph among it).
  Replayer replayer_;
  mutable bool routing_reported_ = false;
  double core_ = 0.0;              // Heisenberg identity term, kept apart
  double observable_norm_ = 0.0;   // Heisenberg: the sum of |h| over the operand's other terms where it started
  double reported_dropped_ = 0.0;  // the largest dropped_so_far() of the running call
  // What the operand dropped before the graph starts (propagate, an in-place
  // contraction; Schrodinger: the initial state beyond schrodinger_cutoff), on
  // this rank; and whether some truncation went unrecorded (only_rotate_len_k
  // leaves terms unrotated, which no entry records).
  Dropped held_;
  bool unbounded_ = false;
  Key occupied_;  // even slot of each occupied mode
  // Schrodinger observable, whole on every shard's view.
  Keys observable_keys_;
  Column<double> observable_coefficients_;
  std::int32_t n_parameters_ = 0, n_gates_ = 0;
  // The Clifford frame of the held terms now, and where the graph starts.
  Frame frame_, start_frame_;
};

}  // namespace monoprop

#include "layer_budget.h"
#include "layer_exchange.h"
#include "layer_fit.h"
#include "layer_scan.h"
#include "layer_step.h"
#include "propagator_build.h"
#include "propagator_evaluate.h"
#include "propagator_readout.h"
#include "propagator_save.h"
#include "propagator_setup.h"
#include "propagator_terms.h"
// After propagator_save.h: a load makes its checks of a saved layer.
#include "propagator_restore.h"
