// impl `opmeter` of decode_attention: the CPU kernel of decode_attention_cpu.hpp on the spec's
// host inputs.
#include <omp.h>

#include <algorithm>

#include <fmt/format.h>

#include "ops/decode_attention/decode_attention.hpp"
#include "ops/decode_attention/decode_attention_cpu.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::decode_attention {
namespace {

class OpmeterDecodeAttention : public HostImpl<DecodeAttentionOp> {
 public:
  void prepare() override { ws_.size_for(args(0), static_cast<std::size_t>(std::max({case_.threads, omp_get_max_threads(), 1}))); }
  void run(std::size_t copy) override { run_cpu(args(copy), ws_); }
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "online softmax over blocks of 64 keys, omp-simd dot products and value sums"},
            {"chunks_per_head", std::to_string(ws_.chunks)}};
  }

 private:
  CpuArgs args(std::size_t copy) {
    auto s = shape_of(case_);
    return {.bf16 = bf16(),
            .q = in(copy, kQ),
            .k = in(copy, kK),
            .v = in(copy, kV),
            .out = out(copy),
            .heads = s.bh,
            .kv = s.kv,
            .d = s.d,
            .scale = s.scale()};
  }
  CpuWorkspace ws_;
};

const ImplRegistrar reg({
    .op = "decode_attention",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "opmeter's kernel: online softmax streaming K and V once, heads split over kv chunks when few",
    .dtypes = {DType::fp32, DType::bf16},
    .make = [] { return std::make_unique<OpmeterDecodeAttention>(); },
});

}  // namespace
}  // namespace opmeter::decode_attention
