#pragma once
// Where a case lies outside the shapes and threads a group was fitted on: its prediction there is
// an extrapolation, and its interval (from held-out training cases) says nothing about it.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "opmeter/case.hpp"
#include "predict/model.hpp"

namespace opmeter::predict {

// The lowest and highest value of each integer parameter (and threads, for the host) over a
// group's training cases.
using TrainingRanges = std::map<std::string, std::pair<long long, long long>>;
TrainingRanges training_ranges(const GroupModel& g);

// One line per integer parameter (and threads) of `c` outside `ranges`, e.g. "K=900 is outside
// the training range 16..256: extrapolated". Empty inside.
std::vector<std::string> outside_training(const TrainingRanges& ranges, const Case& c);

}  // namespace opmeter::predict
