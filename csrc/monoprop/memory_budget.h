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
// The limit, in order: the propagator's memory_limit (bytes); else
// monoprop_MEMORY_LIMIT (bytes, decimal digits, read once at construction
// like the other variables); else the default, set afresh when each operation
// starts from the memory available then:
//     limit = min(resident + 0.8 * available, 0.9 * physical)
// with `available` the kernel's MemAvailable (what can be allocated without
// swapping, page cache counted as free), or the room under the cgroup's
// memory.max when that is less. Memory other processes hold is not
// available, so the build stops with a message before the kernel's OOM killer
// picks a victim; the 20% left is room for what others allocate meanwhile and
// for the estimate's error. Several ranks on one node each see the whole
// node's available memory: give them memory_limit or monoprop_MEMORY_LIMIT.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "errors.h"

namespace monoprop {

// The share of the available memory the default budget lets one operation take.
inline constexpr double kAvailableShare = 0.8;

class MemoryBudget {
 public:
  // `given`: the propagator's memory_limit (> 0). Without it, reads
  // monoprop_MEMORY_LIMIT (UsageError naming it for a bad value); without
  // that, sets the default from the memory available now.
  explicit MemoryBudget(std::optional<std::uint64_t> given = std::nullopt);
  MemoryBudget(const MemoryBudget& other)
      : given_(other.given_),
        from_environment_(other.from_environment_),
        from_available_(other.from_available_),
        limit_(other.limit_),
        available_(other.available_),
        held_(other.held_),
        resident_(other.resident_.load(std::memory_order_relaxed)) {}
  MemoryBudget& operator=(const MemoryBudget& other) {
    given_ = other.given_;
    from_environment_ = other.from_environment_;
    from_available_ = other.from_available_;
    limit_ = other.limit_;
    available_ = other.available_;
    held_ = other.held_;
    resident_.store(other.resident_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  std::uint64_t limit() const { return limit_; }
  // The memory_limit given at construction, if any.
  std::optional<std::uint64_t> given() const { return given_; }
  // At the start of an operation: the default limit from the memory
  // available now (a given or environment limit stays), then refresh().
  void start();
  // Reads the resident memory afresh (between layers, on one thread).
  void refresh();
  // Grants `bytes` more (thread-safe); returns false, granting nothing, when
  // the process would pass the limit. Before it refuses, it hands the heap's
  // free pages back to the system and reads the resident memory again, once
  // a reading: pages malloc keeps after a free count as resident, and would
  // refuse a layer that fits.
  bool grant(std::uint64_t bytes);
  // resident + granted: what the process would hold.
  std::uint64_t expected() const {
    return resident_.load(std::memory_order_relaxed) + granted_.load(std::memory_order_relaxed);
  }
  bool granted_any() const { return granted_.load(std::memory_order_relaxed) != 0; }
  // Where the limit comes from and how to change it, for messages:
  // "memory budget of 1.2 GB (...)".
  std::string describe() const;
  // The default from its readings (all in bytes; 0 where unknown), for tests.
  void set_default(std::uint64_t resident, std::uint64_t available, std::uint64_t physical);

 private:
  std::optional<std::uint64_t> given_;
  bool from_environment_ = false;
  bool from_available_ = false;  // the default, and set by the available memory
  std::uint64_t limit_ = 0;
  std::uint64_t available_ = 0, held_ = 0;  // the default's readings
  std::atomic<std::uint64_t> resident_{0};
  std::atomic<std::uint64_t> granted_{0};
  std::mutex reclaiming_;
  bool reclaimed_ = false;  // since the last reading, under reclaiming_

  bool try_grant(std::uint64_t bytes);
};

// Resident memory of this process, in bytes (0 where it cannot be read).
std::uint64_t resident_bytes();

// The "MemAvailable:" line of /proc/meminfo's text, in bytes (0 when absent).
std::uint64_t meminfo_available(const std::string& text);

// The memory that can be allocated now: MemAvailable, or the room under the
// cgroup's limit when that is less (0 when neither can be read).
std::uint64_t available_bytes();

// "1.2 GB" and the like, for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace monoprop
