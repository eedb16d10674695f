// The launch's communicator (src/engine/launch_comm.hpp) over MPI_COMM_WORLD, every wait bounded
// (mpi_world.hpp). In the MPI object library (built where CMake finds MPI), so the core and the
// CUDA plugin never link MPI.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "engine/launch_comm.hpp"
#include "ops/collective/mpi_world.hpp"
#include "scale/shard.hpp"

namespace opmeter::scale {
namespace {

using collective::wait_or_lose;

// gather's point-to-point messages (so it can name the ranks whose string did not come), on tags
// of their own so that no collective call and no other message can meet them.
constexpr int kLengthTag = 31031, kTextTag = 31032;

// A test-only hung rank: OPMETER_TEST_RANK_FAULT=stall_comm:RANK:N makes RANK sleep 10 minutes
// before its Nth call of this communicator (1 = the first), whichever call that is. Read by
// nothing else.
void test_stall(int rank, int call) {
  const char* v = std::getenv("OPMETER_TEST_RANK_FAULT");
  if (v && std::string(v) == fmt::format("stall_comm:{}:{}", rank, call))
    std::this_thread::sleep_for(std::chrono::minutes(10));
}

class MpiComm final : public LaunchComm {
 public:
  MpiComm() {
    collective::ensure_mpi();  // one start and one end for every MPI user (a lost rank: no MPI_Finalize)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void broadcast(void* data, std::size_t bytes, int root) override {
    start_call();
    MPI_Request request;
    MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
    wait_or_lose(request, "a broadcast to every rank");
  }
  bool any(bool yes) override {
    start_call();
    return collective::any_rank(yes, "a decision taken by every rank");
  }
  double largest(double value) override {
    start_call();
    return collective::largest_over_ranks(value, "a decision taken by every rank");
  }
  std::vector<std::string> gather(const std::string& mine) override {
    start_call();
    const auto n = static_cast<std::size_t>(size_);
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(n, 1);  // first the lengths, one int from each rank
    std::vector<void*> at(n);
    for (std::size_t r = 0; r < n; ++r) at[r] = &lengths[r];
    exchange(&length, 1, MPI_INT, at, std::vector<int>(n, 1), kLengthTag);
    lengths[static_cast<std::size_t>(rank_)] = length;
    std::vector<std::string> out(n);
    for (std::size_t r = 0; r < n; ++r) {
      out[r].resize(static_cast<std::size_t>(lengths[r]));
      at[r] = out[r].data();
    }
    exchange(mine.data(), length, MPI_CHAR, at, lengths, kTextTag);
    out[static_cast<std::size_t>(rank_)] = mine;
    return out;
  }

 private:
  // Every call: at once RanksLost once the world is lost (the lost rank would not answer), and
  // the test hook's stall.
  void start_call() {
    if (!collective::world_lost().empty()) throw RanksLost(collective::world_lost());
    test_stall(rank_, ++calls_);
  }
  // Sends `count` items at `mine` to every other rank and receives rank r's counts[r] items into
  // at[r] (this rank's own slot is left alone).
  void exchange(const void* mine, int count, MPI_Datatype type, const std::vector<void*>& at,
                const std::vector<int>& counts, int tag) {
    std::vector<MPI_Request> receives(static_cast<std::size_t>(size_), MPI_REQUEST_NULL), sends = receives;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const auto i = static_cast<std::size_t>(r);
      MPI_Irecv(at[i], counts[i], type, r, tag, MPI_COMM_WORLD, &receives[i]);
      MPI_Isend(mine, count, type, r, tag, MPI_COMM_WORLD, &sends[i]);
    }
    wait_named(receives, sends);
  }
  // Waits (bounded) for every receive and send; else loses the world and throws RanksLost naming
  // the ranks whose message did not come (or, when every one came, that did not take this one's).
  void wait_named(std::vector<MPI_Request>& receives, std::vector<MPI_Request>& sends) {
    const std::size_t n = receives.size();
    std::vector<MPI_Request> all = receives;
    all.insert(all.end(), sends.begin(), sends.end());
    if (collective::wait_bounded(all)) return;
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), receives.begin());
    std::copy(all.begin() + static_cast<std::ptrdiff_t>(n), all.end(), sends.begin());
    std::vector<std::string> silent;
    for (std::size_t r = 0; r < n; ++r)
      if (receives[r] != MPI_REQUEST_NULL) silent.push_back(std::to_string(r));
    if (silent.empty())
      for (std::size_t r = 0; r < n; ++r)
        if (sends[r] != MPI_REQUEST_NULL) silent.push_back(std::to_string(r));
    collective::abandon(receives, sends);
    const std::string who = fmt::format("rank{} {}", silent.size() == 1 ? "" : "s", fmt::join(silent, ", "));
    collective::lose_world(fmt::format(
        "{} did not answer; collectives need every rank, so the later ones are not run (rerun all ranks)", who));
    throw RanksLost(fmt::format(
        "{} did not answer within {} s (died, hangs, or is far behind; OPMETER_RANK_WAIT_S sets the wait)", who,
        collective::rank_wait_s()));
  }

  int rank_ = 0, size_ = 1;
  int calls_ = 0;
};

const bool registered = [] {
  provide_launch_comm([]() -> LaunchComm* {
    // Only a launcher's processes share an MPI world; a Slurm job array's tasks alone are
    // separate jobs that no MPI world joins.
    auto shard = shard_from_env(process_env());
    if (!shard || shard->source == "SLURM_ARRAY_TASK_ID/COUNT") return nullptr;
    collective::rank_wait_s();  // a bad OPMETER_RANK_WAIT_S stops the run before any case
    static MpiComm comm;
    return &comm;
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::scale
