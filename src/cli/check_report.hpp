#pragma once
// What `opmeter check` prints and writes: a matrix (rows op/impl, columns dtype) whose cells sum
// up a row's cases of that dtype, the list of every case that did not pass, and check.json.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

// A case's verdict word: pass, fail, skipped, error, crashed, timeout (`unchecked` for a pass
// with nothing to compare against: a user kernel of its own op).
std::string check_verdict(const Result& r);

// A cell of the matrix from the results of one op/impl/dtype: the worst verdict among them.
// `FAIL 3.2e-2>1e-3` (the largest error and its tolerance), `crash`, `timeout`, `error`, `pass`
// (every case that ran passed; skipped shapes are in the list), `unchecked`, or `skip`.
std::string check_cell(const std::vector<const Result*>& results);

// The matrix and, below it, each case that failed, crashed, errored or timed out (case string and
// reason), then the skipped ones grouped by op/impl and reason.
std::string check_text(const std::vector<Result>& results);

// check.json: every case (case string, op, impl, dtype, status, max_error, tolerance, reason), the
// matrix as printed, the counts per status, the selection and the machine context.
nlohmann::json check_json(const std::vector<Result>& results, const nlohmann::json& settings, const nlohmann::json& context);

// 0 when every case passed or was skipped, else 1.
int check_exit_code(const std::vector<Result>& results);

}  // namespace opmeter
