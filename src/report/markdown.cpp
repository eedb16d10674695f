// The end-of-run table.
#include <fmt/format.h>

#include "opmeter/fusion.hpp"
#include "opmeter/reporters.hpp"

namespace opmeter {
namespace {

class MarkdownReporter : public Reporter {
 public:
  explicit MarkdownReporter(std::FILE* out) : out_(out) {}
  void end(const std::vector<Result>& all) override { fmt::print(out_, "\n{}", markdown_table(all)); }

 private:
  std::FILE* out_;
};

std::string status_cell(const Result& r) {
  std::string s(to_string(r.status));
  for (auto& f : r.flags) s += ", " + f;
  if (r.status != Status::ok && !r.reason.empty()) {
    auto reason = r.reason.size() > 90 ? r.reason.substr(0, 87) + "..." : r.reason;
    for (auto& ch : reason)
      if (ch == '|') ch = '/';
    s += ": " + reason;
  }
  return s;
}

std::string sustained_cell(const Result& r) {
  auto s = sustained_rate(r);
  return s ? fmt::format("{:.1f} {}", s->value, s->unit) : "-";
}

}  // namespace

std::string markdown_table(const std::vector<Result>& results) {
  std::string out =
      "| case | impl | dtype | shape | median | ± | GFLOP/s | GB/s | % of peak | noise | sustained | status |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (auto& r : results) {
    bool ok = r.status == Status::ok;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.kase.op, r.kase.impl,
                       to_string(r.kase.dtype), r.kase.params_string(), ok ? human_time(r.summary.median) : "-",
                       ok ? fmt::format("{:.2f}%", r.summary.precision * 100) : "-",
                       ok && r.gflops > 0 ? fmt::format("{:.1f}", r.gflops) : "-",
                       ok && r.gbps > 0 ? fmt::format("{:.1f}", r.gbps) : "-",
                       r.pct_peak ? fmt::format("{:.1f}%", *r.pct_peak) : "-",
                       ok ? fmt::format("{:.2f}%", r.summary.rel_noise * 100) : "-", sustained_cell(r),
                       status_cell(r));
  }
  FusionThresholds t;
  return out + fusion_markdown(fusion_rows(results, t), t);
}

std::unique_ptr<Reporter> make_markdown_reporter(std::FILE* out) { return std::make_unique<MarkdownReporter>(out); }

}  // namespace opmeter
