// What every energy counter shares: the total of a window, and the idle draw.
#include "opmeter/energy_counter.hpp"

#include <chrono>
#include <thread>

namespace opmeter {

double WindowEnergy::total_j() const {
  double sum = 0;
  for (auto& [domain, j] : joules) sum += j;
  return sum;
}

std::optional<WindowEnergy> EnergyCounter::idle(double seconds, std::string& why) {
  start();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return stop(why);
}

}  // namespace opmeter
