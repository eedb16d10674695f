// A projection's backward GEMMs on the CPU (see projection_backward.hpp).
#include "ops/tensor/projection_backward.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ops/tensor/amx_gemm.hpp"
#include "ops/tensor/onednn_util.hpp"

namespace opmeter::tensor {

void ProjectionBackward::prepare(std::size_t rows, std::size_t k, std::size_t n, DType dtype, bool amx) {
  using tag = dnnl::memory::format_tag;
  rows_ = rows, k_ = k, n_ = n;
  const auto t = onednn_type(dtype);
  const auto r = dnnl::memory::dim(rows), kk = dnnl::memory::dim(k), nn = dnnl::memory::dim(n);
  dz_md_ = {{r, nn}, t, tag::ab};
  w_md_ = {{nn, kk}, t, tag::ab};
  a_md_ = {{r, kk}, t, tag::ab};
  dw_md_ = {{nn, kk}, t, tag::ab};
  impls_.clear();
  amx_ = amx && dtype == DType::bf16 && amx_gemm_fits(rows, n, k);  // dW's sizes are the same three
  // dW = dZ^T A: on bf16 from a transposed copy of dZ (the AMX GEMM reads A as stored; oneDNN's
  // matmul A^T, read as A's transpose), else reading dZ transposed.
  transposed_ = dtype == DType::bf16;
  // Row-major (r x c) into its transpose: a reorder to the column-major layout of (r x c).
  auto transposer = [&](const dnnl::memory::desc& from) {
    dnnl::memory::desc to(from.dims(), t, tag::ba);
    auto pd = onednn_try("reorder", [&] { return dnnl::reorder::primitive_desc(onednn_engine(), from, onednn_engine(), to); });
    impls_ += pd.impl_info_str() + std::string(" | ");
    return dnnl::reorder(pd);
  };
  if (transposed_) {
    dz_t_ = Buffer(rows * n * size_of(dtype));
    transpose_dz_ = transposer(dz_md_);
  }
  if (amx_) {
    // A's tile copy where either product copies its A: dZ (rows x n) for dX, dZ^T (n x rows) for dW.
    if (amx_gemm_a_tiles(n, rows) || amx_gemm_a_tiles(rows, n)) a_tiles_ = Buffer(rows * n * size_of(dtype));
    // B's panels packed once where more than a task's rows share them: W (n x k) for dX, A (rows x k) for dW.
    const std::size_t b_elements = std::max(amx_gemm_b_tiles(rows) ? n * k : 0, amx_gemm_b_tiles(n) ? rows * k : 0);
    b_tiles_ = Buffer(std::max<std::size_t>(b_elements, 1) * size_of(dtype));
    impls_ += "opmeter amx_gemm";
    return;
  }
  if (transposed_) {
    dzt_md_ = {{nn, r}, t, tag::ab};
    at_md_ = {{r, kk}, t, tag::ba};
    a_t_ = Buffer(rows * k * size_of(dtype));
    transpose_a_ = transposer(a_md_);
  } else {
    dzt_md_ = {{nn, r}, t, tag::ba};
    at_md_ = a_md_;
  }
  auto weights = onednn_matmul(dzt_md_, at_md_, nullptr, dw_md_);
  weights_ = dnnl::matmul(weights);
  impls_ += weights.impl_info_str();
  // dA = dZ W: on W packed by us, in slabs, where oneDNN picks the AMX layout for W and runs the
  // slabs with a kernel of its own; else on W as stored.
  auto any = onednn_matmul(dz_md_, dnnl::memory::desc({nn, kk}, t, tag::any), nullptr, a_md_);
  packed_w_ = false;
  if (is_amx_bf16_packed(any.weights_desc())) {
    slabs_ = PackedSlabMatmul(rows, n, k);
    packed_w_ = slabs_.fast();
  }
  if (packed_w_) {
    w_packed_ = Buffer(any.weights_desc().get_size());
    impls_ += std::string(" | ") + slabs_.impl();
    return;
  }
  auto data = onednn_matmul(dz_md_, w_md_, nullptr, a_md_);
  data_ = dnnl::matmul(data);
  impls_ += std::string(" | ") + data.impl_info_str();
}

void ProjectionBackward::data(const void* dz, const void* w, void* da) {
  if (amx_) {
    amx_gemm_bf16(static_cast<const std::uint16_t*>(dz), n_, static_cast<const std::uint16_t*>(w), k_,
                  static_cast<std::uint16_t*>(da), k_, rows_, n_, k_, a_tiles_.bytes() ? a_tiles_.as<std::uint16_t>() : nullptr,
                  {.b_tiles = b_tiles_.as<std::uint16_t>()});
    return;
  }
  if (packed_w_) {
    pack_amx_bf16(static_cast<const std::uint16_t*>(w), w_packed_.as<std::uint16_t>(), n_, k_);
    slabs_.run(dz, w_packed_.as<std::uint16_t>(), da);
    return;
  }
  data_.execute(onednn_stream(), {{DNNL_ARG_SRC, onednn_memory(dz_md_, dz)},
                                  {DNNL_ARG_WEIGHTS, onednn_memory(w_md_, w)},
                                  {DNNL_ARG_DST, onednn_memory(a_md_, da)}});
  onednn_stream().wait();
}

void ProjectionBackward::transpose(dnnl::reorder& r, const dnnl::memory::desc& from, const void* src, Buffer& to) {
  r.execute(onednn_stream(), {{DNNL_ARG_FROM, onednn_memory(from, src)},
                              {DNNL_ARG_TO, onednn_memory({from.dims(), from.data_type(), dnnl::memory::format_tag::ba}, to.data())}});
}

void ProjectionBackward::weights(const void* dz, const void* a, void* dw) {
  if (transposed_) {
    transpose(transpose_dz_, dz_md_, dz, dz_t_);
    if (!amx_) transpose(transpose_a_, a_md_, a, a_t_);
    onednn_stream().wait();
  }
  if (amx_) {
    amx_gemm_bf16(dz_t_.as<std::uint16_t>(), rows_, static_cast<const std::uint16_t*>(a), k_,
                  static_cast<std::uint16_t*>(dw), k_, n_, rows_, k_, a_tiles_.bytes() ? a_tiles_.as<std::uint16_t>() : nullptr,
                  {.store = Store::streaming, .b_tiles = b_tiles_.as<std::uint16_t>()});
    return;
  }
  if (transposed_) {
    dz = dz_t_.data();
    a = a_t_.data();
  }
  weights_.execute(onednn_stream(), {{DNNL_ARG_SRC, onednn_memory(dzt_md_, dz)},
                                     {DNNL_ARG_WEIGHTS, onednn_memory(at_md_, a)},
                                     {DNNL_ARG_DST, onednn_memory(dw_md_, dw)}});
  onednn_stream().wait();
}

std::map<std::string, std::string> ProjectionBackward::details() const {
  if (amx_)
    return {{"dx_weights", "W as stored, panels packed by opmeter's AMX GEMM as it runs"},
            {"dw_operands", "dz transposed per step, xhat as stored (opmeter's AMX GEMM)"},
            {"onednn_impl", impls_}};
  return {{"dx_weights", packed_w_ ? fmt::format("W packed by opmeter per step (BA16a64b2a), dz W in slabs of {} columns: {}",
                                                 slabs_.slab(), slabs_.impl())
                                   : "W as stored"},
          {"dw_operands", transposed_ ? "dz and xhat transposed per step" : "dz read transposed"},
          {"onednn_impl", impls_}};
}

}  // namespace opmeter::tensor
