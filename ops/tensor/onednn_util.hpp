#pragma once
// Shared oneDNN plumbing for the tensor ops: one CPU engine and stream, dtype mapping, and a
// primitive run on each cold-cache copy with prebuilt argument maps.
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "opmeter/dtype.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor {

dnnl::engine& onednn_engine();
dnnl::stream& onednn_stream();
// The data type of activations of a case dtype (fp32 or bf16).
dnnl::memory::data_type onednn_type(DType d);
using OnednnArgs = std::unordered_map<int, dnnl::memory>;
// oneDNN's algorithm and parameters for an activation (eltwise primitive or post-op).
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0, beta = 0;
};
Eltwise eltwise_of(Act a);

[[noreturn]] void throw_unsupported(const char* what, const dnnl::error& e);
// Creates a primitive descriptor, turning oneDNN's "unimplemented" into Unsupported (skipped).
template <class F>
auto onednn_try(const char* what, F&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const dnnl::error& e) {
    throw_unsupported(what, e);
  }
}

}  // namespace opmeter::tensor
