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

// An append that would exceed what a shard's index type can address; refused
// before anything changes.
struct ShardCeilingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A build that would pass the memory budget (memory_budget.h); refused
// before it grows, and the operation rolls back (Python MemoryError).
struct MemoryBudgetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The caller's interrupt check (interrupt.h) said stop: a build or propagate
// rolls back, a replay changes nothing (Python: the pending signal's
// exception, KeyboardInterrupt for Ctrl-C).
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
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
