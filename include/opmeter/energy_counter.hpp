#pragma once
// Energy a device uses over a window, read from cumulative counters before and after it (the
// CPU's RAPL domains). A backend that has such counters hands the runner one
// (Backend::energy_counter); the runner reads it around a window of back-to-back calls.
#include <map>
#include <optional>
#include <string>

namespace opmeter {

struct WindowEnergy {
  double seconds = 0;
  std::map<std::string, double> joules;  // by domain ("package", "dram"), summed over sockets
  std::string method;                    // "RAPL (package + dram)"

  double total_j() const;
  double avg_watts() const { return seconds > 0 ? total_j() / seconds : 0; }
};

class EnergyCounter {
 public:
  virtual ~EnergyCounter() = default;
  virtual void start() = 0;
  // Energy since start(); empty, with `why`, when a counter could not be read or did not advance
  // (never 0 J for "unknown").
  virtual std::optional<WindowEnergy> stop(std::string& why) = 0;
  // Energy over `seconds` of sleeping: the idle draw. Empty with `why` as stop().
  std::optional<WindowEnergy> idle(double seconds, std::string& why);
};

}  // namespace opmeter
