// mpi::Comm for builds without MPI: every Comm is the single rank of a serial run.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "comm.h"

namespace monoprop::mpi {

struct Comm::Impl {};

bool available() { return false; }
std::string library_version() { return ""; }
void init(int*, char***) {}

Comm Comm::from_handle(const void*) {
  throw std::runtime_error(
      "this monoprop build has no MPI, so it cannot use a communicator; pass comm=None, or rebuild with "
      "MONOPROP_MPI=ON (pip install -C cmake.define.MONOPROP_MPI=ON '.[mpi]').");
}

int Comm::rank() const { return 0; }
int Comm::size() const { return 1; }
void Comm::check_thread(const char*) const {}
void Comm::sum(double*, std::size_t) const {}
void Comm::max(std::uint64_t*, std::size_t) const {}
void Comm::exchange(std::vector<Parcel>& parcels, std::size_t) const {
  if (!parcels.empty()) throw std::logic_error("a serial Comm has no peers to exchange with.");
}
void Comm::abort(const std::string& message) const {
  std::fprintf(stderr, "monoprop: rank 0: %s\n", message.c_str());
  std::abort();
}
std::uint64_t Comm::bytes_sent() const { return 0; }

}  // namespace monoprop::mpi
