#pragma once
// The processes of one launch (mpirun, srun) talking to each other: what collectives need beyond
// the environment's rank and size (a NCCL id handed from rank 0 to the others, the votes before
// an every-rank case, decisions taken together, energy summed over ranks). The one way ranks
// talk: the core never links MPI: the MPI object library (ops/collective/launch_comm_mpi.cpp,
// built where CMake finds MPI) provides it, and the CUDA plugin reaches it through opmeter's
// exported symbols, so neither the plugin nor the core links MPI.
//
// Every call waits for the other ranks a bounded time (OPMETER_RANK_WAIT_S, see
// ops/collective/mpi_world.hpp): a rank that died or hangs makes it throw RanksLost saying what
// got no answer, and once a wait has run out, every later call throws RanksLost at once.
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace opmeter {

// Thrown when ranks did not answer within the wait (the case becomes an error with the message).
struct RanksLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace opmeter

namespace opmeter::scale {

class LaunchComm {
 public:
  virtual ~LaunchComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Root's `bytes` at `data` into every rank's `data`.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual bool any(bool yes) = 0;            // whether any rank says yes
  virtual double largest(double value) = 0;  // the largest value of all ranks
  // Every rank's string, in rank order (RanksLost names the ranks whose string did not come).
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
};

// The launch's communicator when a launcher started this process and opmeter was built with MPI
// (started on first use); null otherwise: this process is alone, or cannot talk to the others.
LaunchComm* launch_comm();

// Called once by the MPI object library's static registrar: how to start its communicator (which
// returns null where no launcher started this process).
void provide_launch_comm(std::function<LaunchComm*()> start);
// Whether a provider registered (opmeter was built with MPI).
bool launch_comm_available();

}  // namespace opmeter::scale
