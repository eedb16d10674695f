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

}  // namespace opmeter::transformer
