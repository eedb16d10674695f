#pragma once
// Shared oneDNN plumbing for the tensor ops: one CPU engine and stream, dtype mapping, and a
// primitive run on each cold-cache copy with prebuilt argument maps.
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "opmeter/dtype.hpp"
#include "opmeter/op.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::tensor {

dnnl::engine& onednn_engine();
dnnl::stream& onednn_stream();
// The data type of activations of a case dtype (fp32 or bf16).
dnnl::memory::data_type onednn_type(DType d);
using OnednnArgs = std::unordered_map<int, dnnl::memory>;
// A oneDNN memory over a buffer we own (oneDNN wants a non-const pointer even for inputs).
dnnl::memory onednn_memory(const dnnl::memory::desc& md, const void* p);

// Primitives run one after another on a cold-cache copy: a fused op is a sequence of one, an
// unfused one has a step per op with intermediates in memory. Records each step's oneDNN impl.
class OnednnSequence {
 public:
  void clear();
  // Adds a step; args_of_copy(i) gives its arguments for input set i.
  template <class F>
  void add(dnnl::primitive p, std::string impl, std::size_t copies, F&& args_of_copy) {
    std::vector<OnednnArgs> a;
    for (std::size_t i = 0; i < copies; ++i) a.push_back(args_of_copy(i));
    steps_.push_back({std::move(p), std::move(impl), std::move(a)});
  }
  void run(std::size_t copy);  // every step, then waits
  // One step, then waits (steps between our own kernels).
  void run_step(std::size_t step, std::size_t copy);
  std::map<std::string, std::string> details() const;  // {"onednn_impl": "a | b | c"}

 private:
  struct Step {
    dnnl::primitive primitive;
    std::string impl;
    std::vector<OnednnArgs> args;
  };
  std::vector<Step> steps_;
};

// oneDNN's algorithm and parameters for an activation (eltwise primitive or post-op).
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0, beta = 0;
};
Eltwise eltwise_of(Act a);
// The eltwise primitive for an activation over md (in place allowed), and the attribute that
// fuses it into another primitive as a post-op (empty for Act::none).
dnnl::eltwise_forward::primitive_desc onednn_eltwise(Act a, const dnnl::memory::desc& md);
dnnl::primitive_attr onednn_act_post_op(Act a);

// Inference LayerNorm (affine, eps kNormEps) over the rows of md.
dnnl::layer_normalization_forward::primitive_desc onednn_layernorm(const dnnl::memory::desc& md);
// dst = src x weights [+ bias] with attr's output scales / post-ops.
dnnl::matmul::primitive_desc onednn_matmul(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                           const dnnl::memory::desc* bias, const dnnl::memory::desc& dst,
                                           const dnnl::primitive_attr& attr = {});
// dst = src0 + src1 (src1 may broadcast: a bias row); in place allowed.
dnnl::binary::primitive_desc onednn_add(const dnnl::memory::desc& src0, const dnnl::memory::desc& src1,
                                        const dnnl::memory::desc& dst);

// Whether oneDNN runs `c`'s dtype on this CPU at all: oneDNN has bf16 primitives only from
// AVX-512 on (probed once, with a small bf16 matmul); fp32 everywhere. The oneDNN impls' supports:
// `opmeter list` and the planners see it before any case is set up.
Support onednn_supports(const Case& c);

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
