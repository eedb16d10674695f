#include "report/run_names.hpp"

namespace opmeter {
namespace {

// `source`'s last `parts` path components ("a/b/c", 2 -> "b/c"); all of it with fewer.
std::string tail(const std::string& source, std::size_t parts) {
  std::string s = source;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  std::size_t at = s.size();
  for (std::size_t i = 0; i < parts; ++i) {
    if (at == 0) return s;
    at = s.rfind('/', at - 1);
    if (at == std::string::npos) return s;
  }
  return s.substr(at + 1);
}

}  // namespace

std::vector<std::string> short_run_names(const std::vector<std::string>& sources) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string name = sources[i];
    for (std::size_t parts = 1; parts < 64; ++parts) {
      const std::string mine = tail(sources[i], parts);
      bool unique = true;
      for (std::size_t j = 0; j < sources.size() && unique; ++j)
        if (j != i && tail(sources[j], parts) == mine) unique = false;
      if (unique || mine == sources[i]) {
        name = mine;
        break;
      }
    }
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> short_run_names(const std::vector<ResultSet>& sets) {
  std::vector<std::string> sources;
  for (auto& s : sets) sources.push_back(s.source);
  return short_run_names(sources);
}

}  // namespace opmeter
