#include "util/did_you_mean.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace opmeter {
namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Levenshtein distance, ignoring case: 'BF16' is nearest 'bf16', not 'fp16'.
std::size_t distance(const std::string& a_as_typed, const std::string& b_as_known) {
  const std::string a = lower(a_as_typed), b = lower(b_as_known);
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string unknown_name(const std::string& kind, const std::string& name, const std::vector<std::string>& known) {
  auto near = nearest(name, known);
  return near ? fmt::format("unknown {} '{}'; did you mean '{}'?", kind, name, *near)
              : fmt::format("unknown {} '{}'; known: {}", kind, name, fmt::join(known, ", "));
}

std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (auto& c : candidates) {
    auto d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace opmeter
