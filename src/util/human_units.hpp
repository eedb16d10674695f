#pragma once
// Times and sizes as people read them, for every text output (console, reports, analyses).
#include <string>

namespace opmeter {

// 1.5e-3 -> "1.500 ms" (ns, us, ms, s); "-" for zero, a negative time or NaN.
std::string human_time(double seconds);
// 1536 -> "1.50 KiB", in binary units up to GiB; "-" for a negative or NaN size.
std::string human_bytes(double bytes);

}  // namespace opmeter
