#include "util/case_filter.hpp"

#include <re2/re2.h>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {
namespace {

bool has_lookaround(const std::string& pattern) {
  for (const char* open : {"(?=", "(?!", "(?<=", "(?<!"})
    if (pattern.find(open) != std::string::npos) return true;
  return false;
}

}  // namespace

std::string exclude_instead(const std::string& pattern) {
  // One negative lookahead, closing the pattern: P(?!Q) keeps what P matches unless Q follows.
  const auto open = pattern.find("(?!");
  if (open == std::string::npos || has_lookaround(pattern.substr(0, open)) || pattern.empty() || pattern.back() != ')')
    return "";
  int depth = 0;
  for (std::size_t i = open; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      ++i;
      continue;
    }
    if (pattern[i] == '(') ++depth;
    if (pattern[i] == ')' && --depth == 0 && i + 1 != pattern.size()) return "";  // something follows it
  }
  const std::string p = pattern.substr(0, open), q = pattern.substr(open + 3, pattern.size() - open - 4);
  if (q.empty() || has_lookaround(q)) return "";
  const std::string exclude = fmt::format("--exclude '{}{}'", p, q);
  return p.empty() || p == "^" ? exclude : fmt::format("--filter '{}' {}", p, exclude);
}

CaseFilter::CaseFilter(const std::string& pattern, const std::string& flag) {
  RE2::Options options;
  options.set_log_errors(false);  // the error goes to the user once, as a UsageError
  auto re = std::make_shared<const RE2>(pattern, options);
  if (re->ok()) {
    re2_ = std::move(re);
    return;
  }
  if (has_lookaround(pattern)) {
    const std::string instead = exclude_instead(pattern);
    throw UsageError(fmt::format(
        "{} '{}': lookaround ((?=...), (?!...), (?<=...), (?<!...)) is not supported: patterns match in linear time "
        "(RE2), with no backtracking; to leave cases out, give --exclude REGEX{}",
        flag, pattern, instead.empty() ? "" : fmt::format(", here {}", instead)));
  }
  throw UsageError(fmt::format("{} '{}' is not a valid regular expression: {}", flag, pattern, re->error()));
}

bool CaseFilter::matches(std::string_view text) const { return RE2::PartialMatch(text, *re2_); }

std::optional<CaseSelection> CaseSelection::make(const std::string& filter, const std::string& exclude) {
  if (filter.empty() && exclude.empty()) return std::nullopt;
  CaseSelection s;
  if (!filter.empty()) s.keep_.emplace(filter, "--filter");
  if (!exclude.empty()) s.drop_.emplace(exclude, "--exclude");
  return s;
}

bool CaseSelection::matches(std::string_view text) const {
  return (!keep_ || keep_->matches(text)) && !(drop_ && drop_->matches(text));
}

}  // namespace opmeter
