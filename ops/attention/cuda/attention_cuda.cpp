// impl `cuda`: the attention spec's q, k, v uploaded, opmeter's flash-attention kernel
// (flash_attention_sm80.cu), O brought back for the spec's check. Shape limits (dtype, stage,
// head_dim) are in the impl's declaration (attention_cuda_impls.cpp); the device ones here.
#include <fmt/format.h>

#include "ops/attention/attention.hpp"
#include "ops/attention/cuda/flash_attention.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::attention {
namespace {

class CudaFlashAttention : public cuda::DeviceImpl<AttentionOp> {
 public:
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "flash forward: mma.sync m16n8k16 (fp32 accumulation), 128 query rows x 64-key tiles, "
                       "cp.async double buffering, online softmax"},
            {"shared_bytes", std::to_string(flash_shared_bytes(static_cast<int>(shape_of(case_).d)))}};
  }

 private:
  void prepare() override { flash_prepare(case_.dtype, static_cast<int>(shape_of(case_).d)); }
  void launch() override {
    auto s = shape_of(case_);
    launch_flash_attention(case_.dtype,
                           {.q = in(kQ), .k = in(kK), .v = in(kV), .o = out(),
                            .heads_total = static_cast<std::int64_t>(s.heads_total()), .seq = static_cast<int>(s.seq),
                            .head_dim = static_cast<int>(s.d), .causal = s.causal, .scale = s.scale()},
                           stream());
  }
};

Support device_supports(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p, cuda::Kernels::mma); !own.ok) return own;
  auto s = shape_of(c);
  // The host rule's words (attention_cuda_impls.cpp): this check runs first where a GPU is.
  if (!flash_head_dim_built(static_cast<int>(s.d)))
    return Support::no(fmt::format("the flash kernel is built for head_dim 64 and 128, not {}", s.d));
  const std::size_t need = flash_shared_bytes(static_cast<int>(s.d));
  if (static_cast<std::size_t>(p.prop.sharedMemPerBlockOptin) < need)
    return Support::no(fmt::format("the flash kernel needs {} bytes of shared memory per block; {} allows {}", need,
                                   p.prop.name, p.prop.sharedMemPerBlockOptin));
  if (s.heads_total() > 0x7fffffffu) return Support::no("batch * heads above 2^31 - 1 blocks");
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in attention_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = device_supports,
      .make = [] { return std::make_unique<CudaFlashAttention>(); },
  };
}

}  // namespace opmeter::attention
