// The weight-only kernel behind one linear layer (quant_weight_only_linear.hpp).
#include "ops/linear/cuda/quant_weight_only_linear.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "ops/linear/quant_gpu_decode.hpp"

namespace opmeter::linear::quant_cuda {
namespace {

constexpr std::size_t kMaxSplitBytes = 256u << 20;  // split-K partials at most

// 16-row tiles at decode (and for int4 groups the 64-row kernel cannot take), else 64.
int tile_rows_for(const quant::Recipe& r, std::size_t rows) {
  const int tile_rows = rows <= 16 ? 16 : 64;
  if (r.weights == quant::WeightFormat::int4 && !weight_only_takes_group(static_cast<int>(r.group), tile_rows))
    return 16;
  return tile_rows;
}
std::int64_t max_splits_for(std::size_t rows, std::size_t out) {
  return static_cast<std::int64_t>(
      std::max<std::size_t>(1, kMaxSplitBytes / std::max<std::size_t>(1, rows * out * sizeof(float))));
}

template <class V>
void upload_vector(cuda::DeviceBuffer& dst, const std::vector<V>& v, cudaStream_t s) {
  const std::size_t bytes = std::max<std::size_t>(1, v.size() * sizeof(V));
  if (dst.bytes() != bytes) dst = cuda::DeviceBuffer(bytes);
  if (!v.empty()) cuda::upload(dst.data(), v.data(), v.size() * sizeof(V), s);
}

}  // namespace

void WeightOnlyLinear::load(const quant::Recipe& r, const quant::QuantizedWeights& q, Elem scale_elem, std::size_t rows,
                            cudaStream_t s, std::optional<gpu_pack::Operand> asked) {
  recipe_ = r;
  layout_ = gpu_pack::layout_of(r.weights, q.out, q.hidden, gpu_pack::weight_operand(r, rows, asked));
  upload_vector(codes_, gpu_pack::pack_codes(layout_, q.codes), s);
  weight_bytes_ = layout_.bytes();
  if (r.weights == quant::WeightFormat::int4) {
    const auto params = gpu_pack::pack_group_params(q, layout_.padded_out(), scale_elem);
    upload_vector(scales_, params, s);
    weight_bytes_ += params.size() * sizeof(std::uint32_t);
  } else {
    const auto scales = gpu_pack::pack_channel_scales(q, layout_.padded_out());
    upload_vector(scales_, scales, s);
    weight_bytes_ += scales.size() * sizeof(float);
  }
}

WeightOnlyLinear WeightOnlyLinear::copy_weights(cudaStream_t s) const {
  WeightOnlyLinear w;
  w.recipe_ = recipe_;
  w.layout_ = layout_;
  w.weight_bytes_ = weight_bytes_;
  w.codes_ = cuda::copy_of(codes_, s);
  w.scales_ = cuda::copy_of(scales_, s);
  return w;
}

void WeightOnlyLinear::plan(std::size_t rows, int sms, int ksplit) {
  if (const auto why = gpu_pack::operand_problem(recipe_, rows, layout_.operand); !why.empty())
    throw std::logic_error(fmt::format("WeightOnlyLinear: packed for fewer rows than {}: {}", rows, why));
  rows_ = rows;
  tile_rows_ = tile_rows_for(recipe_, rows);
  const bool weights_a = layout_.operand == gpu_pack::Operand::a;
  const std::int64_t blocks =
      weight_only_blocks(static_cast<std::int64_t>(layout_.n_tiles), static_cast<std::int64_t>(rows), tile_rows_);
  const std::size_t per_split = rows * layout_.out * sizeof(float);
  const std::int64_t max_splits = max_splits_for(rows, layout_.out);
  if (ksplit > 0) {
    ksplit_ = ksplit;  // the case's, checked by weight_only_split_support
  } else if (tile_rows_ == 16) {
    // Decode: the split that takes the fewest memory round trips (quant_gpu_decode.hpp).
    ksplit_ = gpu_decode::decode_ksplit(
        blocks, gpu_decode::chunk_count(static_cast<std::int64_t>(layout_.hidden), weight_only_chunk_k(16)), sms,
        max_splits, gpu_decode::chunk_work(recipe_.weights == quant::WeightFormat::int4, weights_a));
  } else {
    // Few blocks: split K until about 4 blocks per SM, within the partials' budget.
    const std::int64_t target = 4 * static_cast<std::int64_t>(sms);
    const std::int64_t want = std::min<std::int64_t>(blocks < target ? (target + blocks - 1) / blocks : 1, max_splits);
    ksplit_ = weight_only_ksplit(static_cast<std::int64_t>(layout_.hidden), tile_rows_, static_cast<int>(want));
  }
  const std::size_t partial = ksplit_ > 1 ? static_cast<std::size_t>(ksplit_) * per_split : 0;
  if (partial_.bytes() != partial) partial_ = partial ? cuda::DeviceBuffer(partial) : cuda::DeviceBuffer();
  // The decode kernel's arrival counters start at zero; each launch leaves them so.
  const std::size_t counters = tile_rows_ == 16 && ksplit_ > 1 ? static_cast<std::size_t>(blocks) * sizeof(unsigned) : 0;
  if (counters_.bytes() != counters) counters_ = counters ? cuda::DeviceBuffer(counters) : cuda::DeviceBuffer();
  if (counters) cuda::fill(counters_.data(), 0, counters, nullptr);
}

void WeightOnlyLinear::launch(DType d, const void* x, const float* bias, tensor::Act act, void* y, cudaStream_t s) const {
  const bool int4 = recipe_.weights == quant::WeightFormat::int4;
  const auto M = static_cast<std::int64_t>(rows_), N = static_cast<std::int64_t>(layout_.out);
  // Dequantization is fused into the GEMM; bias and activation too unless K is split.
  launch_weight_only(d, *gpu_pack::weight_only_codes(recipe_), tile_rows_,
                     {.x = x,
                      .M = M,
                      .N = N,
                      .K = static_cast<std::int64_t>(layout_.hidden),
                      .codes = static_cast<const std::uint8_t*>(codes_.data()),
                      .n_tiles = static_cast<std::int64_t>(layout_.n_tiles),
                      .k_units = static_cast<std::int64_t>(layout_.k_units),
                      .weights_a = layout_.operand == gpu_pack::Operand::a,
                      .channel_scale = int4 ? nullptr : static_cast<const float*>(scales_.data()),
                      .group_params = int4 ? static_cast<const std::uint32_t*>(scales_.data()) : nullptr,
                      .group = static_cast<int>(recipe_.group),
                      .bias = bias,
                      .act = act,
                      .y = y,
                      .partial = static_cast<float*>(partial_.data()),
                      .ksplit = ksplit_,
                      .counters = static_cast<unsigned*>(counters_.data())},
                     s);
  if (ksplit_ > 1 && tile_rows_ != 16) launch_split_reduce(d, static_cast<const float*>(partial_.data()), ksplit_, M, N, bias, act, y, s);
}

std::string WeightOnlyLinear::kernel() const {
  const bool int4 = recipe_.weights == quant::WeightFormat::int4, as_a = layout_.operand == gpu_pack::Operand::a;
  const char* codes = int4 ? "int4 (group scale and zero)" : recipe_.fp8() ? "fp8 e4m3" : "int8";
  constexpr const char* kIntegerMma =
      "weight-only mma.sync m16n8k32 s8 on integer tensor cores, int8 codes as the A operand (16 channels a warp), "
      "x as two int8 limbs";
  const std::string how = as_a && !int4 ? kIntegerMma
                                        : fmt::format("weight-only mma.sync m16n8k16, {} codes decoded in registers{}",
                                                      codes, as_a ? " as the A operand (16 channels a warp)" : "");
  return fmt::format("{}, {}-row tiles, k chunks of {}, split-K {}{}", how, tile_rows_, weight_only_chunk_k(tile_rows_),
                     ksplit_,
                     ksplit_ == 1       ? " (bias and activation in the GEMM)"
                     : tile_rows_ == 16 ? " (the last split of each tile sums them, with bias and activation)"
                                        : " (+ reduce kernel with bias and activation)");
}

Support weight_only_operand_support(const quant::Recipe& r, std::size_t rows, gpu_pack::Operand asked) {
  const auto why = gpu_pack::operand_problem(r, rows, asked);
  return why.empty() ? Support::yes() : Support::no(why);
}

Support weight_only_split_support(const quant::Recipe& r, std::size_t rows, std::size_t hidden, std::size_t out,
                                  int ksplit) {
  const int tile_rows = tile_rows_for(r, rows);
  const auto why = gpu_pack::split_problem(ksplit, hidden, weight_only_chunk_k(tile_rows), tile_rows,
                                           max_splits_for(rows, out), kMaxSplitBytes >> 20);
  return why.empty() ? Support::yes() : Support::no(why);
}

Support weight_only_device_support(const quant::Recipe& r, std::size_t rows, const cuda::DeviceProps& p) {
  if (!gpu_pack::weight_only_codes(r)) return Support::no(fmt::format("{} is not a weight-only recipe", r.name));
  if (auto s = cuda::own_kernels_run_on(p, cuda::Kernels::mma); !s.ok) return s;
  if (r.fp8() && p.cc() < 89)
    return Support::no(fmt::format("{} needs fp8 (e4m3) support, compute capability 8.9 or newer; {} is {}.{}", r.name,
                                   p.prop.name, p.prop.major, p.prop.minor));
  // Row tiles of 64 for M > 16 on grid.z.
  if ((rows + 15) / 16 > 65535) return Support::no(fmt::format("rows={} exceed the weight-only kernel's grid", rows));
  if (r.weights == quant::WeightFormat::int4 && !weight_only_takes_group(static_cast<int>(r.group), 16))
    return Support::no(fmt::format("the CUDA int4 kernel takes groups of 16 to {} that are powers of two (group {})",
                                   weight_only_chunk_k(16), r.group));
  return Support::yes();
}

}  // namespace opmeter::linear::quant_cuda
