#include "util/human_units.hpp"

#include <cmath>

#include <fmt/format.h>

namespace opmeter {

std::string human_time(double s) {
  if (!(s > 0)) return "-";
  if (s < 1e-6) return fmt::format("{:.1f} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string human_rate(double v) {
  if (!(v >= 0) || !std::isfinite(v)) return "-";
  if (v < 9999.5) return fmt::format("{:.4g}", v);                    // {:.4g} of 9999.5 and up rounds to 1e+04
  const double unit = std::pow(10.0, std::floor(std::log10(v)) - 3);  // rounds away digits past the 4th
  return fmt::format("{:.0f}", std::round(v / unit) * unit);
}

std::string spread_percent(double fraction, std::size_t samples) {
  if (samples < 2 || !std::isfinite(fraction)) return "-";
  return fmt::format("{:.2f}%", fraction * 100);
}

std::string human_bytes(double b) {
  if (!(b >= 0)) return "-";
  if (b >= double(1 << 30)) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (b >= double(1 << 20)) return fmt::format("{:.2f} MiB", b / (1 << 20));
  if (b >= double(1 << 10)) return fmt::format("{:.2f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

}  // namespace opmeter
