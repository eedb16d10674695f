#include "ops/transformer/transformer_onednn.hpp"

namespace opmeter::transformer {

OnednnDescs::OnednnDescs(const Shape& s, DType dtype) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using dim = dnnl::memory::dim;
  const auto t = tensor::onednn_type(dtype);
  const dim r = dim(s.rows()), h = dim(s.hidden), m = dim(s.mlp), b = dim(s.batch), n = dim(s.seq),
            heads = dim(s.heads), d = dim(s.head_dim());
  x = {{r, h}, t, tag::ab};
  qkv = {{r, 3 * h}, t, tag::ab};
  x_mlp = {{r, m}, t, tag::ab};
  wqkv = {{h, 3 * h}, t, tag::ba};
  wo = {{h, h}, t, tag::ba};
  w1 = {{h, m}, t, tag::ba};
  w2 = {{m, h}, t, tag::ba};
  bqkv = {{1, 3 * h}, dt::f32, tag::ab};
  bo = {{1, h}, dt::f32, tag::ab};
  b1 = {{1, m}, dt::f32, tag::ab};
  b2 = {{1, h}, dt::f32, tag::ab};
  gamma = {{h}, dt::f32, tag::a};
  // Element (batch, head, i, c) of q at row batch*seq + i, column head*d + c of qkv (k: + h, v: + 2h).
  const dnnl::memory::dims qkv_strides = {n * 3 * h, d, 3 * h, 1};
  q = {{b, heads, n, d}, t, qkv_strides};
  v = q;
  kt = {{b, heads, d, n}, t, {n * 3 * h, d, 1, 3 * h}};
  o = {{b, heads, n, d}, t, {n * h, d, h, 1}};
}

void add_projection(tensor::OnednnSequence& seq, std::size_t copies, const dnnl::memory::desc& src, const ConstPtrOf& a,
                    const dnnl::memory::desc& w_md, const ConstPtrOf& w, const dnnl::memory::desc& b_md,
                    const ConstPtrOf& bias, const dnnl::memory::desc& dst, const PtrOf& y, tensor::Act act,
                    const ConstPtrOf& residual) {
  auto mem = tensor::onednn_memory;
  dnnl::primitive_attr attr = tensor::onednn_act_post_op(act);
  if (residual) {
    dnnl::post_ops po = attr.get_post_ops();
    po.append_binary(dnnl::algorithm::binary_add, dst);
    attr.set_post_ops(po);
  }
  auto pd = tensor::onednn_matmul(src, w_md, &b_md, dst, attr);
  const int residual_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(act == tensor::Act::none ? 0 : 1) | DNNL_ARG_SRC_1;
  seq.add(dnnl::matmul(pd), pd.impl_info_str(), copies, [&](std::size_t i) {
    tensor::OnednnArgs m{{DNNL_ARG_SRC, mem(src, a(i))},
                         {DNNL_ARG_WEIGHTS, mem(w_md, w(i))},
                         {DNNL_ARG_BIAS, mem(b_md, bias(i))},
                         {DNNL_ARG_DST, mem(dst, y(i))}};
    if (residual) m.emplace(residual_arg, mem(dst, residual(i)));
    return m;
  });
}

void add_block_projection(tensor::OnednnSequence& seq, std::size_t copies, const OnednnDescs& md, BlockProjection p,
                          const ProjectionSteps& steps, const InputOf& input) {
  // src, weights, bias, dst of each projection.
  const dnnl::memory::desc* descs[4][4] = {{&md.x, &md.wqkv, &md.bqkv, &md.qkv},
                                           {&md.x, &md.wo, &md.bo, &md.x},
                                           {&md.x, &md.w1, &md.b1, &md.x_mlp},
                                           {&md.x_mlp, &md.w2, &md.b2, &md.x}};
  const auto& d = descs[p];
  const ProjectionStep first = steps(p, 0);
  ConstPtrOf residual;
  if (first.residual) residual = [=](std::size_t i) { return steps(p, i).residual; };
  add_projection(seq, copies, *d[0], [=](std::size_t i) { return steps(p, i).a; }, *d[1],
                 [=](std::size_t i) { return input(i, steps(p, i).w); }, *d[2],
                 [=](std::size_t i) { return input(i, steps(p, i).bias); }, *d[3], [=](std::size_t i) { return steps(p, i).y; },
                 first.act, residual);
}

}  // namespace opmeter::transformer
