// The MPI communicator a propagator distributes over, and the few exchanges
// the engine makes through it. Without MONOPROP_MPI every Comm is the single
// rank of a serial run and nothing here communicates.
//
// Only the thread that initialised MPI calls MPI, from outside OpenMP
// regions: inside an operation that is the team's primary (thread 0), while
// the other threads wait at a barrier. So MPI_THREAD_FUNNELED suffices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace monoprop::mpi {

// Whether this build has MPI (MONOPROP_MPI=ON).
bool available();

// MPI_Get_library_version of the linked MPI ("" without MPI).
std::string library_version();

// Initialises MPI for a C++ program that did not: requests
// MPI_THREAD_FUNNELED and aborts if MPI provides less. Does nothing when MPI
// is already initialised (by mpi4py, for example) or the build has no MPI.
void init(int* argc, char*** argv);

// One peer's part of an exchange: what goes to `rank`, and where what that
// rank sends lands: `received`, resized to what arrived, or when that is
// null, `into` (whose size is known: exactly `expect` records).
struct Parcel {
  int rank = 0;
  const void* send = nullptr;
  std::size_t send_records = 0;
  void* into = nullptr;
  std::size_t expect = 0;
  std::vector<std::byte>* received = nullptr;
};

class Comm {
 public:
  // The single rank of a serial run.
  Comm() = default;
  // Wraps the communicator whose handle (an MPI_Comm) is at `handle`; the
  // communicator must outlive every propagator built on it. Checks that MPI
  // is initialised with at least MPI_THREAD_FUNNELED, without communicating.
  static Comm from_handle(const void* handle);

  int rank() const;
  int size() const;
  bool distributed() const { return size() > 1; }
  bool attached() const { return impl_ != nullptr; }

  // Aborts this process, without communicating, when the calling thread is
  // not the one that initialised MPI (a no-op for a serial Comm).
  void check_thread(const char* operation) const;

  // In-place global reductions (no-ops on one rank).
  void sum(double* values, std::size_t n) const;
  void max(std::uint64_t* values, std::size_t n) const;

  // Point-to-point: each parcel's records (`record` bytes each) go to its
  // rank, and that rank's records to this one land in the parcel.
  void exchange(std::vector<Parcel>& parcels, std::size_t record) const;

  // Prints "monoprop: rank r: <message>" to stderr and aborts every rank.
  [[noreturn]] void abort(const std::string& message) const;

  // Payload bytes this rank sent through this Comm and its copies.
  std::uint64_t bytes_sent() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace monoprop::mpi
