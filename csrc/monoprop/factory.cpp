// Chooses the key width (64-bit words) and the algebra at construction.
#include <cmath>
#include <exception>
#include <string>

#include "propagator.h"

namespace monoprop {
namespace {

template <typename Algebra, typename... Tail>
std::unique_ptr<MonomialPropagator> with_width(Config config, Tail&&... tail) {
  const int slots = 2 * config.num_modes;
  auto make = [&]<int W>() { return std::make_unique<Propagator<Algebra, W>>(std::move(config), tail...); };
  if (slots <= 64) return make.template operator()<1>();
  if (slots <= 128) return make.template operator()<2>();
  if (slots <= 256) return make.template operator()<4>();
  if (slots <= 512) return make.template operator()<8>();
  if (slots <= 1024) return make.template operator()<16>();
  return make.template operator()<32>();
}

}  // namespace

std::unique_ptr<MonomialPropagator> make_propagator(Config config, BasisChange basis_change,
                                                    std::optional<int> logical_num_modes, std::optional<Family> basis) {
  if (config.num_modes <= 0 || config.num_modes > kMaxNumModes)
    throw ArgumentError("num_modes " + std::to_string(config.num_modes) + " is outside 1.." +
                        std::to_string(kMaxNumModes) + ".");
  config.truncation.check();
  if (config.schrodinger_cutoff && *config.schrodinger_cutoff < 0)
    throw ArgumentError("schrodinger_cutoff must be >= 0.");
  const int logical = logical_num_modes.value_or(config.num_modes);
  const Family family = basis.value_or(config.family);
  if (config.family == Family::Pauli)
    return with_width<PauliAlgebra>(std::move(config), std::move(basis_change), logical, family);
  return with_width<MajoranaAlgebra>(std::move(config), std::move(basis_change), logical, family);
}

namespace {

// What a save says of the propagator before its terms: ArgumentError when
// that is out of range.
struct SavedSetup {
  Config config;
  BasisChange change;
  int logical = 0;
  Family basis = Family::Pauli;
};

SavedSetup saved_setup(const SavedState& state) {
  SavedSetup out;
  Config& config = out.config;
  const auto family = state.scalar<std::uint8_t>("family");
  const auto basis = state.scalar<std::uint8_t>("basis");
  if (family > 1 || basis > 1) throw ArgumentError("the save is damaged: it names an unknown algebra.");
  config.family = static_cast<Family>(family);
  out.basis = static_cast<Family>(basis);
  config.num_modes = state.scalar<std::int32_t>("num_modes");
  if (config.num_modes <= 0 || config.num_modes > kMaxNumModes || state.scalar<std::int32_t>("threads") <= 0)
    throw ArgumentError("the save is damaged: its mode or thread count is out of range.");
  for (const std::int32_t mode : state.get<std::int32_t>("occupied")) {
    if (mode < 0 || mode >= config.num_modes)
      throw ArgumentError("the save is damaged: an occupied mode is out of range.");
    config.occupied.push_back(mode);
  }
  if (const auto cutoff = state.scalar<std::int32_t>("schrodinger_cutoff"); cutoff >= 0)
    config.schrodinger_cutoff = cutoff;
  Truncation& t = config.truncation;
  t.cutoff = state.scalar<std::int64_t>("cutoff");
  const auto type = state.scalar<std::uint8_t>("cutoff_type");
  if (t.cutoff < 0 || type > 1) throw ArgumentError("the save is damaged: its cutoff is out of range.");
  t.type = static_cast<CutoffType>(type);
  // NaN: not set.
  if (const double a = state.scalar<double>("lower_atol"); !std::isnan(a)) t.lower_atol = a;
  if (const double a = state.scalar<double>("upper_atol"); !std::isnan(a)) t.upper_atol = a;
  if (state.has("max_error"))  // saves made before the error budget hold none
    if (const double a = state.scalar<double>("max_error"); !std::isnan(a)) t.max_error = a;
  if (state.has("rigorous")) t.rigorous = state.scalar<std::uint8_t>("rigorous") != 0;
  const auto slots = state.get<std::uint32_t>("basis_change_slots");
  std::uint64_t from = 0;
  for (const std::uint64_t end : state.get<std::uint64_t>("basis_change_ends")) {
    if (end < from || end > slots.size()) throw ArgumentError("the save is damaged: its basis change is.");
    out.change.emplace_back(slots.begin() + static_cast<std::ptrdiff_t>(from),
                            slots.begin() + static_cast<std::ptrdiff_t>(end));
    from = end;
  }
  out.logical = state.scalar<std::int32_t>("logical_num_modes");
  return out;
}

}  // namespace

std::unique_ptr<MonomialPropagator> restore_propagator(const SavedState& state, mpi::Comm comm,
                                                       std::optional<int> threads,
                                                       std::optional<std::uint64_t> memory_limit,
                                                       bool truncate_to_fit) {
  // Every rank reads its own part: all learn whether any part failed before
  // the construction communicates.
  SavedSetup setup;
  std::exception_ptr error;
  try {
    if (threads && *threads < 1) throw ArgumentError("threads " + std::to_string(*threads) + " must be >= 1.");
    setup = saved_setup(state);
    setup.config.threads = threads;
    setup.config.memory_limit = memory_limit;  // a budget belongs to the machine: never saved
    setup.config.truncate_to_fit = truncate_to_fit;
  } catch (...) {
    error = std::current_exception();
  }
  state_io::agree(comm, error);
  setup.config.comm = std::move(comm);
  if (setup.config.family == Family::Pauli)
    return with_width<PauliAlgebra>(std::move(setup.config), std::move(setup.change), setup.logical, setup.basis,
                                    state);
  return with_width<MajoranaAlgebra>(std::move(setup.config), std::move(setup.change), setup.logical, setup.basis,
                                     state);
}

}  // namespace monoprop
