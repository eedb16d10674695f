#pragma once
// The report's Fleet section: the same case on several machines (a merged tree of ranks, or
// `opmeter merge`'s output), summarised so that 64 GPUs x 50 cases stay readable: the outliers
// first, a heat-map of every case on every machine, then collapsible per-machine and per-case tables.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/result_set.hpp"

namespace opmeter {

// The section's HTML, empty when no input holds a case measured on two machines; its chart specs
// are appended to `specs` ({id, spec} each, as the page's renderer reads them).
std::string fleet_html(const std::vector<ResultSet>& sets, nlohmann::json& specs);

}  // namespace opmeter
