#include "report/html_page.hpp"

#include "report/reporters.hpp"

namespace opmeter {

std::string script_json(const nlohmann::json& j) {
  std::string s = dump_json(j), out;
  out.reserve(s.size());
  for (char ch : s) {
    if (ch == '<') out += "\\u003c";
    else out += ch;
  }
  return out;
}

std::string inline_js(std::string_view js) {
  std::string out(js);
  for (std::size_t at = out.find("</script"); at != std::string::npos; at = out.find("</script", at + 2))
    out.replace(at, 2, "<\\/");
  return out;
}

}  // namespace opmeter
