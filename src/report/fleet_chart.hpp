#pragma once
// The fleet heat-map: every case on every machine, coloured by how far it ran from the median of
// identical hardware, outliers marked. One compact chart for 64 GPUs x 50 cases.
#include <optional>
#include <string>
#include <vector>

#include "report/charts.hpp"
#include "scale/fleet.hpp"

namespace opmeter {

// A page draws 20,000 cells in a few seconds; a sweep of 2,000 cases on 64 GPUs would not.
inline constexpr std::size_t kMaxFleetCells = 20000;

// Nothing when the fleet is empty. `id` must be unique on the page. Beyond `max_cells`, the cases
// with the most outliers (the caption says how many of how many).
std::optional<Chart> fleet_heatmap_chart(const std::vector<scale::FleetCase>& fleet, const std::string& id,
                                         std::size_t max_cells = kMaxFleetCells);

}  // namespace opmeter
