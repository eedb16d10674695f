#pragma once
// Short names for the runs of a report of several runs, for chart legends and a table's run
// column: each source's shortest trailing path that no other source ends with.
#include <string>
#include <vector>

#include "results/result_set.hpp"

namespace opmeter {

// "docs/results/m/a/run1" and "docs/results/m/b/run1" -> "a/run1", "b/run1"; one folder each ->
// its last part. A source that is another's whole trailing path keeps its full name.
std::vector<std::string> short_run_names(const std::vector<std::string>& sources);
// The same for the sets' sources.
std::vector<std::string> short_run_names(const std::vector<ResultSet>& sets);

}  // namespace opmeter
