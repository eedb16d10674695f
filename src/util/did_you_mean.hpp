#pragma once
// "Did you mean ...?" for names a user typed: configs, pipelines, plugins, the command line.
#include <optional>
#include <string>
#include <vector>

namespace opmeter {

// Nearest candidate by edit distance (ignoring case), if close enough to be a likely typo.
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates);
// "unknown KIND 'NAME'; did you mean 'X'?" with the nearest known name, else the list of them.
std::string unknown_name(const std::string& kind, const std::string& name, const std::vector<std::string>& known);

}  // namespace opmeter
