// mpi::Comm over MPI (built with MONOPROP_MPI=ON).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "comm.h"

namespace monoprop::mpi {
namespace {
// Tag of the engine's point-to-point messages on the caller's communicator.
constexpr int kTag = 0x6d70;

[[noreturn]] void fail(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}
void check(const char* call, int code) {
  if (code != MPI_SUCCESS) fail(call, code);
}
}  // namespace

struct Comm::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::uint64_t sent = 0;
};

bool available() { return true; }

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

void init(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    std::fprintf(stderr, "monoprop: MPI provides thread level %d, below MPI_THREAD_FUNNELED; aborting.\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

Comm Comm::from_handle(const void* handle) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw std::runtime_error("MPI is not initialised (or already finalised); import mpi4py's MPI before passing comm.");
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_FUNNELED)
    throw std::runtime_error(
        "MPI was initialised with MPI_THREAD_SINGLE, but monoprop needs MPI_THREAD_FUNNELED or higher; keep "
        "mpi4py's default thread level or set mpi4py.rc.thread_level = 'funneled' before 'from mpi4py import MPI'.");
  Comm out;
  out.impl_ = std::make_shared<Impl>();
  out.impl_->comm = *static_cast<const MPI_Comm*>(handle);
  if (out.impl_->comm == MPI_COMM_NULL) throw std::invalid_argument("comm is MPI.COMM_NULL; pass a live communicator.");
  check("MPI_Comm_rank", MPI_Comm_rank(out.impl_->comm, &out.impl_->rank));
  check("MPI_Comm_size", MPI_Comm_size(out.impl_->comm, &out.impl_->size));
  return out;
}

int Comm::rank() const { return impl_ ? impl_->rank : 0; }
int Comm::size() const { return impl_ ? impl_->size : 1; }

void Comm::check_thread(const char* operation) const {
  if (!impl_) return;
  int main_thread = 0;
  MPI_Is_thread_main(&main_thread);
  if (main_thread) return;
  std::fprintf(stderr,
               "monoprop: rank %d: %s was called from a thread that did not initialise MPI; only that thread may "
               "call monoprop on a propagator with a communicator. Aborting this process.\n",
               impl_->rank, operation);
  std::fflush(stderr);
  std::abort();
}

void Comm::sum(double* values, std::size_t n) const {
  if (!distributed() || n == 0) return;
  check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, impl_->comm));
}

void Comm::max(std::uint64_t* values, std::size_t n) const {
  if (!distributed() || n == 0) return;
  check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(n), MPI_UINT64_T, MPI_MAX, impl_->comm));
}

void Comm::exchange(std::vector<Parcel>& parcels, std::size_t record) const {
  if (parcels.empty()) return;
  MPI_Datatype type;
  check("MPI_Type_contiguous", MPI_Type_contiguous(static_cast<int>(record), MPI_BYTE, &type));
  MPI_Type_commit(&type);
  auto count_of = [](std::size_t n) {
    if (n > static_cast<std::size_t>(INT32_MAX))
      throw std::runtime_error("an exchange of " + std::to_string(n) +
                               " records exceeds one MPI message; run more ranks.");
    return static_cast<int>(n);
  };
  std::vector<MPI_Request> requests;
  for (const Parcel& p : parcels)
    if (!p.received) {
      requests.emplace_back();
      check("MPI_Irecv", MPI_Irecv(p.into, count_of(p.expect), type, p.rank, kTag, impl_->comm, &requests.back()));
    }
  for (const Parcel& p : parcels) {
    requests.emplace_back();
    check("MPI_Isend", MPI_Isend(p.send, count_of(p.send_records), type, p.rank, kTag, impl_->comm, &requests.back()));
    impl_->sent += p.send_records * record;
  }
  // Sizes not known in advance: probe each such peer's message first.
  for (Parcel& p : parcels) {
    if (!p.received) continue;
    MPI_Message message;
    MPI_Status status;
    check("MPI_Mprobe", MPI_Mprobe(p.rank, kTag, impl_->comm, &message, &status));
    int count = 0;
    MPI_Get_count(&status, type, &count);
    p.received->resize(static_cast<std::size_t>(count) * record);
    check("MPI_Mrecv", MPI_Mrecv(p.received->data(), count, type, &message, MPI_STATUS_IGNORE));
  }
  check("MPI_Waitall", MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  MPI_Type_free(&type);
}

void Comm::abort(const std::string& message) const {
  std::fprintf(stderr, "monoprop: rank %d: %s\n", rank(), message.c_str());
  std::fflush(stderr);
  // The launcher forwards each rank's stderr through a pipe and stops doing
  // so once MPI_Abort has it kill the ranks: give it a moment to pass the
  // message on first.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  MPI_Abort(impl_ ? impl_->comm : MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::uint64_t Comm::bytes_sent() const { return impl_ ? impl_->sent : 0; }

}  // namespace monoprop::mpi
