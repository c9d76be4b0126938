// Ranks as threads of one process, for tests of the collective parts
// (rank_layout.h) in a build without MPI.
//
// core_tests links tests/cpp/ranks.cpp, which defines mpi::Comm (comm.h) in
// place of comm_serial.cpp: the linker takes every Comm symbol from it and so
// leaves comm_serial.cpp's object out of the static core. A Comm made by
// run_ranks is one rank of a world of threads; every other Comm (made by
// Comm()) is the serial one, exactly as comm_serial.cpp has it, so the other
// tests see no difference.
//
// Every collective (sum, max, exchange) is a meeting of all the ranks, as
// the parts call them (each rank makes the same calls in the same order); an
// exchange checks what MPI would only hang on or truncate: a parcel to a
// peer that sends none back, a message longer than its receive buffer. A
// rank that waits a minute at a meeting aborts the run.
#pragma once

#include <functional>

#include "monoprop/comm.h"

namespace monoprop_test {

// Runs body(comm, rank) for every rank of a world of `ranks` on a thread of
// its own, and returns once all have returned. An exception on a rank aborts.
void run_ranks(int ranks, const std::function<void(const monoprop::mpi::Comm&, int)>& body);

}  // namespace monoprop_test
