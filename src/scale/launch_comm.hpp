#pragma once
// The processes of one launch (mpirun, srun) talking to each other: what collectives need beyond
// the environment's rank and size (a NCCL id handed from rank 0 to the others, decisions taken
// together, energy summed over ranks). The core never links MPI: the MPI object library
// (ops/collective/launch_comm_mpi.cpp, built where CMake finds MPI) provides it, and the CUDA
// plugin reaches it through opmeter's exported symbols, so neither the plugin nor the core links
// MPI.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

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
  // Every rank's string, in rank order.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
};

// The launch's communicator when a launcher started this process and opmeter was built with MPI
// (started on first use); null otherwise: this process is alone, or cannot talk to the others.
LaunchComm* launch_comm();

// Called once by the MPI object library's static registrar: how to start its communicator.
void provide_launch_comm(std::function<LaunchComm*()> start);
// Whether a provider registered (opmeter was built with MPI).
bool launch_comm_available();

}  // namespace opmeter::scale
