#pragma once
// Where and how a case ran, as the recipe and training tables show and key it: the same layer
// run hot and cold, in graphs and one call at a time, or on two machines of a merged run, are two
// rows, each against a baseline that ran the same way.
#include <string>

#include "opmeter/result.hpp"

namespace opmeter {

// The case string's last part: threads=N or device=NAME, the backend's settings, hot; and the
// machine of a merged run (" on rank001-of-2-host").
std::string run_part(const Result& r);
// For a table cell: "cpu x2", "cuda:0", then the settings and "hot" (cold, the default, unsaid),
// and the machine of a merged run ("on rank001-of-2-host").
std::string where_cell(const Result& r);
// The machine a merged run's result came from (details[kMachineDetail]); empty for one machine.
std::string machine_of(const Result& r);

}  // namespace opmeter
