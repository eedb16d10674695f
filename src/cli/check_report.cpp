// `opmeter check`'s matrix, its list of problems and check.json (check_report.hpp).
#include "cli/check_report.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

namespace opmeter {
namespace {

// 3.2e-2: one decimal, the exponent without padding (cells stay narrow).
std::string compact(double v, int decimals) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return "inf";
  if (v == 0) return "0";
  std::string s = fmt::format("{:.{}e}", v, decimals);
  auto e = s.find('e');
  return s.substr(0, e) + "e" + std::to_string(std::atoi(s.c_str() + e + 1));
}

// Worst first: what a cell shows when its cases differ.
int severity(const std::string& verdict) {
  static const std::map<std::string, int> order = {{"fail", 0},    {"crashed", 1}, {"timeout", 2}, {"error", 3},
                                                   {"unchecked", 4}, {"pass", 5},  {"skipped", 6}};
  return order.at(verdict);
}

bool bad(const Result& r) { return severity(check_verdict(r)) <= severity("error"); }

std::string row_of(const Result& r) { return r.kase.op + "/" + r.kase.impl; }

// Rows in the order of their first case; the dtypes of each row's cases.
struct Matrix {
  std::vector<std::string> rows;
  std::vector<DType> dtypes;  // columns, in all_dtypes() order
  std::map<std::pair<std::string, DType>, std::vector<const Result*>> cells;
};

Matrix matrix_of(const std::vector<Result>& results) {
  Matrix m;
  for (auto& r : results) {
    auto row = row_of(r);
    if (std::find(m.rows.begin(), m.rows.end(), row) == m.rows.end()) m.rows.push_back(row);
    m.cells[{row, r.kase.dtype}].push_back(&r);
  }
  for (DType d : all_dtypes())
    if (std::any_of(results.begin(), results.end(), [&](const Result& r) { return r.kase.dtype == d; })) m.dtypes.push_back(d);
  return m;
}

std::string cell_at(const Matrix& m, const std::string& row, DType d) {
  auto it = m.cells.find({row, d});
  return it == m.cells.end() ? "-" : check_cell(it->second);
}

std::map<std::string, int> counts(const std::vector<Result>& results) {
  std::map<std::string, int> n = {{"pass", 0}, {"fail", 0}, {"skipped", 0}, {"error", 0}, {"crashed", 0}, {"timeout", 0}, {"unchecked", 0}};
  for (auto& r : results) ++n[check_verdict(r)];
  return n;
}

}  // namespace

std::string check_verdict(const Result& r) {
  switch (r.status) {
    case Status::ok: return r.has_flag("unchecked") ? "unchecked" : "pass";
    case Status::failed: return "fail";
    case Status::skipped: return "skipped";
    case Status::error: return "error";
    case Status::crashed: return "crashed";
    case Status::timeout: return "timeout";
  }
  return "error";
}

std::string check_cell(const std::vector<const Result*>& results) {
  const Result* worst = nullptr;
  for (auto* r : results) {
    if (!worst || severity(check_verdict(*r)) < severity(check_verdict(*worst))) worst = r;
    // Among failures, the one furthest off.
    else if (r->status == Status::failed && worst->status == Status::failed && r->max_error.value_or(INFINITY) > worst->max_error.value_or(INFINITY))
      worst = r;
  }
  if (!worst) return "-";
  const std::string v = check_verdict(*worst);
  if (v == "fail")
    return worst->max_error && worst->tolerance
               ? fmt::format("FAIL {}>{}", compact(*worst->max_error, 1), compact(*worst->tolerance, 0))
               : "FAIL";
  if (v == "crashed") return "crash";
  if (v == "skipped") return "skip";
  return v;
}

std::string check_text(const std::vector<Result>& results) {
  const Matrix m = matrix_of(results);
  std::vector<std::vector<std::string>> table = {{"op/impl"}};
  for (DType d : m.dtypes) table[0].emplace_back(to_string(d));
  for (auto& row : m.rows) {
    std::vector<std::string> line = {row};
    for (DType d : m.dtypes) line.push_back(cell_at(m, row, d));
    table.push_back(std::move(line));
  }
  std::vector<std::size_t> width(table[0].size(), 0);
  for (auto& line : table)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out;
  for (auto& line : table) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) text += fmt::format("{:<{}}  ", line[i], width[i]);
    out += text.substr(0, text.find_last_not_of(' ') + 1) + "\n";
  }

  auto n = counts(results);
  out += fmt::format(
      "\n{}: {} pass, {} FAIL, {} crashed, {} timeout, {} error, {} skipped{}\n", count_of(results.size(), "case"),
      n["pass"], n["fail"], n["crashed"], n["timeout"], n["error"], n["skipped"],
      n["unchecked"] ? fmt::format(", {} unchecked (ran; nothing to check them against)", n["unchecked"]) : "");
  for (auto& r : results)
    if (bad(r)) out += fmt::format("{:<7} {}: {}\n", check_cell({&r}), r.case_string, r.reason);
  // Skipped cases share few reasons (a backend or library missing): one line per op/impl and reason.
  std::vector<std::pair<std::string, std::string>> groups;  // (op/impl, reason) in order of first case
  std::map<std::pair<std::string, std::string>, std::pair<int, const Result*>> skipped;
  for (auto& r : results) {
    if (r.status != Status::skipped) continue;
    auto key = std::make_pair(row_of(r), r.reason);
    auto& [count, first] = skipped[key];
    if (count++ == 0) {
      first = &r;
      groups.push_back(key);
    }
  }
  for (auto& key : groups) {
    auto& [count, first] = skipped[key];
    out += fmt::format("skip    {}: {} case{} (e.g. {}): {}\n", key.first, count, count == 1 ? "" : "s", first->case_string,
                       key.second);
  }
  return out;
}

nlohmann::json check_json(const std::vector<Result>& results, const nlohmann::json& settings, const nlohmann::json& context) {
  auto finite = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json cases = nlohmann::json::array();
  for (auto& r : results)
    cases.push_back({{"case", r.case_string},
                     {"op", r.kase.op},
                     {"impl", r.kase.impl},
                     {"dtype", to_string(r.kase.dtype)},
                     {"status", check_verdict(r)},
                     {"max_error", finite(r.max_error)},
                     {"tolerance", finite(r.tolerance)},
                     {"reason", r.reason}});
  const Matrix m = matrix_of(results);
  nlohmann::json matrix = nlohmann::json::array();
  for (auto& row : m.rows) {
    nlohmann::json cells = nlohmann::json::object();
    for (DType d : m.dtypes) cells[std::string(to_string(d))] = cell_at(m, row, d);
    matrix.push_back({{"row", row}, {"cells", cells}});
  }
  return {{"schema", "opmeter-check/1"}, {"settings", settings}, {"counts", counts(results)},
          {"matrix", matrix},            {"cases", cases},       {"context", context}};
}

int check_exit_code(const std::vector<Result>& results) {
  return std::any_of(results.begin(), results.end(), bad) ? 1 : 0;
}

}  // namespace opmeter
