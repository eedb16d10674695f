#pragma once
// The fleet heat-map: every case on every machine, coloured by how far it ran from the median of
// identical hardware, outliers marked. One compact chart for 64 GPUs x 50 cases.
#include <optional>
#include <string>
#include <vector>

#include "report/charts.hpp"
#include "scale/fleet.hpp"

namespace opmeter {

// Nothing when the fleet is empty. `id` must be unique on the page.
std::optional<Chart> fleet_heatmap_chart(const std::vector<scale::FleetCase>& fleet, const std::string& id);

}  // namespace opmeter
