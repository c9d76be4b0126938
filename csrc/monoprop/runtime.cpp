// What a propagator fixes at construction: its thread budget and the
// description of the caller's basis.
#include <omp.h>

#include <cstdlib>
#include <string>

#include "monomial_propagator.h"

namespace monoprop {

int thread_budget_from_environment() {
  const char* raw = std::getenv("monoprop_NUM_THREADS");
  if (raw == nullptr) return omp_get_max_threads();
  const std::string value(raw);
  // Digits only: no sign, spaces, lists or hex; leading zeros are fine.
  long long n = 0;
  bool digits = !value.empty();
  for (const char ch : value) {
    if (ch < '0' || ch > '9') {
      digits = false;
      break;
    }
    n = n * 10 + (ch - '0');
    if (n > 2147483647LL) break;  // overflow: refused below, and no wrap-around
  }
  if (!digits || n < 1 || n > 2147483647LL)
    throw UsageError("monoprop_NUM_THREADS='" + value +
                     "' is not a thread count: it must be decimal digits for a number from 1 to 2147483647 "
                     "(unset it to use the OpenMP default).");
  return static_cast<int>(n);
}

MonomialPropagator::MonomialPropagator(Config config, BasisChange basis_change, int logical_num_modes, Family basis)
    : config_(std::move(config)),
      num_threads_(config_.threads ? *config_.threads : thread_budget_from_environment()),
      basis_change_(std::move(basis_change)),
      logical_num_modes_(logical_num_modes),
      basis_(basis) {
  if (logical_num_modes_ < 0)
    throw ArgumentError("logical_num_modes " + std::to_string(logical_num_modes_) + " must be >= 0.");
  if (!basis_change_.empty() && basis_change_.size() != 2 * static_cast<std::size_t>(logical_num_modes_))
    throw ArgumentError("Basis change must have length " + std::to_string(2 * logical_num_modes_) + ", but got " +
                        std::to_string(basis_change_.size()) + ".");
  const auto slots = static_cast<std::uint32_t>(2 * config_.num_modes);
  for (const auto& image : basis_change_)
    for (const std::uint32_t s : image)
      if (s >= slots)
        throw ArgumentError("basis change slot " + std::to_string(s) + " is out of range; must be less than " +
                            std::to_string(slots) + ".");
}

}  // namespace monoprop
