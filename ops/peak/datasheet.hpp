#pragma once
// What NVIDIA's datasheets promise for the GPUs opmeter knows: dense (no sparsity) tensor-core
// rates per dtype, the fp32 CUDA-core rate, the clocks those figures assume, memory bandwidth.
// A measured peak is judged against the datasheet scaled to the clock it ran at.
#include <optional>
#include <string>
#include <string_view>

#include "opmeter/dtype.hpp"

namespace opmeter::peak {

struct Datasheet {
  std::string_view name;  // the device name CUDA reports (cudaDeviceProp::name)
  // Dense tensor-core TFLOP/s with fp32 accumulation (int8: TOPS, s32 accumulation); 0 where the
  // GPU has no such tensor path (A100: fp8).
  double tf32, fp16, bf16, fp8, int8;
  double fp32;            // CUDA-core fp32 FMA TFLOP/s
  double boost_mhz;       // the SM clock the tensor figures assume
  double fp32_boost_mhz;  // the clock the fp32 figure assumes (H100: 1980, its tensor figures 1830)
  double bandwidth_gbs;   // memory bandwidth, GB/s

  // The datasheet rate of a dtype in TFLOP/s, and the clock it assumes; empty where it has none.
  std::optional<double> tflops(DType d) const;
  double clock_mhz(DType d) const { return d == DType::fp32 ? fp32_boost_mhz : boost_mhz; }
};

// The datasheet of a GPU by its CUDA device name (exact, surrounding spaces ignored).
std::optional<Datasheet> datasheet(std::string_view gpu_name);

// A datasheet rate at another SM clock: rate x clock / boost (the tensor and FMA rates are per
// clock). Zero for a non-positive boost.
constexpr double at_clock(double rate, double clock_mhz, double boost_mhz) {
  return boost_mhz > 0 ? rate * clock_mhz / boost_mhz : 0.0;
}

}  // namespace opmeter::peak

namespace opmeter {
struct Result;
// A GPU `peak` result beside NVIDIA's datasheet for `gpu_name`: details get the dense rate of
// its dtype, that rate at the SM clock the samples ran at (details.sm_clock_median_mhz, NVML's),
// and pct_of_datasheet_at_clock; or why there is no datasheet.
void compare_with_datasheet(Result& r, const std::string& gpu_name);
}  // namespace opmeter
