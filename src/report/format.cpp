#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/reporters.hpp"

namespace opmeter {

std::string human_time(double s) {
  if (!(s > 0)) return "-";
  if (s < 1e-6) return fmt::format("{:.1f} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

void write_atomically(const std::string& path, const std::string& content) {
  auto tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp);
    f << content;
    f.flush();
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::vector<Result> read_jsonl(const std::string& path) {
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
      if (lineno == static_cast<int>(lines.size())) break;  // torn by an interrupted write
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
