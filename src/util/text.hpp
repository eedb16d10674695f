#pragma once
// Small text helpers the parsers share (case strings, comma-separated lists).
#include <string>
#include <vector>

namespace opmeter {

// The parts of `text` between the `sep`s, empty ones kept ("a,,b" -> a, "", b).
std::vector<std::string> split(const std::string& text, char sep);
// `text` without leading and trailing spaces.
std::string trim(std::string text);
// A CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);

}  // namespace opmeter
