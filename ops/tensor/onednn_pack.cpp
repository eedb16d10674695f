#include "ops/tensor/onednn_pack.hpp"

#include <omp.h>

#include <algorithm>

#include "ops/tensor/onednn_util.hpp"

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

namespace opmeter::tensor {
namespace {
// B's slab: at most `bytes` (default half of a 2 MiB L2), a multiple of 64 columns dividing n.
std::size_t slab_columns(std::size_t k, std::size_t n, std::size_t bytes) {
  std::size_t s = std::max<std::size_t>(kBlockN, bytes / (2 * k) / kBlockN * kBlockN);
  s = std::min(s, n);
  while (n % s != 0) s -= kBlockN;
  return s;
}
}  // namespace

PackedSlabMatmul::PackedSlabMatmul(std::size_t m, std::size_t k, std::size_t n, std::size_t slab_bytes)
    : m_(m), k_(k), n_(n), slab_(slab_columns(k, n, slab_bytes)), threads_(omp_get_max_threads()) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const auto M = dnnl::memory::dim(m), K = dnnl::memory::dim(k), S = dnnl::memory::dim(slab_);
  src_md_ = dnnl::memory::desc({M, K}, dt::bf16, tag::ab);
  b_md_ = dnnl::memory::desc({K, S}, dt::bf16, tag::BA16a64b2a);
  slab_md_ = dnnl::memory::desc({M, S}, dt::bf16, tag::ab);
  // oneDNN splits a primitive's work by the threads there are when it is made: one here.
  // Each thread hands the matmul a scratchpad of its own (oneDNN's own may be one per primitive).
  omp_set_num_threads(1);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto pd = onednn_matmul(src_md_, b_md_, nullptr, slab_md_, attr);
    scratchpad_md_ = pd.scratchpad_desc();
    impl_ = pd.impl_info_str();
    matmul_ = dnnl::matmul(pd);
  } catch (...) {
    omp_set_num_threads(threads_);
    throw;
  }
  omp_set_num_threads(threads_);
  for (int t = 0; t < threads_; ++t) {
    streams_.emplace_back(onednn_engine());
    scratch_.emplace_back(m * slab_);
    scratchpads_.emplace_back(scratchpad_md_, onednn_engine());
  }
}

bool PackedSlabMatmul::fast() const { return !impl_.empty() && impl_.find("ref") == std::string::npos; }

void PackedSlabMatmul::run(const void* src, const std::uint16_t* packed_b, void* dst) {
  auto* out = static_cast<std::uint16_t*>(dst);
  const std::size_t slabs = n_ / slab_;
#pragma omp parallel num_threads(threads_)
  {
    const int t = omp_get_thread_num();
    auto a = onednn_memory(src_md_, src);
    auto slab = onednn_memory(slab_md_, scratch_[t].data());
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < slabs; ++i) {
      const std::size_t n0 = i * slab_;
      // Slab n0 of B is contiguous in the packed layout: its 64-column blocks are outermost.
      auto b = onednn_memory(b_md_, packed_b + n0 * k_);
      matmul_.execute(streams_[t], {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, slab},
                                    {DNNL_ARG_SCRATCHPAD, scratchpads_[t]}});
      streams_[t].wait();
      for (std::size_t r = 0; r < m_; ++r) std::copy_n(scratch_[t].data() + r * slab_, slab_, out + r * n_ + n0);
    }
  }
}

}  // namespace opmeter::tensor
