#pragma once
// CLI11 checks every command's numeric options share.
#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace opmeter {

// NaN passes every range check (all comparisons are false): reject it, and infinities, first.
inline const CLI::Validator kFinite(
    [](std::string& s) {
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      return end != s.c_str() && std::isfinite(v) ? std::string() : "must be a finite number, got '" + s + "'";
    },
    "FINITE");

// Unsigned options would otherwise take -5 as 2^64 - 5.
inline const CLI::Validator kNonNegativeInteger(
    [](std::string& s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos
                 ? std::string()
                 : "must be a non-negative integer, got '" + s + "'";
    },
    "UINT");

}  // namespace opmeter
