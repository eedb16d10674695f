#pragma once
// Times and sizes as people read them, for every text output (console, reports, analyses).
#include <cstddef>
#include <string>

namespace opmeter {

// 1.5e-3 -> "1.500 ms" (ns, us, ms, s); "-" for zero, a negative time or NaN.
std::string human_time(double seconds);
// A rate (throughput) to 4 significant digits, never in e-notation: 45330 -> "45330", 354.42 ->
// "354.4"; "-" for a negative or NaN rate.
std::string human_rate(double per_s);
// 1536 -> "1.50 KiB", in binary units up to GiB; "-" for a negative or NaN size.
std::string human_bytes(double bytes);
// A spread (noise, the median's precision) as a percentage: 0.0123 -> "1.23%"; "-" where it is
// unknown: fewer than two samples, or not finite.
std::string spread_percent(double fraction, std::size_t samples);

}  // namespace opmeter
