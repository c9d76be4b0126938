// How much memory a build may take before it stops with a clear error.
//
// A build that outgrows the machine would otherwise be killed by the operating
// system with no message. Before a layer grows the stores, each shard asks the
// budget for what it is about to add (births, index growth, graph bytes); the
// budget compares the process's resident memory plus what it granted since it
// last read it with the limit, and refuses with MemoryBudgetError, which the
// operation turns into a rollback: the propagator is left as it was before
// the call. Construction asks it first whether the thread count's empty
// shards fit (propagator_setup.h), before any shard exists.
//
// The limit is monoprop_MEMORY_LIMIT in bytes (decimal digits, read once at
// construction like the other variables), else 90% of the physical memory
// (or of the cgroup's limit, when that is lower).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "errors.h"

namespace monoprop {

class MemoryBudget {
 public:
  // Reads monoprop_MEMORY_LIMIT; throws UsageError naming it for a bad value.
  MemoryBudget();
  MemoryBudget(const MemoryBudget& other) : limit_(other.limit_) {}
  MemoryBudget& operator=(const MemoryBudget& other) {
    limit_ = other.limit_;
    return *this;
  }

  std::uint64_t limit() const { return limit_; }
  // Reads the resident memory afresh (between layers, on one thread).
  void refresh();
  // Grants `bytes` more (thread-safe); returns false, granting nothing, when
  // the process would pass the limit.
  bool grant(std::uint64_t bytes);
  // resident + granted: what the process would hold.
  std::uint64_t expected() const { return resident_ + granted_.load(std::memory_order_relaxed); }
  bool granted_any() const { return granted_.load(std::memory_order_relaxed) != 0; }

 private:
  std::uint64_t limit_ = 0;
  std::uint64_t resident_ = 0;
  std::atomic<std::uint64_t> granted_{0};
};

// Resident memory of this process, in bytes (0 where it cannot be read).
std::uint64_t resident_bytes();

// "1.2 GB" and the like, for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace monoprop
