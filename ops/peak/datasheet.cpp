#include "ops/peak/datasheet.hpp"

#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "opmeter/result.hpp"

namespace opmeter::peak {
namespace {

// Sources (dense figures; the datasheets' larger "with sparsity" numbers are twice these):
// - H100 SXM5 / PCIe: NVIDIA H100 Tensor Core GPU datasheet and the "NVIDIA H100 Tensor Core GPU
//   Architecture" whitepaper (table "NVIDIA Tesla A100 / H100 ... comparison"). Its tensor
//   figures assume 1830 MHz (SXM5) / 1620 MHz (PCIe), its fp32 figures 1980 / 1755 MHz:
//   132 SMs x 4096 bf16 flop/clk x 1.83 GHz = 989.4 TFLOP/s; 132 x 256 x 1.98 GHz = 66.9.
// - H200 (SXM): NVIDIA H200 Tensor Core GPU datasheet: the H100 SXM5's rates, 4.8 TB/s.
// - A100 SXM4 / PCIe, 40 / 80 GB: NVIDIA A100 Tensor Core GPU datasheet and the "NVIDIA A100
//   Tensor Core GPU Architecture" whitepaper, 1410 MHz boost (108 SMs x 2048 x 1.41 = 312).
// - L40S: NVIDIA L40S datasheet, 2520 MHz boost.
// - L4: NVIDIA L4 Tensor Core GPU datasheet, 2040 MHz boost.
// - GeForce RTX 4090: "NVIDIA Ada GPU Architecture" whitepaper, appendix table, 2520 MHz boost;
//   GeForce runs fp16/bf16/fp8 with fp32 accumulation at half the fp16-accumulate rate, and
//   opmeter's kernels accumulate in fp32, so those are the figures here.
// tf32 fp16 bf16 fp8 int8 | fp32 | tensor MHz, fp32 MHz | GB/s
constexpr std::array kSheets{
    Datasheet{"NVIDIA H100 80GB HBM3", 494.7, 989.4, 989.4, 1978.9, 1978.9, 66.9, 1830, 1980, 3352},
    Datasheet{"NVIDIA H100 PCIe", 378.0, 756.5, 756.5, 1513.0, 1513.0, 51.2, 1620, 1755, 2039},
    Datasheet{"NVIDIA H200", 494.7, 989.4, 989.4, 1978.9, 1978.9, 66.9, 1830, 1980, 4800},
    Datasheet{"NVIDIA A100-SXM4-40GB", 156, 312, 312, 0, 624, 19.5, 1410, 1410, 1555},
    Datasheet{"NVIDIA A100-SXM4-80GB", 156, 312, 312, 0, 624, 19.5, 1410, 1410, 2039},
    Datasheet{"NVIDIA A100-PCIE-40GB", 156, 312, 312, 0, 624, 19.5, 1410, 1410, 1555},
    Datasheet{"NVIDIA A100 80GB PCIe", 156, 312, 312, 0, 624, 19.5, 1410, 1410, 1935},
    Datasheet{"NVIDIA L40S", 183, 362.05, 362.05, 733, 733, 91.6, 2520, 2520, 864},
    Datasheet{"NVIDIA L4", 60, 121, 121, 242.5, 242.5, 30.3, 2040, 2040, 300},
    Datasheet{"NVIDIA GeForce RTX 4090", 82.6, 165.2, 165.2, 330.3, 660.6, 82.6, 2520, 2520, 1008},
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
  auto clock = r.details.find("sm_clock_median_mhz");
  if (clock == r.details.end()) return;  // no NVML: no clock to scale to
  double mhz = std::atof(clock->second.c_str());
  double expected = peak::at_clock(*tflops, mhz, sheet->clock_mhz(r.kase.dtype));
  if (!(expected > 0)) return;
  r.details["datasheet_at_clock_tflops"] = fmt::format("{:.1f} at {:.0f} MHz", expected, mhz);
  r.details["pct_of_datasheet_at_clock"] = fmt::format("{:.1f}", 100 * r.gflops / 1000 / expected);
}

}  // namespace opmeter
