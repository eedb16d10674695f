#include "util/case_filter.hpp"

#include <re2/re2.h>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {

CaseFilter::CaseFilter(const std::string& pattern, const std::string& flag) {
  RE2::Options options;
  options.set_log_errors(false);  // the error goes to the user once, as a UsageError
  auto re = std::make_shared<const RE2>(pattern, options);
  if (!re->ok())
    throw UsageError(fmt::format("{} '{}' is not a valid regular expression: {}", flag, pattern, re->error()));
  re_ = std::move(re);
}

bool CaseFilter::matches(std::string_view text) const { return RE2::PartialMatch(text, *re_); }

}  // namespace opmeter
