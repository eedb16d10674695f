#pragma once
// The fleet view of merged results: the same case on several machines (hosts, GPUs), ranked,
// with its spread, and outliers flagged against the median of identical hardware, with the
// environment differences that may explain them. Pure functions over results and contexts.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter::scale {

// What a machine's context says of the device a result ran on.
struct Machine {
  std::string name;      // where the result came from: the rank's directory (host and device)
  std::string host;
  std::string device;    // cpu, cuda:N
  std::string hardware;  // what identical hardware shares: the CPU or GPU model, default clocks, power limit
  // What may differ between identical hardware: driver, clocks now, power cap, ECC, MIG, load.
  std::map<std::string, std::string> environment;
};

// The machine of `device` in a run's context (machine_context() and the backends' parts).
Machine machine_of(const nlohmann::json& context, const std::string& device, const std::string& name);

struct FleetEntry {
  std::string machine;
  double median_s = 0;
  double vs_hardware_median = 0;  // median_s / median of identical hardware - 1
  bool outlier = false;
  std::vector<std::string> differences;  // "power_limit_w: 300 (others 350)", why it may differ
  std::vector<std::string> flags;        // the result's own (contended: a busy neighbour)
};

struct FleetCase {
  std::string case_string;
  std::vector<FleetEntry> entries;  // fastest first (the ranking)
  double spread = 0;                // (slowest - fastest) / median of all
};

// Outliers are further than `threshold` (relative) from the median of at least three identical
// machines: with two, neither is the odd one out.
inline constexpr double kOutlierThreshold = 0.05;
inline constexpr std::size_t kMinIdenticalForOutlier = 3;

// Cases measured `ok` on at least two machines. `machines` by Machine::name; a result's machine is
// its details[kMachineDetail].
std::vector<FleetCase> fleet_view(const std::vector<Result>& results, const std::map<std::string, Machine>& machines,
                                  double threshold = kOutlierThreshold);

// Each machine across the fleet's cases: how often it ran, how often it was an outlier, and its
// typical (median) and worst deviation from identical hardware.
struct MachineSummary {
  std::string machine;
  std::size_t cases = 0;
  std::size_t outliers = 0;
  double median_vs_hardware = 0;
  double worst_vs_hardware = 0;  // the deviation furthest from 0, with its sign
};
std::vector<MachineSummary> machine_summaries(const std::vector<FleetCase>& fleet);

// The fleet view for other tools (fleet.json, "schema": "opmeter-fleet/1"): the outlier rule, the machines (hardware,
// environment, summary) and every case's ranking. Times in seconds, deviations as fractions.
nlohmann::json fleet_json(const std::vector<FleetCase>& fleet, const std::map<std::string, Machine>& machines);

// The fleet section of a markdown report; empty when no case ran on two machines.
std::string fleet_markdown(const std::vector<FleetCase>& fleet, const std::map<std::string, Machine>& machines);

}  // namespace opmeter::scale
