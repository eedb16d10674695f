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

void throw_unsupported(const char* what, const dnnl::error& e) {
  throw Unsupported(fmt::format("oneDNN has no {} for this case on this CPU ({})", what, e.what()));
}

}  // namespace opmeter::tensor
