#include "scale/launch_comm.hpp"

#include <mutex>

#include "scale/shard.hpp"

namespace opmeter::scale {
namespace {
std::function<LaunchComm*()>& provider() {
  static std::function<LaunchComm*()> p;
  return p;
}
}  // namespace

void provide_launch_comm(std::function<LaunchComm*()> start) { provider() = std::move(start); }

bool launch_comm_available() { return static_cast<bool>(provider()); }

LaunchComm* launch_comm() {
  static std::once_flag once;
  static LaunchComm* comm = nullptr;
  std::call_once(once, [] {
    // A Slurm job array's tasks alone are separate jobs: no MPI world joins them.
    auto shard = shard_from_env(process_env());
    if (provider() && shard && shard->source != "SLURM_ARRAY_TASK_ID/COUNT") comm = provider()();
  });
  return comm;
}

}  // namespace opmeter::scale
