// oneDNN matmul primitive; created in setup, outside the timed region. B is stored N x K
// (gemm.hpp): its memory descriptor is the K x N matrix with transposed strides (tag ba).
#include <oneapi/dnnl/dnnl.hpp>

#include <fmt/format.h>

#include "opmeter/context.hpp"
#include "opmeter/registry.hpp"
#include "ops/gemm/gemm.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::gemm {
namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct OnednnTypes {
  dt a, b, c;
};
OnednnTypes onednn_types(DType d) {
  switch (d) {
    case DType::bf16: return {dt::bf16, dt::bf16, dt::f32};
    case DType::int8: return {dt::u8, dt::s8, dt::s32};
    default: return {dt::f32, dt::f32, dt::f32};
  }
}

// Whether oneDNN's int8 matmul computes exactly here: without VNNI it adds u8 x s8 pairs in
// saturating 16-bit lanes (vpmaddubsw), and full-range inputs come out wrong. The CPU must have
// VNNI, and oneDNN must not be held below it (DNNL_MAX_CPU_ISA).
bool int8_exact_here() {
  const auto& cpu = cpu_info();
  if (!cpu.has("avx512_vnni") && !cpu.has("avx_vnni")) return false;
  using isa = dnnl::cpu_isa;
  const isa best = dnnl::get_effective_cpu_isa();
  return best != isa::sse41 && best != isa::avx && best != isa::avx2 && best != isa::avx512_core;
}

// What this CPU's oneDNN runs exactly: bf16 where it has bf16 primitives, int8 with VNNI.
Support supports(const Case& c) {
  if (c.dtype == DType::int8 && !int8_exact_here())
    return Support::no(
        "oneDNN's int8 matmul on a CPU without VNNI sums u8 x s8 pairs in saturating 16-bit lanes "
        "(vpmaddubsw): wrong for full-range inputs, so not measured");
  return tensor::onednn_supports(c);
}

class OnednnGemm : public GemmImpl {
 public:
  void prepare() override {
    auto t = onednn_types(case_.dtype);
    dnnl::memory::desc a_md({d_.M, d_.K}, t.a, tag::ab), b_md({d_.K, d_.N}, t.b, tag::ba),
        c_md({d_.M, d_.N}, t.c, tag::ab);
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine_);
    } catch (const dnnl::error& e) {
      throw Unsupported(fmt::format("oneDNN has no matmul for {} on this CPU ({})", to_string(case_.dtype), e.what()));
    }
    impl_name_ = pd.impl_info_str();
    prim_ = dnnl::matmul(pd);
    args_.clear();
    for (std::size_t i = 0; i < copies(); ++i)
      args_.push_back({{DNNL_ARG_SRC, dnnl::memory(a_md, engine_, a(i))},
                       {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, engine_, b(i))},
                       {DNNL_ARG_DST, dnnl::memory(c_md, engine_, c(i))}});
  }
  void run(std::size_t copy) override {
    prim_.execute(stream_, args_[copy]);
    stream_.wait();
  }
  std::map<std::string, std::string> details() const override { return {{"onednn_impl", impl_name_}}; }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::matmul prim_;
  std::vector<std::unordered_map<int, dnnl::memory>> args_;
  std::string impl_name_;
};

ImplRegistrar reg({
    .op = "gemm",
    .impl = "onednn",
    .preference = ImplDef::fused_library,
    .summary = "oneDNN matmul primitive",
    .dtypes = {DType::fp32, DType::bf16, DType::int8},
    .supports = supports,
    .make = [] { return std::make_unique<OnednnGemm>(); },
});
}  // namespace
}  // namespace opmeter::gemm
