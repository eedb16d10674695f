#pragma once
// --filter and --exclude: which case strings a run or check keeps, each pattern matched anywhere in
// the string. RE2 (the usual syntax of ECMAScript and POSIX) matches in time linear in the string:
// a pattern such as ^(.*.*)*zz$, on which a backtracking engine runs for hours, answers at once. A
// user's pattern never reaches a backtracking engine: lookaround and backreferences, which RE2
// lacks by design, are refused, and the message says how --exclude leaves the cases out instead
// (^(?!attention/onednn_unfused/) is --exclude ^attention/onednn_unfused/).
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace opmeter {

class CaseFilter {
 public:
  // UsageError naming `flag` when `pattern` is no RE2 regular expression.
  explicit CaseFilter(const std::string& pattern, const std::string& flag = "--filter");
  bool matches(std::string_view text) const;  // anywhere in `text`

 private:
  std::shared_ptr<const re2::RE2> re2_;
};

// --filter and --exclude together: the cases --filter matches (all when it is empty) less those
// --exclude matches. nullopt when both are empty.
class CaseSelection {
 public:
  static std::optional<CaseSelection> make(const std::string& filter, const std::string& exclude);
  bool matches(std::string_view text) const;

 private:
  std::optional<CaseFilter> keep_, drop_;
};

// For a pattern with a lookaround: the --filter and --exclude that do its work where it has the
// usual form P(?!Q) (e.g. "--filter '^[^/]+/' --exclude '^[^/]+/torch_compile'"); "" otherwise.
std::string exclude_instead(const std::string& pattern);

}  // namespace opmeter
