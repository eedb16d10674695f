#include "ops/tensor/onednn_util.hpp"

#include <fmt/format.h>

#include "opmeter/op.hpp"

namespace opmeter::tensor {

dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& onednn_stream() {
  static dnnl::stream s(onednn_engine());
  return s;
}

dnnl::memory::data_type onednn_type(DType d) {
  return d == DType::bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

Eltwise eltwise_of(Act a) {
  switch (a) {
    case Act::relu: return {dnnl::algorithm::eltwise_relu};
    case Act::relu6: return {dnnl::algorithm::eltwise_clip_v2, 0, 6};
    case Act::leaky_relu: return {dnnl::algorithm::eltwise_relu, kLeakySlope};
    case Act::gelu: return {dnnl::algorithm::eltwise_gelu_erf};
    case Act::gelu_tanh: return {dnnl::algorithm::eltwise_gelu_tanh};
    case Act::silu: return {dnnl::algorithm::eltwise_swish, 1};
    case Act::sigmoid: return {dnnl::algorithm::eltwise_logistic};
    case Act::hardswish: return {dnnl::algorithm::eltwise_hardswish};
    case Act::none: break;
  }
  return {dnnl::algorithm::eltwise_linear, 1, 0};
}

dnnl::memory onednn_memory(const dnnl::memory::desc& md, const void* p) {
  return dnnl::memory(md, onednn_engine(), const_cast<void*>(p));
}

void OnednnSequence::clear() { steps_.clear(); }

void OnednnSequence::run(std::size_t copy) {
  for (auto& s : steps_) s.primitive.execute(onednn_stream(), s.args[copy]);
  onednn_stream().wait();
}

void OnednnSequence::run_step(std::size_t step, std::size_t copy) {
  steps_.at(step).primitive.execute(onednn_stream(), steps_[step].args.at(copy));
  onednn_stream().wait();
}

std::map<std::string, std::string> OnednnSequence::details() const {
  std::string all;
  for (auto& s : steps_) all += (all.empty() ? "" : " | ") + s.impl;
  return {{"onednn_impl", all}};
}

dnnl::eltwise_forward::primitive_desc onednn_eltwise(Act a, const dnnl::memory::desc& md) {
  auto e = eltwise_of(a);
  return onednn_try("eltwise", [&] {
    return dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.algorithm, md, e.alpha, e.beta),
        onednn_engine());
  });
}

dnnl::primitive_attr onednn_act_post_op(Act a) {
  dnnl::primitive_attr attr;
  if (a == Act::none) return attr;
  auto e = eltwise_of(a);
  dnnl::post_ops po;
  po.append_eltwise(1.0f, e.algorithm, e.alpha, e.beta);
  attr.set_post_ops(po);
  return attr;
}

dnnl::layer_normalization_forward::primitive_desc onednn_layernorm(const dnnl::memory::desc& md) {
  return onednn_try("layer normalization", [&] {
    return dnnl::layer_normalization_forward::primitive_desc(
        dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, kNormEps,
                                                dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
        onednn_engine());
  });
}

dnnl::matmul::primitive_desc onednn_matmul(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                           const dnnl::memory::desc* bias, const dnnl::memory::desc& dst,
                                           const dnnl::primitive_attr& attr) {
  return onednn_try("matmul", [&] {
    auto d = bias ? dnnl::matmul::desc(src, weights, *bias, dst) : dnnl::matmul::desc(src, weights, dst);
    return dnnl::matmul::primitive_desc(d, attr, onednn_engine());
  });
}

dnnl::binary::primitive_desc onednn_add(const dnnl::memory::desc& src0, const dnnl::memory::desc& src1,
                                        const dnnl::memory::desc& dst) {
  return onednn_try("binary add", [&] {
    return dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_add, src0, src1, dst),
                                        onednn_engine());
  });
}

Support onednn_supports(const Case& c) {
  if (c.dtype != DType::bf16) return Support::yes();
  static const std::string no_bf16 = []() -> std::string {
    using dt = dnnl::memory::data_type;
    try {
      const dnnl::memory::desc a({8, 8}, dt::bf16, dnnl::memory::format_tag::ab),
          y({8, 8}, dt::f32, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, y), onednn_engine());
      return "";
    } catch (const dnnl::error&) {
      return "oneDNN has no bf16 primitives on this CPU (they need AVX-512)";
    }
  }();
  return no_bf16.empty() ? Support::yes() : Support::no(no_bf16);
}

void throw_unsupported(const char* what, const dnnl::error& e) {
  throw Unsupported(fmt::format("oneDNN has no {} for this case on this CPU ({})", what, e.what()));
}

}  // namespace opmeter::tensor
