#pragma once
// Energy of a case every rank of a launch runs together (a collective): each rank reads its own
// counter over the same window (the ranks take every sample together), and the collective's
// energy per call is the sum over the counters. Ranks that read one counter (the ranks of a host
// share its RAPL packages; two ranks on one GPU share its NVML counter) count it once. When any
// rank has no reading the sum is unknown, and nothing is reported: never a partial sum.
#include <optional>
#include <string>
#include <vector>

#include "opmeter/result.hpp"
#include "scale/launch_comm.hpp"

namespace opmeter {

struct RankEnergy {
  std::string counter;                    // which counter it read: "HOST/cpu", "HOST/cuda:0/PCI_BUS_ID"
  std::optional<double> joules_per_call;  // over its window; empty: none, with the reason
  double avg_power_w = 0;
  std::string reason;
};

struct LaunchEnergy {
  std::optional<double> joules_per_call;  // summed over distinct counters
  double avg_power_w = 0;                 // the same sum of their average powers
  int counters = 0;                       // distinct counters summed
  std::string reason;                     // why empty
};

// Pure: the sum over `ranks` (in rank order), each distinct counter once (its first rank's reading).
LaunchEnergy sum_over_ranks(const std::vector<RankEnergy>& ranks);

// The counter a result's energy was read from on this process: host, device and, for a GPU, its
// PCI bus id where the result's details have it (CUDA_VISIBLE_DEVICES renumbers devices per rank).
std::string energy_counter_name(const Result& r);

// Every rank calls it together after its own energy window: r's energy becomes the launch's
// (the rank's own reading stays in details.energy_this_rank_j).
void sum_energy_over_ranks(Result& r, scale::LaunchComm& comm);

}  // namespace opmeter
