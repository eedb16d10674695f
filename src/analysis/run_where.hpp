#pragma once
// Where and how a case ran, as the recipe and training tables show and key it: the same layer
// run hot and cold, or in graphs and one call at a time, are two rows, each against a baseline
// that ran the same way.
#include <string>

#include "opmeter/case.hpp"

namespace opmeter {

// The case string's last part: threads=N or device=NAME, the backend's settings, hot.
std::string run_part(const Case& c);
// For a table cell: "cpu x2", "cuda:0", then the settings and "hot" (cold, the default, unsaid).
std::string where_cell(const Case& c);

}  // namespace opmeter
