#pragma once
// --filter: which case strings a run or check keeps, matched anywhere in the string. RE2 (the
// usual syntax of ECMAScript and POSIX) matches in time linear in the string: a pattern such as
// ^(.*.*)*zz$, on which a backtracking engine runs for hours, answers at once. A pattern RE2 does
// not take, with lookaround or a backreference (^(?!attention/onednn_unfused/)), runs on
// std::regex's ECMAScript engine, which has them.
#include <memory>
#include <regex>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace opmeter {

class CaseFilter {
 public:
  // UsageError naming `flag` when `pattern` is valid in neither syntax.
  explicit CaseFilter(const std::string& pattern, const std::string& flag = "--filter");
  bool matches(std::string_view text) const;
  bool linear_time() const { return re2_ != nullptr; }

 private:
  std::shared_ptr<const re2::RE2> re2_;
  std::shared_ptr<const std::regex> backtracking_;  // only where RE2 refused the pattern
};

}  // namespace opmeter
