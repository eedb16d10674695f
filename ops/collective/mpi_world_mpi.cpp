// The collectives' MPI world: start, bounded waits, a lost world (mpi_world.hpp).
#include "ops/collective/mpi_world.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "engine/launch_comm.hpp"  // RanksLost
#include "util/env_seconds.hpp"

namespace opmeter::collective {
namespace {
std::string& lost() {
  static std::string why;
  return why;
}
}  // namespace

void ensure_mpi() {
  int started = 0;
  MPI_Initialized(&started);
  if (started) return;
  lost();  // made before the exit hook is registered, so it outlives the hook
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  std::atexit([] {
    int done = 0;
    MPI_Finalized(&done);
    if (done) return;
    // MPI_Finalize waits for every rank, the lost one too: end without it (the launcher then
    // ends the ranks still running, the hung one among them).
    if (!lost().empty()) {
      fmt::print(stderr, "opmeter: ending without MPI_Finalize: {}\n", lost());
      std::fflush(stderr);
      return;
    }
    MPI_Finalize();
  });
}

double rank_wait_s() {
  static const double wait = env_seconds("OPMETER_RANK_WAIT_S", 300);
  return wait;
}

const std::string& world_lost() { return lost(); }
void lose_world(const std::string& why) {
  if (lost().empty()) lost() = why;
}

bool wait_bounded(std::vector<MPI_Request>& requests) {
  const double start = MPI_Wtime(), until = start + rank_wait_s();
  for (;;) {
    bool all = true;
    for (auto& r : requests) {
      if (r == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);  // sets r to MPI_REQUEST_NULL when complete
      all = all && flag;
    }
    if (all) return true;
    const double now = MPI_Wtime();
    if (now >= until) return false;
    // Spin while the others are about to answer (a sample's barrier), then poll gently.
    if (now - start > 0.05) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void abandon(std::vector<MPI_Request>& receives, std::vector<MPI_Request>& sends) {
  for (auto& r : receives)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
  for (auto& r : sends)  // a send completes on its own (or never): let it go
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

void wait_or_lose(MPI_Request request, const char* what) {
  std::vector<MPI_Request> one = {request};
  if (wait_bounded(one)) return;
  // A collective's request may be neither cancelled nor freed: it stays, and the world is lost.
  const std::string why = fmt::format(
      "{}: no answer from every rank within {} s (a rank died or hangs; "
      "OPMETER_RANK_WAIT_S sets the wait)",
      what, rank_wait_s());
  lose_world(why);
  throw RanksLost(why);
}

bool any_rank(bool yes, const char* what) {
  int mine = yes, all = 0;
  MPI_Request request;
  MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD, &request);
  wait_or_lose(request, what);
  return all != 0;
}

double largest_over_ranks(double value, const char* what) {
  double all = value;
  MPI_Request request;
  MPI_Iallreduce(&value, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &request);
  wait_or_lose(request, what);
  return all;
}

}  // namespace opmeter::collective
