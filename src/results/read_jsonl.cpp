// Reading a run's journal (results.jsonl) back.
#include <fstream>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "results/result_set.hpp"

namespace opmeter {

std::vector<Result> read_jsonl(const std::string& path) {
  bool torn = false;
  return read_jsonl(path, torn);
}

std::vector<Result> read_jsonl(const std::string& path, bool& torn) {
  torn = false;
  std::ifstream f(path);
  if (!f) throw UsageError(fmt::format("{}: cannot open (is it a results directory of an earlier run?)", path));
  std::vector<Result> out;
  std::string line;
  int lineno = 0;
  std::vector<std::string> lines;
  while (std::getline(f, line))
    if (!line.empty()) lines.push_back(line);
  for (auto& l : lines) {
    ++lineno;
    nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_discarded()) {
      if (lineno == static_cast<int>(lines.size())) {  // torn by an interrupted write
        torn = true;
        break;
      }
      throw UsageError(fmt::format("{}:{}: not a JSON line", path, lineno));
    }
    try {
      out.push_back(result_from_json(j));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}:{}: {}", path, lineno, e.what()));
    }
  }
  return out;
}

}  // namespace opmeter
