// The launch's communicator (src/engine/launch_comm.hpp) over MPI_COMM_WORLD. In the MPI object
// library (built where CMake finds MPI), so the core and the CUDA plugin never link MPI.
#include <mpi.h>

#include <cstdlib>

#include "engine/launch_comm.hpp"
#include "ops/collective/mpi_world.hpp"
#include "scale/shard.hpp"

namespace opmeter::scale {
namespace {

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
    MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
  }
  bool any(bool yes) override {
    int mine = yes, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return all != 0;
  }
  double largest(double value) override {
    double all = value;
    MPI_Allreduce(&value, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all;
  }
  std::vector<std::string> gather(const std::string& mine) override {
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < size_; ++r) offsets[r] = total, total += lengths[r];
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
    return out;
  }

 private:
  int rank_ = 0, size_ = 1;
};

const bool registered = [] {
  provide_launch_comm([]() -> LaunchComm* {
    // Only a launcher's processes share an MPI world; a Slurm job array's tasks alone are
    // separate jobs that no MPI world joins.
    auto shard = shard_from_env(process_env());
    if (!shard || shard->source == "SLURM_ARRAY_TASK_ID/COUNT") return nullptr;
    static MpiComm comm;
    return &comm;
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::scale
