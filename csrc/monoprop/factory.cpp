// Chooses the key width (64-bit words) and the algebra at construction.
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
  if (config.truncation.cutoff < 0)
    throw ArgumentError("cutoff " + std::to_string(config.truncation.cutoff) + " must be >= 0.");
  if (config.schrodinger_cutoff && *config.schrodinger_cutoff < 0)
    throw ArgumentError("schrodinger_cutoff must be >= 0.");
  const int logical = logical_num_modes.value_or(config.num_modes);
  const Family family = basis.value_or(config.family);
  if (config.family == Family::Pauli)
    return with_width<PauliAlgebra>(std::move(config), std::move(basis_change), logical, family);
  return with_width<MajoranaAlgebra>(std::move(config), std::move(basis_change), logical, family);
}

}  // namespace monoprop
