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

void throw_unsupported(const char* what, const dnnl::error& e) {
  throw Unsupported(fmt::format("oneDNN has no {} for this case on this CPU ({})", what, e.what()));
}

}  // namespace opmeter::tensor
