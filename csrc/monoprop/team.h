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
#pragma once

#include <omp.h>

#include <atomic>
#include <exception>
#include <vector>

namespace monoprop {

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
#pragma omp barrier
    if (failed_[epoch_[t].value++ & 1].load(std::memory_order_relaxed)) throw Abandoned{};
  }

 private:
  struct Abandoned {};
  struct alignas(64) Epoch {  // one cache line per thread
    unsigned value = 0;
  };

  Team(int size, int shards) : size_(size), shards_(shards), errors_(size), epoch_(size) {}

  template <typename Body>
  void member(int t, Body& body) {
    try {
      body(t, *this);
      sync(t);  // the final barrier, so that a failure in the last phase is met
    } catch (const Abandoned&) {
    } catch (...) {
      errors_[t] = std::current_exception();
      failed_[epoch_[t].value & 1].store(true, std::memory_order_relaxed);
#pragma omp barrier
    }
  }

  void rethrow() const {
    for (const auto& e : errors_)
      if (e) std::rethrow_exception(e);
  }

  int size_, shards_;
  std::atomic<bool> failed_[2] = {false, false};
  std::vector<std::exception_ptr> errors_;
  std::vector<Epoch> epoch_;
};

}  // namespace monoprop
