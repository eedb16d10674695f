#include "util/text.hpp"

#include <charconv>
#include <cstdint>
#include <regex>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    auto pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

std::string trim(std::string text) {
  text.erase(0, text.find_first_not_of(' '));
  text.erase(text.find_last_not_of(' ') + 1);
  return text;
}

namespace {
// "-1.5", "+2e3": a number, which a spreadsheet reads as one and never as a formula.
bool plain_number(const std::string& s) {
  static const std::regex kNumber(R"([-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?)");
  return std::regex_match(s, kNumber);
}
}  // namespace

std::string csv_field(const std::string& text) {
  // A text cell a spreadsheet would run as a formula gets a leading quote (OWASP's CSV injection
  // advice); numbers stay numbers, and so does a sign alone ("-": a case without params).
  const bool formula = text.size() > 1 && std::string("=+-@\t\r").find(text[0]) != std::string::npos && !plain_number(text);
  const std::string s = formula ? "'" + text : text;
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string count_of(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

void check_canonical_integer(const std::string& key, const std::string& value) {
  const bool sign = value.starts_with('+') || value.starts_with('-');
  if (value.size() == std::size_t(sign) || value.find_first_not_of("0123456789", sign) != std::string::npos) return;
  const char* first = value.data() + (value.starts_with('+') ? 1 : 0);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(first, value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) return;  // too large: the op's range check says so
  if (std::to_string(v) != value) throw CaseError(fmt::format("{}={}: write the integer as {}={}", key, value, key, v));
}

std::uint64_t stable_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

namespace {
bool hidden_code_point(unsigned cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0xFEFF;
}
std::string code_point_name(unsigned cp) {
  return cp < 0x80 ? fmt::format("\\x{:02x}", cp) : fmt::format("U+{:04X}", cp);
}
// Calls `each(start, length, code point)` for every character of UTF-8 text; a byte that starts no
// valid sequence is one character of its own value.
template <typename F>
void for_each_code_point(const std::string& text, F each) {
  for (std::size_t i = 0; i < text.size();) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned c = b(i);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    bool valid = i + n <= text.size();
    for (std::size_t k = 1; valid && k < n; ++k) valid = (b(i + k) & 0xC0) == 0x80;
    if (!valid || n == 1) {
      each(i, 1, c);
      ++i;
      continue;
    }
    unsigned cp = c & (0x7Fu >> n);
    for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(i + k) & 0x3Fu);
    each(i, n, cp);
    i += n;
  }
}
}  // namespace

std::string hidden_character(const std::string& text) {
  std::string first;
  for_each_code_point(text, [&](std::size_t, std::size_t, unsigned cp) {
    if (first.empty() && hidden_code_point(cp)) first = code_point_name(cp);
  });
  return first;
}

std::string shown_safely(const std::string& text) {
  std::string out;
  for_each_code_point(text, [&](std::size_t at, std::size_t n, unsigned cp) {
    out += hidden_code_point(cp) ? code_point_name(cp) : text.substr(at, n);
  });
  return out;
}

}  // namespace opmeter
