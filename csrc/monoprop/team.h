// One OpenMP team of T threads for the whole of an operation, thread t
// working shard t, with barriers between the phases of each step.
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
  // Runs body(t) on threads t = 0..T-1 of one team; rethrows a failure.
  template <typename Body>
  static void run(int threads, Body&& body) {
    Team team(threads);
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      team.member(t, body);
    }
    team.rethrow();
  }

  // A barrier of the whole team; leaves the body when a thread has failed.
  void sync(int t) {
#pragma omp barrier
    if (failed_[epoch_[t].value++ & 1].load(std::memory_order_relaxed)) throw Abandoned{};
  }

 private:
  struct Abandoned {};
  struct alignas(64) Epoch {  // one cache line per thread
    unsigned value = 0;
  };

  explicit Team(int threads) : errors_(threads), epoch_(threads) {}

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

  std::atomic<bool> failed_[2] = {false, false};
  std::vector<std::exception_ptr> errors_;
  std::vector<Epoch> epoch_;
};

}  // namespace monoprop
