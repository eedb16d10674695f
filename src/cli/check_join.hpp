#pragma once
// `opmeter check` sharded over ranks writes one check.json per rank (OUT/rankNNN-of-N-HOST-DEVICE/);
// `opmeter merge` joins them into one check.json and prints its matrix.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

// The results a check.json holds, as check_json wrote them (case, verdict, errors, reason).
// UsageError naming `source` when it is not one.
std::vector<Result> check_results_from_json(const nlohmann::json& j, const std::string& source);

// The check.json files under `root` (root's own, or one per directory one level down), sorted.
std::vector<std::string> check_files_in(const std::string& root);

// Every input's check.json joined (each case keeps its rank's directory name, as "machine"):
// writes OUT/check.json, prints the matrix; the exit code of check (0, or 1 when a case failed).
int join_checks(const std::vector<std::string>& inputs, const std::string& out);

}  // namespace opmeter
