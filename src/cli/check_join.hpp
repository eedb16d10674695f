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
// Refuses (UsageError, exit 2), as merge of results does, files of other settings or opmeter
// versions, a sharded check's rank missing, given twice or stopped part-way, ranks that split the
// cases otherwise, and a file given twice (through a link too); `force` joins them anyway, with a
// warning each. OUT must be new or empty (refuse_a_used_output).
int join_checks(const std::vector<std::string>& inputs, const std::string& out, bool force = false);

// UsageError when `out` exists and is not an empty directory: merge writes a new directory and
// never replaces another's files.
void refuse_a_used_output(const std::string& out);

}  // namespace opmeter
