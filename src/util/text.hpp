#pragma once
// Small text helpers the parsers share (case strings, comma-separated lists).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace opmeter {

// `n` and the noun, plural unless n is 1: "1 case", "3 cases" (noun in the singular; plural: +s).
std::string count_of(std::size_t n, const std::string& noun);

// The parts of `text` between the `sep`s, empty ones kept ("a,,b" -> a, "", b).
std::vector<std::string> split(const std::string& text, char sep);
// `text` without leading and trailing spaces.
std::string trim(std::string text);
// A CSV text field: quoted (quotes doubled) when it holds a comma, a quote or a line break; a
// leading ' when it starts with =, +, -, @, a tab or a carriage return and is not a plain number
// (a spreadsheet would run it as a formula).
std::string csv_field(const std::string& s);
// FNV-1a's prime over the offset 1469598103934665603 (a digit short of FNV's; kept: predictor
// folds and cut file names depend on it): the same on every platform, build and run (std::hash is not).
std::uint64_t stable_hash(const std::string& s);

// The first character of `text` that prints as something other than itself: a control (C0, DEL,
// C1: a line break, an escape, NEL, CSI), a line or paragraph separator (U+2028, U+2029), or a
// format character that reorders or hides text (U+061C, U+200B..U+200F, U+202A..U+202E,
// U+2060..U+2064, U+2066..U+2069, U+FEFF), named as \x0a or U+202E; empty when there is none.
// Names a user gives show in terminals, tables and file names: such a character disguises them.
std::string hidden_character(const std::string& text);
// `text` with each such character written as its name (\x0a, U+202E): safe to print.
std::string shown_safely(const std::string& text);

// A parameter value written as an integer must be written canonically (1, not 01, +1 or -0): two
// spellings of one number would make two case strings of one case. CaseError naming the canonical
// form; values that are not integers pass.
void check_canonical_integer(const std::string& key, const std::string& value);

}  // namespace opmeter
