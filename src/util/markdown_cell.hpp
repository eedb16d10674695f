#pragma once
// Text from results files (labels, impl names, context values) in the reports' markdown: a
// table cell or a code span must stay one cell on one line, and markdown renderers that pass
// HTML through (mkdocs, wikis; GitHub sanitises) must get no tags from it.
#include <string>

namespace opmeter {

// For a table cell or running text: `|` becomes `/`, a line break a space, and `&`, `<`, `>`
// their HTML entities (which every markdown renderer shows as the characters).
inline std::string markdown_cell(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '|': out += '/'; break;
      case '\n':
      case '\r': out += ' '; break;
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += ch;
    }
  }
  return out;
}

// For text inside a code span (`...`), where entities would show as written and tags are
// already inert: one line, no `|`, and no backtick to close the span early.
inline std::string markdown_code(const std::string& s) {
  std::string out = s;
  for (auto& ch : out) {
    if (ch == '|') ch = '/';
    else if (ch == '\n' || ch == '\r') ch = ' ';
    else if (ch == '`') ch = '\'';
  }
  return out;
}

}  // namespace opmeter
