#include "engine/launch_comm.hpp"

#include <mutex>

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
    if (provider()) comm = provider()();  // null where this process was not started by a launcher
  });
  return comm;
}

}  // namespace opmeter::scale
