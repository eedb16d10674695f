#pragma once
#include <optional>
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/engine.hpp"

namespace opmeter {

// What a config or suite expands to, before command-line overrides.
struct Plan {
  std::vector<Case> cases;
  Stopping stopping;
  std::string source;  // file name or `suite:quick`
  std::vector<std::string> notes;  // what the expansion left out, and why
};

// Parse a YAML config. Errors are ConfigError with file, line and column. `device` ("cuda:0"),
// when given, replaces the config's `device:` (default cpu): its cases use that backend's impls.
Plan load_config_text(const std::string& yaml, const std::string& source_name, int default_threads,
                      const std::string& device = "");
Plan load_config_file(const std::string& path, int default_threads, const std::string& device = "");
Plan load_suite(const std::string& name, int default_threads, const std::string& device = "");
// fp32 elements per bandwidth array that stream from memory here: 4x the last-level cache,
// at least 64 MiB, at most 1/8 of free memory.
std::size_t default_bandwidth_elements();  // UsageError if unknown

// Nearest candidate by edit distance, if close enough to be a likely typo.
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace opmeter
