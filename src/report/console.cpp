// Progress on the terminal while a run goes.
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/reporters.hpp"
#include "util/human_units.hpp"

namespace opmeter {
namespace {

// The rate that bounds the case, with its % of the measured ceiling where the run has one: a
// memory-bound op's GB/s against the bandwidth, not its GFLOP/s against the peak.
std::string rate(const Result& r) {
  auto pct = [](const std::optional<double>& p, const char* of) {
    return p ? fmt::format(" ({:.3g}% of {})", *p, of) : std::string();
  };
  if (is_compute_bound(r)) return fmt::format("{:.1f} GFLOP/s{}", r.gflops, pct(r.pct_peak, "peak"));
  if (r.gbps > 0) return fmt::format("{:.1f} GB/s{}", r.gbps, pct(r.pct_bandwidth, "bandwidth"));
  if (r.gflops > 0) return fmt::format("{:.1f} GFLOP/s", r.gflops);
  return "";
}

std::string sustained(const Result& r) {
  auto s = sustained_rate(r);
  return s ? fmt::format("  sustained {:.1f} {}", s->value, s->unit) : "";
}

class ConsoleReporter : public Reporter {
 public:
  ConsoleReporter(std::FILE* out, bool live) : out_(out), live_(live) {}
  void begin(const nlohmann::json&, std::size_t total) override { total_ = total; }
  void case_started(std::size_t index, const Case& c) override {
    index_ = index;
    name_ = c.label.empty() ? c.to_string() : c.to_string() + " (" + c.label + ")";
    if (live_) {
      fmt::print(out_, "\r\033[K[{}/{}] {} ...", index_ + 1, total_, name_);
      std::fflush(out_);
    }
  }
  void progress(double mean_s, double noise, std::size_t samples) override {
    if (!live_) return;
    fmt::print(out_, "\r\033[K[{}/{}] {}  {}  noise {:.2f}%  ({} samples)", index_ + 1, total_, name_, human_time(mean_s),
               std::isfinite(noise) ? noise * 100 : 0.0, samples);
    std::fflush(out_);
  }
  void report(const Result& r) override {
    if (live_) fmt::print(out_, "\r\033[K");
    std::string what =
        r.status == Status::ok
            ? fmt::format(
                  "{}{}  {}  noise {}{}{}", human_time(r.summary.median),
                  std::isfinite(r.summary.precision) ? " ±" + spread_percent(r.summary.precision, r.summary.count) : "",
                  rate(r), spread_percent(r.summary.rel_noise, r.summary.count), sustained(r),
                  r.flags.empty() ? "" : fmt::format("  [{}]", fmt::join(r.flags, ", ")))
            : fmt::format("{}: {}", to_string(r.status), r.reason);
    fmt::print(out_, "[{}/{}] {}{}  {}\n", index_ + 1, total_, r.case_string,
               r.kase.label.empty() ? "" : " (" + r.kase.label + ")", what);
    if (auto it = r.details.find("contention"); it != r.details.end() && r.has_flag("contended"))
      fmt::print(out_, "  warning: {}\n", it->second);
    if (auto note = rate_note(r); !note.empty()) fmt::print(out_, "  note: {}\n", note);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  bool live_;
  std::size_t total_ = 0, index_ = 0;
  std::string name_;
};

}  // namespace

std::unique_ptr<Reporter> make_console_reporter(std::FILE* out, bool live) {
  return std::make_unique<ConsoleReporter>(out, live);
}

}  // namespace opmeter
