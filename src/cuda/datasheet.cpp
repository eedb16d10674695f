#include "cuda/datasheet.hpp"

#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "opmeter/result.hpp"

namespace opmeter::peak {
namespace {

// Dense figures (the datasheets' "with sparsity" tensor numbers are twice these). Where a datasheet
// gives no fp64 figure, it is derived from the architecture's FP64 units (Turing 1/32, GA10x and
// Ada 1/64 of fp32) and the source says so.
constexpr std::string_view kH100Source =
    "NVIDIA H100 Tensor Core GPU datasheet; NVIDIA H100 Tensor Core GPU Architecture whitepaper (tensor figures "
    "at 1830 MHz SXM5 / 1620 MHz PCIe, fp32 and fp64 at 1980 / 1755 MHz); fp64 is the FP64 Tensor Core rate";
constexpr std::string_view kA100Source =
    "NVIDIA A100 Tensor Core GPU datasheet; NVIDIA A100 Tensor Core GPU Architecture whitepaper (1410 MHz); fp64 is "
    "the FP64 Tensor Core rate";
// fp64 fp32 tf32 fp16 bf16 fp8 int8 | tensor MHz, fp32 MHz | SMs | GB/s | source
constexpr std::array kSheets{
    Datasheet{"Tesla T4", 0.25, 8.1, 0, 65, 0, 0, 130, 1590, 1590, 40, 320,
              "NVIDIA T4 Tensor Core GPU datasheet (fp32 8.1, fp16 with fp32 accumulation 65, int8 130 TOPS); "
              "fp64 derived: 1/32 of fp32 (Turing); no tf32, bf16 or fp8 tensor path"},
    Datasheet{"NVIDIA A10", 0.49, 31.2, 62.5, 125, 125, 0, 250, 1695, 1695, 72, 600,
              "NVIDIA A10 Tensor Core GPU datasheet; fp64 derived: 1/64 of fp32 (GA102)"},
    Datasheet{"NVIDIA A100-SXM4-40GB", 19.5, 19.5, 156, 312, 312, 0, 624, 1410, 1410, 108, 1555, kA100Source},
    Datasheet{"NVIDIA A100-SXM4-80GB", 19.5, 19.5, 156, 312, 312, 0, 624, 1410, 1410, 108, 2039, kA100Source},
    Datasheet{"NVIDIA A100-PCIE-40GB", 19.5, 19.5, 156, 312, 312, 0, 624, 1410, 1410, 108, 1555, kA100Source},
    Datasheet{"NVIDIA A100 80GB PCIe", 19.5, 19.5, 156, 312, 312, 0, 624, 1410, 1410, 108, 1935, kA100Source},
    Datasheet{"NVIDIA L4", 0.47, 30.3, 60, 121, 121, 242.5, 242.5, 2040, 2040, 58, 300,
              "NVIDIA L4 Tensor Core GPU datasheet; fp64 derived: 1/64 of fp32 (Ada)"},
    Datasheet{"NVIDIA L40S", 1.43, 91.6, 183, 362.05, 362.05, 733, 733, 2520, 2520, 142, 864,
              "NVIDIA L40S GPU datasheet; fp64 derived: 1/64 of fp32 (Ada)"},
    Datasheet{"NVIDIA H100 80GB HBM3", 67, 66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9, 1830, 1980, 132, 3352, kH100Source},
    Datasheet{"NVIDIA H100 PCIe", 51.2, 51.2, 378, 756.5, 756.5, 1513, 1513, 1620, 1755, 114, 2039, kH100Source},
    Datasheet{"NVIDIA H200", 67, 66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9, 1830, 1980, 132, 4800,
              "NVIDIA H200 Tensor Core GPU datasheet (SXM: the H100 SXM5's rates, 4.8 TB/s); clocks as the H100 "
              "whitepaper's"},
    Datasheet{"NVIDIA B200", 37, 75, 1100, 2250, 2250, 4500, 4500, 1856, 1980, 148, 7700,
              "NVIDIA HGX B200 specifications, per GPU (its tensor figures are with sparsity, halved here); NVIDIA "
              "publishes no clock: tensor clock derived as 2250 TFLOP/s / (148 SMs x 8192 fp16 flop/clk) = 1856 MHz, "
              "fp32 clock as 75 TFLOP/s / (148 x 256) = 1980 MHz"},
    Datasheet{"NVIDIA GeForce RTX 4090", 1.29, 82.6, 82.6, 165.2, 165.2, 330.3, 660.6, 2520, 2520, 128, 1008,
              "NVIDIA Ada GPU Architecture whitepaper, appendix table (GeForce: fp16 / bf16 / fp8 with fp32 "
              "accumulation at half the fp16-accumulate rate); fp64 derived: 1/64 of fp32"},
    Datasheet{"NVIDIA GeForce RTX 5090", 1.64, 104.8, 104.8, 209.5, 209.5, 419, 838, 2407, 2407, 170, 1792,
              "NVIDIA GeForce RTX 5090 specifications (170 SMs, 2407 MHz boost, 1792 GB/s, 838 fp16 TFLOP/s sparse with "
              "fp16 accumulation); fp32-accumulate tensor rates derived per SM and clock as the Ada whitepaper gives "
              "the RTX 4090's (half rate on GeForce), not checked against the RTX Blackwell whitepaper; fp64 1/64 of "
              "fp32"},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<double> Datasheet::tflops(DType d) const {
  double v = 0;
  switch (d) {
    case DType::tf32: v = tf32; break;
    case DType::fp16: v = fp16; break;
    case DType::bf16: v = bf16; break;
    case DType::fp8_e4m3: v = fp8; break;
    case DType::int8: v = int8; break;
    case DType::fp32: v = fp32; break;
    case DType::fp64: v = fp64; break;
    default: break;
  }
  if (v <= 0) return std::nullopt;
  return v;
}

std::optional<Datasheet> datasheet(std::string_view gpu_name) {
  gpu_name = trim(gpu_name);
  for (const auto& s : kSheets)
    if (s.name == gpu_name) return s;
  return std::nullopt;
}

}  // namespace opmeter::peak

namespace opmeter::peak {

std::optional<double> datasheet_gflops_at_clock(const Result& r, DType d, const std::string& gpu_name) {
  auto sheet = datasheet(gpu_name);
  if (!sheet) return std::nullopt;
  auto tflops = sheet->tflops(d);
  auto clock = r.details.find("sm_clock_median_mhz");
  if (!tflops || clock == r.details.end()) return std::nullopt;  // no NVML: no clock to scale to
  const double gflops = 1000 * at_clock(*tflops, std::atof(clock->second.c_str()), sheet->clock_mhz(d));
  return gflops > 0 ? std::optional<double>(gflops) : std::nullopt;
}

std::optional<GpuCeiling> choose_gpu_ceiling(std::optional<double> own, std::optional<double> sheet) {
  if (own && !(*own > 0)) own.reset();
  if (sheet && !(*sheet > 0)) sheet.reset();
  if (own && (!sheet || *own >= kOwnPeakShortfall * *sheet)) return GpuCeiling{*own, false, ""};
  if (!sheet) return std::nullopt;
  const std::string why = own ? fmt::format("opmeter's own peak kernels reach only {:.0f}% of it", 100 * *own / *sheet)
                              : "no own peak kernel ran this dtype here";
  return GpuCeiling{*sheet, true, fmt::format("datasheet rate at the measured SM clock, {:.1f} TFLOP/s ({})", *sheet / 1000, why)};
}

}  // namespace opmeter::peak

namespace opmeter {

// A GPU peak result beside NVIDIA's datasheet: the dense rate of its dtype, that rate scaled to the
// SM clock the samples ran at (NVML's median over the burst), and the measured share of it.
void compare_with_datasheet(Result& r, const std::string& gpu_name) {
  auto sheet = peak::datasheet(gpu_name);
  if (!sheet) {
    r.details["datasheet"] = fmt::format("no datasheet known for '{}'", gpu_name);
    return;
  }
  auto tflops = sheet->tflops(r.kase.dtype);
  if (!tflops || !(r.gflops > 0)) return;
  r.details["datasheet_tflops"] = fmt::format("{:.1f} at {:.0f} MHz", *tflops, sheet->clock_mhz(r.kase.dtype));
  auto expected = peak::datasheet_gflops_at_clock(r, r.kase.dtype, gpu_name);
  if (!expected) return;
  r.details["datasheet_at_clock_tflops"] =
      fmt::format("{:.1f} at {:.0f} MHz", *expected / 1000, std::atof(r.details["sm_clock_median_mhz"].c_str()));
  r.details["pct_of_datasheet_at_clock"] = fmt::format("{:.1f}", 100 * r.gflops / *expected);
}

}  // namespace opmeter
