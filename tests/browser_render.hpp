#pragma once
// Renders an opmeter HTML page in headless Chromium, offline, and reads back the page's own
// account of how each chart drew (#render-status).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace opmeter::browser {

namespace fs = std::filesystem;

inline std::string find_chromium() {
  if (const char* env = std::getenv("OPMETER_CHROMIUM"); env && *env) return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(p)) return p;
  return "";
}

inline std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 65536> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

inline std::string html_unescape(std::string s) {
  for (auto [from, to] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}})
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) s.replace(at, std::strlen(from), to);
  return s;
}

// Renders a report and returns the page's DOM after its scripts ran.
inline std::string render_dom(const std::string& chromium, const std::string& html, const std::string& name) {
  auto dir = fs::temp_directory_path() / ("opmeter_browser_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "report.html") << html;
  // No network: every host name resolves to nothing, and the page's policy forbids requests anyway.
  auto cmd = fmt::format(
      "timeout 180 '{}' --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir='{}' "
      "--host-resolver-rules='MAP * ~NOTFOUND' --virtual-time-budget=60000 --dump-dom 'file://{}' 2>/dev/null",
      chromium, (dir / "profile").string(), (dir / "report.html").string());
  return run(cmd);
}

// The page's own account of how each chart drew, from its DOM.
inline nlohmann::json render_status(const std::string& dom) {
  auto start = dom.find("<pre id=\"render-status\"");
  if (start == std::string::npos) return {{"error", "no #render-status in the rendered page"}, {"dom_bytes", dom.size()}};
  start = dom.find('>', start) + 1;
  auto text = html_unescape(dom.substr(start, dom.find("</pre>", start) - start));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return {{"error", "#render-status is not JSON"}, {"text", text}};
  return j;
}

// Renders a report and returns the page's own account of it.
inline nlohmann::json render(const std::string& chromium, const std::string& html, const std::string& name) {
  return render_status(render_dom(chromium, html, name));
}

}  // namespace opmeter::browser
