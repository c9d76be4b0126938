// Ctrl-C: letting a caller stop a long operation.
//
// The caller installs a check ("interrupted?", for Python: a pending signal).
// Only the operation's calling thread, the team's primary, asks it, between
// layers and inside long ones, at most once per interval (0.1 s): a poll
// counts the work done since the last one and reads the clock only every
// `stride` items (kWork), so the hot loops and tiny replays pay a counter and
// a flag. When the check says
// yes, the primary raises the flag and throws Interrupted; the other threads
// see the flag at their own next poll (or at the next barrier, through the
// team's failure path) and leave together. Builds and propagate then roll
// back like a refusal of the memory budget; replays change nothing that
// outlives them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "errors.h"

namespace monoprop {

// Says whether the caller asked to stop; called on the operation's calling thread only.
using InterruptCheck = std::function<bool()>;

class Interrupts {
 public:
  using Clock = std::chrono::steady_clock;
  // Items of work (terms scanned, lookups, graph entries) between two reads of the clock.
  static constexpr std::int64_t kWork = std::int64_t{1} << 16;

  Interrupts() = default;
  Interrupts(const Interrupts& other) : check_(other.check_), interval_(other.interval_), stride_(other.stride_) {}
  Interrupts& operator=(const Interrupts& other) {
    check_ = other.check_;
    interval_ = other.interval_;
    stride_ = other.stride_;
    return *this;
  }

  // Null stops the checks. Tests ask at every poll with interval 0 and stride 1.
  void set_check(InterruptCheck check, Clock::duration interval, std::int64_t stride) {
    check_ = std::move(check);
    interval_ = interval;
    stride_ = stride;
  }
  // At the start of an operation, on the calling thread: the check is first
  // asked once an interval has passed.
  void arm() {
    raised_.store(false, std::memory_order_relaxed);
    countdown_ = stride_;
    asked_ = Clock::now();
  }
  // After `work` more items. On the primary (the calling thread) asks the
  // check when due; on every thread throws Interrupted once it said yes.
  void poll(bool primary, std::size_t work) {
    if (primary && check_ && (countdown_ -= static_cast<std::int64_t>(work)) <= 0) due();
    if (raised_.load(std::memory_order_relaxed)) throw Interrupted("interrupted");
  }

 private:
  void due() {
    countdown_ = stride_;
    const Clock::time_point now = Clock::now();
    if (now - asked_ < interval_) return;
    asked_ = now;
    if (check_()) raised_.store(true, std::memory_order_relaxed);
  }

  InterruptCheck check_;
  Clock::duration interval_ = std::chrono::milliseconds(100);
  std::int64_t stride_ = kWork;
  std::atomic<bool> raised_{false};
  std::int64_t countdown_ = kWork;  // the primary's alone
  Clock::time_point asked_;
};

}  // namespace monoprop
