// Chooses the key width (64-bit words) and the algebra at construction.
#include <string>

#include "propagator.h"

namespace monoprop {
namespace {

template <typename Algebra>
std::unique_ptr<MonomialPropagator> with_width(Config config) {
  const int slots = 2 * config.num_modes;
  if (slots <= 64) return std::make_unique<Propagator<Algebra, 1>>(std::move(config));
  if (slots <= 128) return std::make_unique<Propagator<Algebra, 2>>(std::move(config));
  if (slots <= 256) return std::make_unique<Propagator<Algebra, 4>>(std::move(config));
  if (slots <= 512) return std::make_unique<Propagator<Algebra, 8>>(std::move(config));
  if (slots <= 1024) return std::make_unique<Propagator<Algebra, 16>>(std::move(config));
  return std::make_unique<Propagator<Algebra, 32>>(std::move(config));
}

}  // namespace

std::unique_ptr<MonomialPropagator> make_propagator(Config config) {
  if (config.num_modes <= 0 || config.num_modes > kMaxNumModes)
    throw ArgumentError("num_modes " + std::to_string(config.num_modes) + " is outside 1.." +
                        std::to_string(kMaxNumModes) + ".");
  if (config.truncation.cutoff < 0)
    throw ArgumentError("cutoff " + std::to_string(config.truncation.cutoff) + " must be >= 0.");
  if (config.schrodinger_cutoff && *config.schrodinger_cutoff < 0)
    throw ArgumentError("schrodinger_cutoff must be >= 0.");
  if (config.family == Family::Pauli) return with_width<PauliAlgebra>(std::move(config));
  return with_width<MajoranaAlgebra>(std::move(config));
}

}  // namespace monoprop
