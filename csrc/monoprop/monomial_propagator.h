// The engine's public C++ interface: a propagator of a sum of Hermitian
// monomials through layers exp(+i theta h G), with truncation, a recorded
// graph, and replay for values and gradients.
//
// Heisenberg picture (no Schrodinger cutoff): the store holds the observable,
// layers act last gate first, and the value is sum_S c_S <ref|M_S|ref> plus
// the identity ("core") coefficient, which is kept apart from the store.
// Schrodinger picture: the store holds R = 2^n rho (identity included), layers
// act first gate first at negated angle, and the value is sum_S c_S o_S with
// o the fixed observable.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "algebra.h"
#include "comm.h"
#include "errors.h"
#include "evaluation.h"
#include "graph.h"
#include "hash_index.h"
#include "interrupt.h"
#include "noise.h"
#include "saved_state.h"

namespace monoprop {

inline constexpr int kMaxNumModes = 1024;

enum class CutoffType : std::uint8_t { Length, Support };

struct Truncation {
  std::int64_t cutoff = 0;  // any non-negative bound; measures never exceed 2n
  CutoffType type = CutoffType::Length;
  std::optional<double> lower_atol;
  std::optional<double> upper_atol;
  // An error budget (layer_budget.h): propagate and seeded builds choose which
  // new terms to drop, layer by layer, so that truncation_error's estimate of
  // what they drop (with `rigorous`, its bound) stays within max_error.
  std::optional<double> max_error;
  bool rigorous = false;

  // ArgumentError, naming the value, for settings no propagation can follow:
  // a negative cutoff, a NaN tolerance, an upper_atol below lower_atol, a
  // max_error that is not a positive finite number.
  void check() const {
    const auto text = [](double x) { return std::isnan(x) ? std::string("nan") : std::to_string(x); };
    if (cutoff < 0) throw ArgumentError("cutoff " + std::to_string(cutoff) + " must be >= 0.");
    for (const auto& [name, atol] : {std::pair{"lower_atol", lower_atol}, std::pair{"upper_atol", upper_atol}})
      if (atol && std::isnan(*atol))
        throw ArgumentError(std::string(name) + " must be a number or unset (no threshold); got nan.");
    if (lower_atol && upper_atol && *upper_atol < *lower_atol)
      throw ArgumentError("upper_atol (" + text(*upper_atol) + ") must be greater than or equal to lower_atol (" +
                          text(*lower_atol) + "); raise upper_atol or lower lower_atol.");
    if (max_error && !(*max_error > 0.0 && std::isfinite(*max_error)))
      throw ArgumentError("max_error=" + text(*max_error) +
                          " must be a positive, finite number; unset it for no error budget.");
  }
};

// A Hermitian-basis term: set slots and the real coefficient h of M_S.
struct Term {
  std::vector<std::uint32_t> slots;
  double coefficient = 0.0;
};

// One generator term of a gate: exp(+i theta h G), theta = parameters[parameter];
// or, with quarter_turns q in 1..3, the fixed Clifford layer exp(+i q pi/4 G),
// whose coefficient, parameter and gate are not read (clifford_frame.h); or a
// noise layer (noise.h) on the monomial or slots G, whose rate is
// parameters[parameter], or fixed when parameter and gate are -1.
struct LayerSpec {
  std::vector<std::uint32_t> slots;
  double coefficient = 0.0;  // h
  std::int32_t parameter = 0;
  std::int32_t gate = 0;
  std::int8_t quarter_turns = 0;
  Noise noise;
};

// A circuit flattened to layers, first gate first, with circuit-local
// parameter and gate numbering.
struct CircuitSpec {
  std::vector<LayerSpec> layers;
  std::int32_t n_parameters = 0;
  std::int32_t n_gates = 0;
  // A build in pieces: the circuit's layers that later pieces apply (circuit
  // order, as `layers`). truncation_error knows which dropped branches can
  // reach the end of the propagation from the layers after them (reach.h),
  // so a piece plans through these too, and the pieces record the graph one
  // build of the whole circuit records.
  std::vector<LayerSpec> following;
};

struct Config {
  Family family = Family::Majorana;
  int num_modes = 1;  // modes or qubits; 2 * num_modes slots
  std::vector<Term> initial_operator;
  std::vector<int> occupied;              // reference product state
  std::optional<int> schrodinger_cutoff;  // in slots
  Truncation truncation;
  // The ranks the operator is distributed over (default: one, no MPI).
  // Every rank constructs with the same arguments and keeps its own terms.
  mpi::Comm comm;
  // The shard count T. Unset, the usual: monoprop_NUM_THREADS, else the
  // OpenMP default; a copy made through save_state() sets it to keep its T.
  std::optional<int> threads;
  // The memory budget in bytes (memory_budget.h). Unset, the usual:
  // monoprop_MEMORY_LIMIT, else the default from the available memory.
  std::optional<std::uint64_t> memory_limit;
  // on_memory_limit="truncate": a layer of a build with coefficients that
  // would pass the budget drops its smallest new terms instead (layer_fit.h).
  bool truncate_to_fit = false;
};

// Terms held, decoded: slots of term t are slots[offsets[t] .. offsets[t+1]).
struct TermList {
  std::vector<std::uint32_t> slots;
  std::vector<std::uint64_t> offsets{0};
  std::vector<double> coefficients;
};

struct MemoryUsage {
  std::size_t terms = 0, index = 0, graph = 0, buffers = 0;
};

// Image of each logical slot as a set of engine slots (for example the
// Jordan-Wigner strings of Majorana slots on qubits); empty means none.
using BasisChange = std::vector<std::vector<std::uint32_t>>;

// Raw layout of the sole shard (see MonomialPropagator::mp_op and friends).
// Pointers stay valid until the next operation that changes the propagator.
struct OperatorView {
  int words = 0;                           // 64-bit words per key
  std::size_t size = 0;                    // terms
  const std::uint64_t* keys = nullptr;     // row-major: word w of term i at keys[words * i + w]
  const std::uint16_t* lengths = nullptr;  // set slots per key
  const double* coefficients = nullptr;    // coefficients a replay starts from
};
// The hash index: groups of up to 12 (tag, slot) entries (hash_index.h).
using IndexGroup = HashIndex<std::uint32_t>::Group;
struct IndexView {
  const IndexGroup* groups = nullptr;
  std::size_t n_groups = 0;
};
// Per graph layer (application order): parameter index, gate, frequency.
struct GraphData {
  std::vector<std::int32_t> parameter, gate;
  std::vector<double> frequency;
};

// The thread budget T: monoprop_NUM_THREADS parsed strictly (decimal digits,
// 1..2147483647), else omp_get_max_threads(). Throws UsageError naming the
// variable for any other value.
int thread_budget_from_environment();

// Reports (layers done, layers in the call, terms held, truncation bound so
// far) during long builds. The bound is what the call has dropped on this rank
// where coefficients are evolved (propagate, a seeded build; the bound of
// truncation_error at the seed, less what the operand held before), else 0.
using Progress = std::function<void(std::size_t, std::size_t, std::size_t, double)>;

class MonomialPropagator {
 public:
  virtual ~MonomialPropagator() = default;
  virtual std::unique_ptr<MonomialPropagator> clone_() const = 0;

  // Evolves the operand at fixed parameters and keeps no graph.
  virtual void propagate(const CircuitSpec& circuit, const std::vector<double>& parameters,
                         std::optional<int> only_rotate_len_k) = 0;
  // Appends the circuit to the graph. With a seed (the full post-call
  // parameter vector) truncation is coefficient-informed, else structural.
  virtual void build_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                           std::optional<int> only_rotate_len_k) = 0;
  // Appends more layers of the circuit the last build_graph began: their
  // parameters and gates are on the axes already (that build counted the whole
  // circuit), so the axes stay as they are. Building a circuit in pieces this
  // way records the graph one build_graph of the whole circuit records; a
  // build that saves checkpoints between pieces is resumed from one this way.
  virtual void continue_graph(const CircuitSpec& circuit, const std::optional<std::vector<double>>& seed,
                              std::optional<int> only_rotate_len_k) {
    (void)circuit, (void)seed, (void)only_rotate_len_k;
    throw UsageError(
        "this propagator type cannot continue a build; forward continue_graph() to the propagator it "
        "wraps.");
  }

  // Replays the graph at K points (evaluation.h): each point's value and, as
  // `request` asks, its gradient and truncation error (a bound, and an
  // estimate: what propagate dropped plus the branches the replay at that
  // point drops, reduced over the ranks; propagator_evaluate.h), into
  // `results`. Each point's results are bitwise those of the point alone,
  // for a fixed thread count. NaN or infinite angles, a row of the wrong
  // length and a bad pare are refused before anything is replayed.
  virtual void evaluate(const Points& points, const EvaluationRequest& request,
                        const EvaluationResults& results) const = 0;
  // The one-point forms of evaluate. `mapping` (per layer, circuit order)
  // replaces the graph's own parameter mapping for this call.
  using ValueWithError = monoprop::ValueWithError;
  double expectation_value(const std::vector<double>& parameters, double pare = 0.0,
                           const std::vector<std::int32_t>* mapping = nullptr) const {
    return evaluate_one(parameters, nullptr, {false, false, pare, mapping}).value;
  }
  double expectation_value_and_gradient(const std::vector<double>& parameters, std::vector<double>& gradient,
                                        double pare = 0.0, const std::vector<std::int32_t>* mapping = nullptr) const {
    return evaluate_one(parameters, &gradient, {true, false, pare, mapping}).value;
  }
  ValueWithError expectation_value_with_error(const std::vector<double>& parameters, double pare = 0.0,
                                              const std::vector<std::int32_t>* mapping = nullptr) const {
    return evaluate_one(parameters, nullptr, {false, true, pare, mapping});
  }
  ValueWithError expectation_value_and_gradient_with_error(const std::vector<double>& parameters,
                                                           std::vector<double>& gradient, double pare = 0.0,
                                                           const std::vector<std::int32_t>* mapping = nullptr) const {
    return evaluate_one(parameters, &gradient, {true, true, pare, mapping});
  }
  // Hermitian-basis coefficients after replaying the graph (store order).
  virtual std::vector<double> contract(const std::vector<double>& parameters, bool inplace) = 0;
  virtual TermList evolved_terms(const std::vector<double>& parameters, double atol) const = 0;
  virtual std::vector<double> coefficients_of(const std::vector<Term>& terms,
                                              const std::vector<double>& parameters) const = 0;
  // Returns this rank's share of the update (see apply_initial_operator_).
  virtual std::size_t update_initial_operator(const std::vector<Term>& terms) {
    return guarded("update_initial_operator", [&] { return apply_initial_operator_(terms); });
  }

  virtual std::size_t size() const = 0;
  virtual std::size_t graph_layers() const = 0;
  virtual std::pair<std::size_t, std::size_t> graph_size() const = 0;
  virtual std::int32_t n_parameters() const = 0;
  virtual std::int32_t n_gates() const = 0;
  virtual std::vector<std::int32_t> parameter_mapping() const = 0;
  virtual std::vector<std::int32_t> layer_gates() const = 0;
  virtual void set_parameter_mapping(const std::vector<std::int32_t>& per_layer) = 0;
  virtual MemoryUsage memory() const = 0;
  // The memory budget's limit in bytes: the given or environment limit, or
  // the default as the last operation (or construction) set it.
  // Not pure, so that subclasses written before it keep compiling; a decorator
  // forwards it (examples/cpp/example.cpp).
  virtual std::uint64_t memory_budget() const {
    throw UsageError("this propagator type has no memory budget of its own; forward it to the propagator it wraps.");
  }
  // The layers of the last propagate or build whose new terms a memory
  // truncation thinned: (layer of that call, 0-based, lower_atol it used).
  virtual std::vector<std::pair<std::size_t, double>> memory_truncations() const {
    throw UsageError("this propagator type records no memory truncations; forward it to the propagator it wraps.");
  }
  // The layers of the last propagate or build whose new terms it dropped to
  // stay within max_error (layer_budget.h): (layer of that call, threshold).
  virtual std::vector<std::pair<std::size_t, double>> budget_thresholds() const {
    throw UsageError("this propagator type records no error budget; forward it to the propagator it wraps.");
  }
  // The whole propagator as named arrays (saved_state.h); restore_propagator
  // turns them back into a propagator whose replays are bitwise this one's.
  // Subclasses of their own (decorators) refuse unless they forward it.
  virtual SavedState save_state() const {
    throw UsageError("this propagator type cannot be saved; forward save_state() to the propagator it wraps.");
  }

  // Raw layout of the sole shard: only when T = 1 (whatever the rank count);
  // with T > 1 they throw MultiShardUnsupported and change nothing. An
  // invalid propagator reports that first.
  OperatorView mp_op() const { return check_sole_shard(), mp_op_(); }
  IndexView indexing() const { return check_sole_shard(), indexing_(); }
  const Graph& graph() const { return check_sole_shard(), graph_(); }
  GraphData graph_data() const { return check_sole_shard(), graph_data_(); }

  const Config& config() const { return config_; }
  // Shards of this rank, one per OpenMP thread; read once at construction.
  int num_threads() const { return num_threads_; }
  const BasisChange& basis_change() const { return basis_change_; }
  int logical_num_modes() const { return logical_num_modes_; }
  Family basis() const { return basis_; }
  // The settings as callers see them; refuses once the propagator is invalid.
  // New settings are checked (Truncation::check) before they replace the old.
  const Truncation& truncation() const {
    check_valid();
    return config_.truncation;
  }
  void set_truncation(const Truncation& truncation) {
    check_valid();
    truncation.check();
    config_.truncation = truncation;
  }
  bool schrodinger() const { return config_.schrodinger_cutoff.has_value(); }
  // Bumped whenever the graph or the operand a replay starts from changes.
  std::uint64_t generation() const { return generation_; }

  bool valid() const { return invalid_reason_.empty(); }
  void check_valid() const {
    if (!valid())
      throw InvalidPropagator("This propagator can no longer be used: " + invalid_reason_ +
                              " Construct a new propagator (copies made before the failure still work).");
  }
  void set_progress(Progress progress) { progress_ = std::move(progress); }
  // Lets the caller stop long operations (interrupt.h): `check` is asked on
  // the calling thread, between layers and inside long ones, at most once per
  // `interval` (and every `stride` items of work); when it returns true the
  // operation stops with Interrupted, the propagator as it was before the
  // call. Copies keep the check; null removes it.
  void set_interrupt_check(InterruptCheck check,
                           std::chrono::steady_clock::duration interval = std::chrono::milliseconds(100),
                           std::int64_t stride = Interrupts::kWork) {
    interrupts_.set_check(std::move(check), interval, stride);
  }
  // Test hook: the next operation named `where` fails once it has started
  // changing state ("propagate", "build_graph", "evaluate", "contract",
  // "update_initial_operator").
  void inject_fault(std::string where) { fault_ = std::move(where); }
  // Replays whose work (graph entries and terms) is below `entries`, or below
  // entries / 16 a layer, run on the calling thread (team.h); tests set 0 to
  // run every replay on the whole team.
  void set_small_work(std::size_t entries) { small_work_ = entries; }
  // Test hooks: whether replays use a layout of their own (over the threads,
  // replay_layout.h, or on several ranks over the ranks, rank_layout.h):
  // never, where it pays (the default), or wherever one can be made; and how
  // many blocks (threads or ranks) the current graph's has (0: none).
  enum class LayoutUse { never, paying, always };
  void set_replay_layout(LayoutUse use) { layout_use_ = use; }
  virtual std::size_t replay_blocks() const { return 0; }
  // Test hook: the lanes of a batch's sweeps (1, 2, 4, 8 or 16) wherever a
  // batch can be replayed side by side, whatever the cache; 0, the default,
  // lets the engine choose (replayer_batch.cpp).
  void set_point_lanes(int lanes) { point_lanes_ = lanes; }

 protected:
  // `basis_change` (empty, or one image per logical slot), `logical_num_modes`
  // and `basis` describe the problem as the caller wrote it before it was
  // mapped onto the engine's modes; terms reach the engine already mapped.
  MonomialPropagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis);
  // Returns this rank's share of the update: how many of `terms` its shards hold.
  virtual std::size_t apply_initial_operator_(const std::vector<Term>& terms) = 0;
  virtual OperatorView mp_op_() const = 0;
  virtual IndexView indexing_() const = 0;
  virtual const Graph& graph_() const = 0;
  virtual GraphData graph_data_() const = 0;

  // Runs an operation: argument and usage errors, the shard ceiling, the
  // memory budget and an interrupt are raised before anything changes (the
  // last three by rolling back, or by a replay that keeps nothing) and leave
  // the propagator usable; any other
  // failure leaves it invalid. With more than one rank the other ranks could
  // not be told, so any failure but an argument or usage error (which every
  // rank raises alike, before communicating) prints the rank and the error
  // and aborts them all.
  template <typename F>
  auto guarded(const char* operation, F&& body) const -> decltype(body()) {
    check_valid();
    config_.comm.check_thread(operation);
    const Busy busy(busy_, operation);  // refuses a concurrent or reentrant call
    interrupts_.arm();
    try {
      return body();
    } catch (const ArgumentError&) {
      throw;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      if (config_.comm.distributed()) config_.comm.abort(std::string(operation) + " failed: " + e.what());
      // A refusal came before anything changed, or was rolled back.
      if (!dynamic_cast<const Refusal*>(&e))
        invalid_reason_ = std::string(operation) + " failed part-way (" + e.what() + ").";
      throw;
    } catch (...) {
      if (config_.comm.distributed()) config_.comm.abort(std::string(operation) + " failed.");
      invalid_reason_ = std::string(operation) + " failed part-way.";
      throw;
    }
  }
  ValueWithError evaluate_one(const std::vector<double>& parameters, std::vector<double>* gradient,
                              const EvaluationRequest& request) const {
    ValueWithError out;
    if (gradient) gradient->assign(parameters.size(), 0.0);
    evaluate(Points::one(parameters), request,
             {&out.value, gradient ? gradient->data() : nullptr, &out.bound, &out.estimate});
    return out;
  }
  void maybe_fault(const char* where) const {
    if (fault_ == where) {
      fault_.clear();
      throw std::runtime_error(std::string("injected fault in ") + where);
    }
  }

  // Set while an operation runs. Copies start idle; the flag itself is not copied.
  struct BusyFlag {
    std::atomic<bool> on{false};
    BusyFlag() = default;
    BusyFlag(const BusyFlag&) {}
    BusyFlag& operator=(const BusyFlag&) { return *this; }
  };
  struct Busy {
    std::atomic<bool>& flag;
    Busy(BusyFlag& f, const char* operation) : flag(f.on) {
      if (flag.exchange(true))
        throw UsageError(std::string(operation) +
                         " was called while another call on the same propagator is running (from another "
                         "thread, or from a callback of that call); calls on one propagator must not overlap.");
    }
    ~Busy() { flag = false; }
  };

  void check_sole_shard() const {
    check_valid();
    if (num_threads_ != 1)
      throw MultiShardUnsupported("this propagator has " + std::to_string(num_threads_) +
                                  " shards (one per thread), so there is no single store to return; launch with "
                                  "monoprop_NUM_THREADS=1 to use the raw layout accessors.");
  }

  Config config_;
  int num_threads_ = 1;
  BasisChange basis_change_;
  int logical_num_modes_ = 0;
  Family basis_ = Family::Majorana;
  std::uint64_t generation_ = 0;
  Progress progress_;
  mutable Interrupts interrupts_;
  mutable BusyFlag busy_;
  mutable std::string invalid_reason_;
  mutable std::string fault_;
  std::size_t small_work_ = std::size_t{1} << 16;
  LayoutUse layout_use_ = LayoutUse::paying;
  int point_lanes_ = 0;
};

// The engine for `config`; the tail describes the caller's basis (by default
// the engine's own: no basis change, config.num_modes modes, config.family).
std::unique_ptr<MonomialPropagator> make_propagator(Config config, BasisChange basis_change = {},
                                                    std::optional<int> logical_num_modes = {},
                                                    std::optional<Family> basis = {});

// The propagator a save_state() described, with `threads` shards or else this
// process's thread count (monoprop_NUM_THREADS, else the OpenMP default): at the saved count its
// replays are bitwise the saved propagator's, at another its terms are dealt
// to the shards anew. ArgumentError when the state is damaged or not a
// propagator's.
std::unique_ptr<MonomialPropagator> restore_propagator(const SavedState& state, mpi::Comm comm = {},
                                                       std::optional<int> threads = std::nullopt,
                                                       std::optional<std::uint64_t> memory_limit = std::nullopt,
                                                       bool truncate_to_fit = false);

}  // namespace monoprop
