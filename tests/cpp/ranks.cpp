// mpi::Comm for core_tests: the serial Comm, and ranks as threads (ranks.h).
#include "ranks.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace monoprop_test {
namespace {

[[noreturn]] void fail(int rank, const std::string& message) {
  std::fprintf(stderr, "test ranks: rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  std::abort();
}

// The threads' world: a barrier, and what each rank posts for the meeting at hand.
class World {
 public:
  explicit World(int ranks) : ranks_(ranks), posted_(static_cast<std::size_t>(ranks)) {}
  int ranks() const { return ranks_; }

  // Waits until every rank has come.
  void meet(int rank) {
    std::unique_lock lock(mutex_);
    const unsigned long generation = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      woken_.notify_all();
      return;
    }
    if (!woken_.wait_for(lock, std::chrono::minutes(1), [&] { return generation_ != generation; }))
      fail(rank, "waited a minute for the other ranks at a collective (one made fewer calls?)");
  }

  // What a rank posts for a meeting: the data of a reduction, or its parcels.
  enum class Kind { Sum, Max, Exchange };
  struct Post {
    Kind kind = Kind::Sum;
    const void* values = nullptr;
    std::size_t n = 0;
    std::vector<monoprop::mpi::Parcel>* parcels = nullptr;
    std::size_t record = 0;
  };
  Post& post(int rank) { return posted_[static_cast<std::size_t>(rank)]; }

 private:
  const int ranks_;
  std::mutex mutex_;
  std::condition_variable woken_;
  int arrived_ = 0;
  unsigned long generation_ = 0;
  std::vector<Post> posted_;
};

struct Handle {
  World* world;
  int rank;
};

// All ranks' values folded in rank order into every rank's, so that each
// rank holds the same sums.
template <typename T, typename Combine>
void reduce(World& world, int rank, World::Kind kind, T* values, std::size_t n, Combine&& combine) {
  world.post(rank) = {kind, values, n, nullptr, 0};
  world.meet(rank);
  for (int r = 0; r < world.ranks(); ++r)
    if (world.post(r).kind != kind || world.post(r).n != n)
      fail(rank, "a reduction of " + std::to_string(n) + " values met another collective or size");
  const T* first = static_cast<const T*>(world.post(0).values);
  std::vector<T> total(first, first + n);
  for (int r = 1; r < world.ranks(); ++r) {
    const T* theirs = static_cast<const T*>(world.post(r).values);
    for (std::size_t i = 0; i < n; ++i) total[i] = combine(total[i], theirs[i]);
  }
  world.meet(rank);  // every rank has read the others' values
  std::copy(total.begin(), total.end(), values);
}

}  // namespace
}  // namespace monoprop_test

namespace monoprop::mpi {

struct Comm::Impl {
  monoprop_test::World* world;
  int rank;
  std::uint64_t sent = 0;
};

bool available() { return false; }
std::string library_version() { return ""; }
void init(int*, char***) {}

// Only run_ranks makes a Comm from a handle: its own.
Comm Comm::from_handle(const void* handle) {
  if (!handle)
    throw std::runtime_error(
        "this monoprop build has no MPI, so it cannot use a communicator; pass comm=None, or rebuild with "
        "MONOPROP_MPI=ON (pip install -C cmake.define.MONOPROP_MPI=ON '.[mpi]').");
  const auto* h = static_cast<const monoprop_test::Handle*>(handle);
  Comm comm;
  comm.impl_ = std::make_shared<Impl>(Impl{h->world, h->rank});
  return comm;
}

int Comm::rank() const { return impl_ ? impl_->rank : 0; }
int Comm::size() const { return impl_ ? impl_->world->ranks() : 1; }
void Comm::check_thread(const char*) const {}

void Comm::sum(double* values, std::size_t n) const {
  if (impl_)
    monoprop_test::reduce(*impl_->world, impl_->rank, monoprop_test::World::Kind::Sum, values, n,
                          [](double x, double y) { return x + y; });
}

void Comm::max(std::uint64_t* values, std::size_t n) const {
  if (impl_)
    monoprop_test::reduce(*impl_->world, impl_->rank, monoprop_test::World::Kind::Max, values, n,
                          [](std::uint64_t x, std::uint64_t y) { return x > y ? x : y; });
}

void Comm::exchange(std::vector<Parcel>& parcels, std::size_t record) const {
  if (!impl_) {
    if (!parcels.empty()) throw std::logic_error("a serial Comm has no peers to exchange with.");
    return;
  }
  monoprop_test::World& world = *impl_->world;
  const int me = impl_->rank;
  world.post(me) = {monoprop_test::World::Kind::Exchange, nullptr, 0, &parcels, record};
  world.meet(me);
  for (int r = 0; r < world.ranks(); ++r)
    if (world.post(r).kind != monoprop_test::World::Kind::Exchange || world.post(r).record != record)
      monoprop_test::fail(me, "an exchange met another collective, or records of another size");
  // The k-th parcel to a peer takes the k-th of that peer's parcels here, as
  // MPI's ordered messages of one tag would.
  const auto R = static_cast<std::size_t>(world.ranks());
  std::vector<std::size_t> taken(R, 0);
  for (Parcel& p : parcels) {
    if (p.rank < 0 || p.rank >= world.ranks() || p.rank == me)
      monoprop_test::fail(me, "a parcel to rank " + std::to_string(p.rank));
    const monoprop_test::World::Post& peer = world.post(p.rank);
    const Parcel* from = nullptr;
    std::size_t seen = 0;
    for (const Parcel& q : *peer.parcels)
      if (q.rank == me && seen++ == taken[static_cast<std::size_t>(p.rank)]) {
        from = &q;
        break;
      }
    if (!from) monoprop_test::fail(me, "rank " + std::to_string(p.rank) + " sends nothing back");
    ++taken[static_cast<std::size_t>(p.rank)];
    const std::size_t bytes = from->send_records * record;
    if (p.received) {
      p.received->resize(bytes);
      if (bytes) std::memcpy(p.received->data(), from->send, bytes);
    } else {
      if (from->send_records > p.expect)
        monoprop_test::fail(me, std::to_string(from->send_records) + " records from rank " + std::to_string(p.rank) +
                                    " where " + std::to_string(p.expect) + " were expected");
      if (bytes) std::memcpy(p.into, from->send, bytes);
    }
    impl_->sent += p.send_records * record;
  }
  // Every parcel sent here was taken.
  for (std::size_t r = 0; r < R; ++r) {
    if (static_cast<int>(r) == me) continue;
    std::size_t sent_here = 0;
    for (const Parcel& q : *world.post(static_cast<int>(r)).parcels) sent_here += q.rank == me;
    if (sent_here != taken[r]) monoprop_test::fail(me, "a parcel from rank " + std::to_string(r) + " was not taken");
  }
  world.meet(me);  // every rank has copied what was sent to it
}

void Comm::abort(const std::string& message) const {
  std::fprintf(stderr, "monoprop: rank %d: %s\n", rank(), message.c_str());
  std::abort();
}

std::uint64_t Comm::bytes_sent() const { return impl_ ? impl_->sent : 0; }

}  // namespace monoprop::mpi

namespace monoprop_test {

void run_ranks(int ranks, const std::function<void(const monoprop::mpi::Comm&, int)>& body) {
  World world(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      const Handle handle{&world, r};
      const monoprop::mpi::Comm comm = monoprop::mpi::Comm::from_handle(&handle);
      try {
        body(comm, r);
      } catch (const std::exception& e) {
        fail(r, std::string("threw: ") + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
}

}  // namespace monoprop_test
