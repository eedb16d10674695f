#include "opmeter/cuda/kernel_gate.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace opmeter::cuda {
namespace {
std::string sm(int cc) { return fmt::format("sm_{}", cc); }
}  // namespace

KernelNeeds needs_of(Kernels k) {
  switch (k) {
    case Kernels::plain: return {0, "opmeter's CUDA kernels"};
    case Kernels::mma: return {80, "mma.sync m16n8k16 (fp16/bf16), ldmatrix and cp.async"};
    case Kernels::fp8_mma: return {89, "fp8 (e4m3) mma.sync"};
    case Kernels::wgmma: return {90, "wgmma (sm_90a code)", true};
  }
  return {};
}

BuiltArchs parse_cuda_architectures(std::string_view list) {
  BuiltArchs b;
  while (!list.empty()) {
    const auto end = std::min(list.find_first_of(";,"), list.size());
    std::string_view item = list.substr(0, end);
    list.remove_prefix(std::min(end + 1, list.size()));
    int arch = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), arch);
    if (ec != std::errc() || arch <= 0) continue;
    std::string_view rest(p, static_cast<std::size_t>(item.data() + item.size() - p));
    if (!rest.empty() && rest.front() == 'a') {
      b.arch_specific = true;
      rest.remove_prefix(1);
    }
    const bool real = rest.empty() || rest == "-real";
    const bool virt = rest.empty() || rest == "-virtual";
    if (real && std::find(b.sass.begin(), b.sass.end(), arch) == b.sass.end()) b.sass.push_back(arch);
    if (virt) b.ptx = std::max(b.ptx, arch);
  }
  std::sort(b.sass.begin(), b.sass.end());
  return b;
}

std::string describe(const BuiltArchs& built) {
  const char* a = built.arch_specific ? "a" : "";
  std::string out;
  for (std::size_t i = 0; i < built.sass.size(); ++i)
    out += fmt::format("{}sm_{}{}", i == 0 ? "" : ", ", built.sass[i], a);
  if (built.ptx > 0) out += fmt::format("{}PTX compute_{}{}", out.empty() ? "" : " and ", built.ptx, a);
  return out.empty() ? "no architecture" : out;
}

bool has_image_for(const BuiltArchs& built, int cc) {
  for (int arch : built.sass) {
    if (built.arch_specific ? arch == cc : arch / 10 == cc / 10 && arch <= cc) return true;
  }
  return built.ptx > 0 && (built.arch_specific ? built.ptx == cc : built.ptx <= cc);
}

Support kernel_runs_on(const KernelNeeds& needs, const BuiltArchs& built, int cc) {
  const bool too_old = needs.arch_specific ? cc != needs.min_cc : cc < needs.min_cc;
  if (too_old)
    return Support::no(fmt::format("{} needs compute capability {}.{}{}; this GPU is {}", needs.what, needs.min_cc / 10,
                                   needs.min_cc % 10, needs.arch_specific ? " exactly" : " or newer", sm(cc)));
  if (!has_image_for(built, cc))
    return Support::no(fmt::format("built for {}; this GPU is {}", describe(built), sm(cc)));
  return Support::yes();
}

}  // namespace opmeter::cuda
