#pragma once
// CLI11 checks every command's numeric options share.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace opmeter {

// The values --threads and --llc-bytes take, on the command line and in a stored run.json.
inline constexpr int kMinThreads = 1, kMaxThreads = 4096;
inline constexpr std::size_t kMinLlcBytes = std::size_t{1} << 16, kMaxLlcBytes = std::size_t{1} << 40;
// The seconds --case-deadline takes, on the command line and in a stored check.json.
inline constexpr double kMinCaseDeadline = 0.1, kMaxCaseDeadline = 86400;

// NaN passes every range check (all comparisons are false): reject it, and infinities, first.
inline const CLI::Validator kFinite(
    [](std::string& s) {
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      return end != s.c_str() && std::isfinite(v) ? std::string() : "must be a finite number, got '" + s + "'";
    },
    "FINITE");

// Unsigned options would otherwise take -5 as 2^64 - 5, and 10^20 as 2^64 - 1.
inline const CLI::Validator kNonNegativeInteger(
    [](std::string& s) {
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        return "must be a non-negative integer, got '" + s + "'";
      std::uint64_t v = 0;
      const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
      return err == std::errc() && end == s.data() + s.size() ? std::string()
                                                               : "is too large: at most 18446744073709551615, got '" + s + "'";
    },
    "UINT");

// A name option given as '' (--suite '', --format '') would otherwise mean its default.
inline const CLI::Validator kNonEmpty([](std::string& s) { return s.empty() ? std::string("must not be empty") : std::string(); },
                                      "TEXT");

// A comma-separated list (--op add,relu), which the command splits itself: CLI11's delimiter
// dropped an empty item (add, or add,,relu) silently, and a list of none took the next argument.
inline const CLI::Validator kCommaList(
    [](std::string& s) {
      if (s.empty()) return std::string("must not be empty");
      const bool empty_item = s.front() == ',' || s.back() == ',' || s.find(",,") != std::string::npos;
      return empty_item ? "'" + s + "' has an empty name (a stray comma?)" : std::string();
    },
    "LIST");

}  // namespace opmeter
