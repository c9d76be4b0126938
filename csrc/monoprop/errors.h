// Exceptions of the core, by what the caller can do about them.
#pragma once

#include <stdexcept>

namespace monoprop {

// Argument errors: raised before anything changes (Python ValueError).
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Calls that are wrong for the propagator's current state, also raised
// before anything changes (Python RuntimeError): wrong parameter-vector
// length, propagate on a graph, an unknown term in an update.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An operation stopped part-way that leaves the propagator as it was: a
// build or propagate rolls back what it appended, a replay wrote nothing that
// outlives it. The propagator stays usable.
struct Refusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An append that would exceed what a shard's index type can address.
struct ShardCeilingError : Refusal {
  using Refusal::Refusal;
};

// A build that would pass the memory budget (memory_budget.h), refused
// before it grows; or a construction whose thread count alone would pass it,
// refused before any shard exists (Python MemoryError).
struct MemoryBudgetError : Refusal {
  using Refusal::Refusal;
};

// The caller's interrupt check (interrupt.h) said stop (Python: the pending
// signal's exception, KeyboardInterrupt for Ctrl-C).
struct Interrupted : Refusal {
  using Refusal::Refusal;
};

// A raw-layout accessor on a propagator with more than one shard (T > 1),
// where there is no single store to return. Changes nothing.
struct MultiShardUnsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Any use of a propagator after an operation failed half-way through.
struct InvalidPropagator : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace monoprop
