// The team of threads an operation runs on (team.h).
#include "monoprop/team.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "cpp/check.h"

using namespace monoprop;
using namespace monoprop_test;

// The team's barrier against what a barrier promises: after it, every
// thread sees what every other wrote before it, phase after phase, also with
// more threads than cores (the waiters then sleep); and a thread that fails
// takes the whole team out at its next barrier, its exception rethrown.
TEST(test_team_barrier) {
  for (const int threads : {2, 3, 8}) {
    std::vector<int> written(static_cast<std::size_t>(threads), -1);
    std::vector<int> wrong(static_cast<std::size_t>(threads), 0);
    Team::run(threads, false, [&](int t, Team& team) {
      for (int phase = 0; phase < 2000; ++phase) {
        written[static_cast<std::size_t>(t)] = phase;
        team.sync(t);
        for (const int w : written) wrong[static_cast<std::size_t>(t)] += w != phase;
        team.sync(t);
      }
    });
    for (const int w : wrong) CHECK(w == 0);
    bool rethrown = false;
    std::vector<int> phases(static_cast<std::size_t>(threads), 0);
    try {
      Team::run(threads, false, [&](int t, Team& team) {
        for (int phase = 0; phase < 100; ++phase) {
          if (t == 1 && phase == 7) throw std::runtime_error("thread 1 stops");
          phases[static_cast<std::size_t>(t)] = phase;
          team.sync(t);
        }
      });
    } catch (const std::runtime_error& e) {
      rethrown = std::string(e.what()) == "thread 1 stops";
    }
    CHECK(rethrown);
    for (int t = 0; t < threads; ++t) CHECK(phases[static_cast<std::size_t>(t)] == (t == 1 ? 6 : 7));
  }
}
