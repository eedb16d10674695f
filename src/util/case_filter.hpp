#pragma once
// --filter: which case strings a run or check keeps. RE2's syntax (the usual one of ECMAScript
// and POSIX, without backreferences or lookaround), matched anywhere in the string, in time
// linear in its length: a pattern such as ^(.*.*)*zz$, on which a backtracking engine runs for
// hours, answers at once.
#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace opmeter {

class CaseFilter {
 public:
  // UsageError naming `flag` when `pattern` is not a valid expression.
  explicit CaseFilter(const std::string& pattern, const std::string& flag = "--filter");
  bool matches(std::string_view text) const;

 private:
  std::shared_ptr<const re2::RE2> re_;
};

}  // namespace opmeter
