#include "ops/tensor/onednn_pack.hpp"

namespace opmeter::tensor {
namespace {
constexpr std::size_t kBlockK = 32, kBlockN = 64;
}

bool is_amx_bf16_packed(const dnnl::memory::desc& md) {
  auto dims = md.dims();
  if (dims.size() != 2 || dims[0] % kBlockK != 0 || dims[1] % kBlockN != 0) return false;
  return md == dnnl::memory::desc(dims, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::BA16a64b2a);
}

void pack_amx_bf16(const std::uint16_t* src, std::uint16_t* dst, std::size_t k, std::size_t n) {
  const std::size_t pairs = k / 2;
#pragma omp parallel for schedule(static)
  for (std::size_t p = 0; p < pairs; ++p) {
    const std::uint16_t* r0 = src + 2 * p * n;
    const std::uint16_t* r1 = r0 + n;
    const std::size_t kk = 2 * p;
    for (std::size_t n0 = 0; n0 < n; n0 += kBlockN) {
      std::uint16_t* o = dst + (n0 / kBlockN) * k * kBlockN + (kk / kBlockK) * kBlockK * kBlockN + (kk % kBlockK) / 2 * 2 * kBlockN;
      for (std::size_t j = 0; j < kBlockN; ++j) {
        o[2 * j] = r0[n0 + j];
        o[2 * j + 1] = r1[n0 + j];
      }
    }
  }
}

}  // namespace opmeter::tensor
