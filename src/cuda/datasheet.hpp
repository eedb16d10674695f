#pragma once
// What NVIDIA's datasheets promise for the GPUs opmeter knows: dense (no sparsity) rates per
// dtype, the clocks those figures assume, SM count, memory bandwidth, and where each figure comes
// from. A measured peak is judged against the datasheet scaled to the clock it ran at; where
// opmeter's own peak kernels cannot reach a GPU's tensor-core rate (Blackwell's tcgen05 path, a
// T4's m16n8k8 path), a GEMM's % of peak is taken against the datasheet rate instead.
#include <optional>
#include <string>
#include <string_view>

#include "opmeter/dtype.hpp"

namespace opmeter {
struct Result;
}  // namespace opmeter

namespace opmeter::peak {

struct Datasheet {
  std::string_view name;  // the device name CUDA and NVML report (cudaDeviceProp::name)
  // Dense TFLOP/s: fp64 on its tensor cores where the GPU has them (A100, H100, H200, B200), else
  // on its CUDA cores; fp32 on the CUDA cores; tf32 / fp16 / bf16 / fp8 on the tensor cores with
  // fp32 accumulation, int8 in TOPS (s32 accumulation). 0 where the GPU has no such path.
  double fp64, fp32, tf32, fp16, bf16, fp8, int8;
  double boost_mhz;       // the SM clock the tensor figures assume
  double fp32_boost_mhz;  // the clock the fp32 / fp64 figures assume (H100 SXM: 1980, tensor 1830)
  int sms;                // streaming multiprocessors
  double bandwidth_gbs;   // memory bandwidth, GB/s
  std::string_view source;  // the documents the figures come from, and what was derived

  // The datasheet rate of a dtype in TFLOP/s, and the clock it assumes; empty where it has none.
  std::optional<double> tflops(DType d) const;
  double clock_mhz(DType d) const { return d == DType::fp32 || d == DType::fp64 ? fp32_boost_mhz : boost_mhz; }
};

// The datasheet of a GPU by its CUDA / NVML device name (exact, surrounding spaces ignored).
std::optional<Datasheet> datasheet(std::string_view gpu_name);

// A datasheet rate at another SM clock: rate x clock / boost (the tensor and FMA rates are per
// clock). Zero for a non-positive boost.
constexpr double at_clock(double rate, double clock_mhz, double boost_mhz) {
  return boost_mhz > 0 ? rate * clock_mhz / boost_mhz : 0.0;
}

// The datasheet rate of `d` for `gpu_name` in GFLOP/s at the SM clock a result's samples ran at
// (details.sm_clock_median_mhz, NVML's); empty without a datasheet, a rate or a clock.
std::optional<double> datasheet_gflops_at_clock(const Result& r, DType d, const std::string& gpu_name);

// What a GPU result's % of peak is taken against.
struct GpuCeiling {
  double gflops = 0;
  bool from_datasheet = false;
  std::string note;  // for details.peak_source when from_datasheet
};
// Own peak kernels reaching less than this share of the datasheet rate do not show the GPU's peak.
inline constexpr double kOwnPeakShortfall = 0.8;
// The fastest own peak kernel's measured rate, unless it reaches less than kOwnPeakShortfall of
// the datasheet rate at the measured clock, or no own kernel ran the dtype: then the datasheet's.
// Empty where neither is known.
std::optional<GpuCeiling> choose_gpu_ceiling(std::optional<double> own_peak_gflops, std::optional<double> datasheet_gflops);

}  // namespace opmeter::peak

namespace opmeter {
// A GPU `peak` result beside NVIDIA's datasheet for `gpu_name`: details get the dense rate of
// its dtype, that rate at the SM clock the samples ran at (details.sm_clock_median_mhz, NVML's),
// and pct_of_datasheet_at_clock; or why there is no datasheet.
void compare_with_datasheet(Result& r, const std::string& gpu_name);
}  // namespace opmeter
