#include "util/case_filter.hpp"

#include <re2/re2.h>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {

CaseFilter::CaseFilter(const std::string& pattern, const std::string& flag) {
  RE2::Options options;
  options.set_log_errors(false);  // the error goes to the user once, as a UsageError
  auto re = std::make_shared<const RE2>(pattern, options);
  if (re->ok()) {
    re2_ = std::move(re);
    return;
  }
  // Only what RE2 lacks by design (lookaround: (?= (?! (?<= (?<!; backreferences: \1) goes to the
  // backtracking engine; a pattern RE2 refuses for its size or repeat count is refused here too.
  const bool lacks = re->error_code() == RE2::ErrorBadPerlOp || re->error_code() == RE2::ErrorBadEscape;
  if (!lacks) throw UsageError(fmt::format("{} '{}' is not a valid regular expression: {}", flag, pattern, re->error()));
  try {
    backtracking_ = std::make_shared<const std::regex>(pattern);
  } catch (const std::regex_error&) {
    throw UsageError(fmt::format("{} '{}' is not a valid regular expression: {}", flag, pattern, re->error()));
  }
}

bool CaseFilter::matches(std::string_view text) const {
  if (re2_) return RE2::PartialMatch(text, *re2_);
  return std::regex_search(text.begin(), text.end(), *backtracking_);
}

}  // namespace opmeter
