// One OpenMP team of T threads for the whole of an operation, thread t
// working shard t, with barriers between the phases of each step.
//
// An operation whose work is small runs instead on the calling thread, the
// team's primary, which then works every shard in ascending order, phase by
// phase: the arithmetic of each shard is the same, so the results are bitwise
// those of the full team. This matters inside an optimiser, which replays a
// small graph thousands of times: waking T threads and meeting at a barrier
// per layer costs more than the replay, and threads left spinning between
// replays compete with the optimiser's own.
//
// An exception cannot leave an OpenMP region, and a thread that stops early
// would leave the others waiting at the next barrier. So a thread that fails
// records its exception, raises a flag, and meets the others at exactly one
// more barrier; every thread checks the flag right after each barrier and
// leaves together. The flag alternates between two cells by barrier count so
// that a fast thread raising it in the next phase cannot be seen by a slow one
// still checking the previous barrier. After the region the failure of the
// lowest-numbered thread is rethrown (deterministic, whatever the timing).
//
// The barrier is the team's own rather than OpenMP's: a replay meets at one
// or two barriers per layer, thousands of times a call when the layers are
// small, and OpenMP's barrier costs a microsecond or more where a count on
// one cache line costs a fraction of that.
#pragma once

#include <omp.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace monoprop {

// A sense-reversing barrier: each arriving thread counts down; the last one
// resets the count and advances the phase, which the others wait on. A waiter
// spins a while (a barrier between balanced phases opens within
// microseconds), then sleeps until the phase moves, so that a team with more
// threads than cores, or on a busy machine, leaves the cores to the threads
// that still work. As with OpenMP's barrier, OMP_WAIT_POLICY=PASSIVE makes
// waiters sleep at once: for runs that share their cores, such as several
// MPI ranks on one machine.
class Barrier {
 public:
  explicit Barrier(int size) : size_(size), spins_(spins(size)), waiting_(size) {}

  void wait() {
    const unsigned phase = phase_.load(std::memory_order_relaxed);
    if (waiting_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      waiting_.store(size_, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      phase_.notify_all();  // no system call unless a thread sleeps
      return;
    }
    for (unsigned spin = 0; spin < spins_; ++spin) {
      if (phase_.load(std::memory_order_acquire) != phase) return;
      relax();
    }
    phase_.wait(phase, std::memory_order_acquire);
  }

 private:
  // Read once: a team is made for every operation, thousands a second in an
  // optimiser's loop.
  static unsigned spins(int size) {
    static const bool passive = [] {
      const char* policy = std::getenv("OMP_WAIT_POLICY");
      return policy && (std::string_view(policy) == "PASSIVE" || std::string_view(policy) == "passive");
    }();
    static const unsigned cores = std::thread::hardware_concurrency();
    if (passive) return 0;
    return static_cast<unsigned>(size) > cores ? 64 : 1u << 12;
  }
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  const int size_;
  const unsigned spins_;  // tens of microseconds; a few when the team has more threads than cores
  alignas(64) std::atomic<int> waiting_;
  alignas(64) std::atomic<unsigned> phase_{0};
};

class Team {
 public:
  // Runs body(t, team) on threads t = 0..threads-1 of one team, or on the
  // calling thread alone (as t = 0 of a team of one) when `alone`; rethrows a failure.
  template <typename Body>
  static void run(int shards, bool alone, Body&& body) {
    if (alone || shards == 1) {
      Team team(1, shards);
      body(0, team);
      return;
    }
    Team team(shards, shards);
#pragma omp parallel num_threads(shards)
    {
      const int t = omp_get_thread_num();
      team.member(t, body);
    }
    team.rethrow();
  }

  int size() const { return size_; }
  // Calls f(s) for the shards thread t works, in ascending order.
  template <typename F>
  void each(int t, F&& f) const {
    for (int s = t; s < shards_; s += size_) f(s);
  }

  // A barrier of the whole team; leaves the body when a thread has failed.
  void sync(int t) {
    if (size_ == 1) return;
    barrier_.wait();
    if (failed_[epoch_[t].value++ & 1].load(std::memory_order_relaxed)) throw Abandoned{};
  }

 private:
  struct Abandoned {};
  struct alignas(64) Epoch {  // one cache line per thread
    unsigned value = 0;
  };

  Team(int size, int shards) : size_(size), shards_(shards), barrier_(size), errors_(size), epoch_(size) {}

  template <typename Body>
  void member(int t, Body& body) {
    try {
      body(t, *this);
      sync(t);  // the final barrier, so that a failure in the last phase is met
    } catch (const Abandoned&) {
    } catch (...) {
      errors_[t] = std::current_exception();
      failed_[epoch_[t].value & 1].store(true, std::memory_order_relaxed);
      barrier_.wait();
    }
  }

  void rethrow() const {
    for (const auto& e : errors_)
      if (e) std::rethrow_exception(e);
  }

  int size_, shards_;
  Barrier barrier_;
  std::atomic<bool> failed_[2] = {false, false};
  std::vector<std::exception_ptr> errors_;
  std::vector<Epoch> epoch_;
};

// Part t of `size` of n items: [lo, hi), the parts in order and within one of each other in size.
inline std::pair<std::size_t, std::size_t> chunk(int t, int size, std::size_t n) {
  const auto T = static_cast<std::size_t>(size);
  return {n * static_cast<std::size_t>(t) / T, n * (static_cast<std::size_t>(t) + 1) / T};
}

}  // namespace monoprop
