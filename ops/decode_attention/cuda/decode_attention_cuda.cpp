// impl `cuda` of decode_attention: the spec's q, K, V uploaded, opmeter's flash-decoding kernels
// (decode_kernels.cu), the output brought back for the spec's check. Shape limits are in the
// impl's ImplDef (decode_attention_cuda_impls.cpp).
#include <cmath>

#include <fmt/format.h>

#include "ops/decode_attention/cuda/decode_kernels.hpp"
#include "ops/decode_attention/decode_attention.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::decode_attention {
namespace {

class CudaDecodeAttention : public cuda::DeviceImpl<DecodeAttentionOp> {
 public:
  std::map<std::string, std::string> details() const override {
    return {{"kernel", fmt::format("flash-decoding: {} splits of {} keys per head, {}", plan_.splits, plan_.chunk,
                                   plan_.fast ? "16-byte loads, a key per group of lanes" : "generic path: a warp per key, scalar loads")}};
  }

 private:
  void prepare() override {
    auto s = shape_of(case_);
    plan_ = plan_decode(case_.dtype, static_cast<std::int64_t>(s.bh), static_cast<std::int64_t>(s.kv), static_cast<int>(s.d),
                        cuda::props(device()).prop.multiProcessorCount);
    const std::size_t bytes = plan_.splits > 1 ? s.bh * std::size_t(plan_.splits) * (s.d + 2) * sizeof(float) : 0;
    if (partials_.bytes() != bytes) partials_ = bytes ? cuda::DeviceBuffer(bytes) : cuda::DeviceBuffer();
  }
  void launch() override {
    auto s = shape_of(case_);
    launch_decode(case_.dtype,
                  {.q = in(kQ),
                   .k = in(kK),
                   .v = in(kV),
                   .out = out(),
                   .partials = static_cast<float*>(partials_.data()),
                   .heads = static_cast<std::int64_t>(s.bh),
                   .kv = static_cast<std::int64_t>(s.kv),
                   .d = static_cast<int>(s.d),
                   .splits = plan_.splits,
                   .chunk = plan_.chunk,
                   .scale_log2 = s.scale() * static_cast<float>(M_LOG2E)},
                  stream());
  }

  DecodePlan plan_;
  cuda::DeviceBuffer partials_;
};

}  // namespace

// The plugin's half of this impl, named by its declaration in decode_attention_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [] { return std::make_unique<CudaDecodeAttention>(); },
  };
}

}  // namespace opmeter::decode_attention
