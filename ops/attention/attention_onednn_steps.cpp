#include "ops/attention/attention_onednn_steps.hpp"

#include <limits>

namespace opmeter::attention {
namespace {
// A dense row-major descriptor of any rank.
dnnl::memory::desc dense(const dnnl::memory::dims& dims, dnnl::memory::data_type t) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return {dims, t, strides};
}
}  // namespace

void OnednnAttentionSteps::add(tensor::OnednnSequence& seq, const OnednnAttentionLayout& md, DType dtype,
                               float scale, bool causal, Stage stage, std::size_t copies, const Input& q,
                               const Input& k, const Input& v, const Output& out) {
  using dt = dnnl::memory::data_type;
  auto act_t = tensor::onednn_type(dtype);
  auto dims = md.q.dims();  // [..., n, d]
  const auto n = dims[dims.size() - 2];
  dims.back() = n;
  dnnl::memory::dims ones(dims.size(), 1);
  ones[ones.size() - 2] = ones.back() = n;
  std::size_t square = 1;
  for (auto x : dims) square *= std::size_t(x);
  const auto s_md = dense(dims, stage == Stage::scores ? act_t : dt::f32), p_md = dense(dims, act_t),
             mask_md = dense(ones, dt::f32);
  auto mem = tensor::onednn_memory;

  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {scale});
  if (causal) {
    mask_ = Buffer(std::size_t(n * n) * sizeof(float));
    for (std::size_t i = 0; i < std::size_t(n); ++i)
      for (std::size_t j = 0; j < std::size_t(n); ++j)
        mask_.as<float>()[i * std::size_t(n) + j] = j > i ? -std::numeric_limits<float>::infinity() : 0.0f;
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_add, mask_md);
    attr.set_post_ops(po);
  }
  if (stage != Stage::scores) scores_ = Buffer(square * sizeof(float));
  if (stage == Stage::full) probs_ = Buffer(square * size_of(dtype));
  auto mm1 = tensor::onednn_matmul(md.q, md.kt, nullptr, s_md, attr);
  seq.add(dnnl::matmul(mm1), mm1.impl_info_str(), copies, [&](std::size_t i) {
    tensor::OnednnArgs a{{DNNL_ARG_SRC, mem(md.q, q(i))},
                         {DNNL_ARG_WEIGHTS, mem(md.kt, k(i))},
                         {DNNL_ARG_DST, mem(s_md, stage == Stage::scores ? out(i) : scores_.data())}};
    if (causal) a.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mem(mask_md, mask_.data()));
    return a;
  });
  if (stage == Stage::scores) return;
  auto sm = tensor::onednn_try("softmax", [&] {
    return dnnl::softmax_v2_forward::primitive_desc(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, s_md,
                                       p_md, int(dims.size()) - 1),
        tensor::onednn_engine());
  });
  seq.add(dnnl::softmax_v2_forward(sm), sm.impl_info_str(), copies, [&](std::size_t i) {
    return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(s_md, scores_.data())},
                              {DNNL_ARG_DST, mem(p_md, stage == Stage::probs ? out(i) : probs_.data())}};
  });
  if (stage == Stage::probs) return;
  auto mm2 = tensor::onednn_matmul(p_md, md.v, nullptr, md.o);
  seq.add(dnnl::matmul(mm2), mm2.impl_info_str(), copies, [&](std::size_t i) {
    return tensor::OnednnArgs{{DNNL_ARG_SRC, mem(p_md, probs_.data())},
                              {DNNL_ARG_WEIGHTS, mem(md.v, v(i))},
                              {DNNL_ARG_DST, mem(md.o, out(i))}};
  });
}

}  // namespace opmeter::attention
