// impl `cudnn`: cuDNN's fused scaled-dot-product attention (flash) forward, through the graph
// API. The operation graph is the pattern cuDNN's fused attention engines recognise:
//   S = Q K^T (fp32)  ->  S * scale  ->  [causal: row >= col ? S : -inf, from generated indices]
//   ->  softmax as max, sub, exp, sum, log, add, div (P in the io dtype)  ->  O = P V
// K^T is K itself seen with swapped strides; q, k, v and the output are batch x heads x seq x
// head_dim, packed. Only stage=full: cuDNN's fused engine never writes S or P to memory.
// The softmax's statistic max + log(sum) (what a backward pass reads) is part of the pattern even
// for inference: without it cuDNN 9.14 and 9.19 proposed no engine on an H200 (2026-11-27). It is
// a virtual tensor; where cuDNN still refuses, the graph is built again with it in memory.
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "ops/attention/attention.hpp"
#include "opmeter/cuda/cudnn_graph.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::attention {
namespace {

class CudnnAttention : public cuda::DeviceImpl<AttentionOp> {
 public:
  std::map<std::string, std::string> details() const override {
    if (!plan_) return {};
    return {{"engine", plan_->engine()},
            {"workspace_bytes", std::to_string(plan_->workspace_bytes())},
            {"softmax_stats", stats_uid_ >= 0 ? "in memory (refused as a virtual tensor)" : "virtual"}};
  }

 private:
  void prepare() override {
    if (!plan_) build();
    std::map<std::int64_t, void*> tensors = {{q_, in(kQ)}, {k_, in(kK)}, {v_, in(kV)}, {o_, out()}, {scale_uid_, &scale_}};
    if (neg_inf_uid_ >= 0) tensors[neg_inf_uid_] = &neg_inf_;
    if (stats_uid_ >= 0) tensors[stats_uid_] = stats_.data();
    plan_->bind(tensors, workspace_.data());
  }

  void launch() override { plan_->execute(); }

  void build() {
    handle_ = std::make_unique<cudnn::Handle>(stream());
    try {
      build_graph(false);
    } catch (const Unsupported&) {
      build_graph(true);  // its refusal, if it refuses too, is the case's reason
    }
  }

  // stats_in_memory: the softmax statistic a real fp32 output (batch x heads x seq) rather than virtual.
  void build_graph(bool stats_in_memory) {
    using cudnn::Graph;
    const Shape s = shape_of(case_);
    const auto b = std::int64_t(s.batch), h = std::int64_t(s.heads), n = std::int64_t(s.seq), d = std::int64_t(s.d);
    const cudnnDataType_t io = cudnn::data_type(case_.dtype), f32 = CUDNN_DATA_FLOAT;

    Graph g;
    const std::vector<std::int64_t> bhsd = {b, h, n, d}, scores = {b, h, n, n}, rows = {b, h, n, 1};
    auto q = g.tensor(bhsd, cudnn::packed_strides(bhsd), io);
    auto kt = g.tensor({b, h, d, n}, {h * n * d, n * d, 1, d}, io);  // K, read transposed
    auto v = g.tensor(bhsd, cudnn::packed_strides(bhsd), io);
    auto o = g.tensor(bhsd, cudnn::packed_strides(bhsd), io);
    const auto sc = cudnn::packed_strides(scores), rs = cudnn::packed_strides(rows);

    auto s_raw = g.virtual_tensor(scores, sc, f32);
    g.matmul(q, kt, s_raw);
    auto scale = g.scalar(4, f32);
    auto s_scaled = g.virtual_tensor(scores, sc, f32);
    g.pointwise(CUDNN_POINTWISE_MUL, s_raw, scale, s_scaled);
    auto last = s_scaled;
    std::optional<cudnn::Tensor> neg_inf;
    if (s.causal) {
      auto row = g.virtual_tensor(scores, sc, CUDNN_DATA_INT32), col = g.virtual_tensor(scores, sc, CUDNN_DATA_INT32);
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, last, std::nullopt, std::nullopt, row, {.axis = 2});
      g.pointwise(CUDNN_POINTWISE_GEN_INDEX, last, std::nullopt, std::nullopt, col, {.axis = 3});
      auto keep = g.virtual_tensor(scores, sc, CUDNN_DATA_BOOLEAN);
      g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, std::nullopt, keep, {.math = CUDNN_DATA_BOOLEAN});
      neg_inf = g.scalar(4, f32);
      auto masked = g.virtual_tensor(scores, sc, f32);
      g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, last, *neg_inf, keep, masked, {});
      last = masked;
    }
    auto row_max = g.virtual_tensor(rows, rs, f32);
    g.reduction(CUDNN_REDUCE_TENSOR_MAX, last, row_max);
    auto shifted = g.virtual_tensor(scores, sc, f32);
    g.pointwise(CUDNN_POINTWISE_SUB, last, row_max, shifted);
    auto e = g.virtual_tensor(scores, sc, f32);
    g.pointwise(CUDNN_POINTWISE_EXP, shifted, std::nullopt, e);
    auto row_sum = g.virtual_tensor(rows, rs, f32);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, row_sum);
    auto log_sum = g.virtual_tensor(rows, rs, f32);
    g.pointwise(CUDNN_POINTWISE_LOG, row_sum, std::nullopt, log_sum);
    auto stats = stats_in_memory ? g.tensor(rows, rs, f32) : g.virtual_tensor(rows, rs, f32);
    g.pointwise(CUDNN_POINTWISE_ADD, row_max, log_sum, stats);
    auto p = g.virtual_tensor(scores, sc, io);  // the second matmul reads P in the io type
    g.pointwise(CUDNN_POINTWISE_DIV, e, row_sum, p);
    g.matmul(p, v, o);

    plan_ = std::make_unique<cudnn::Plan>(*handle_, std::move(g), case_.dtype,
                                         fmt::format("attention{}", s.causal ? " (causal)" : ""));
    workspace_ = cuda::DeviceBuffer(std::size_t(plan_->workspace_bytes()));
    q_ = q.uid;
    k_ = kt.uid;
    v_ = v.uid;
    o_ = o.uid;
    scale_uid_ = scale.uid;
    scale_ = s.scale();
    // cuDNN before 9.10 wants the lowest float for masked scores, later versions -inf.
    neg_inf_ = cudnnGetVersion() < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
    neg_inf_uid_ = neg_inf ? neg_inf->uid : -1;
    stats_uid_ = stats_in_memory ? stats.uid : -1;
    if (stats_in_memory) stats_ = cuda::DeviceBuffer(std::size_t(b * h * n) * sizeof(float));
  }

  // Declared in destruction order: the plan refers to the handle.
  std::unique_ptr<cudnn::Handle> handle_;
  std::unique_ptr<cudnn::Plan> plan_;
  cuda::DeviceBuffer workspace_, stats_;
  std::int64_t q_ = 0, k_ = 0, v_ = 0, o_ = 0, scale_uid_ = 0, neg_inf_uid_ = -1, stats_uid_ = -1;
  float scale_ = 1, neg_inf_ = 0;  // by-value scalars: their host addresses are in the variant pack
};

Support supported(const Case& c, const cuda::DeviceProps& p) {
  auto s = shape_of(c);
  if (s.stage != Stage::full)
    return Support::no(fmt::format("cuDNN's fused attention computes stage=full only (it never writes {})",
                                   s.stage == Stage::scores ? "the scores" : "the probabilities"));
  if (c.dtype != DType::fp16 && c.dtype != DType::bf16)
    return Support::no("cuDNN's fused flash attention takes fp16 and bf16 only");
  if (p.cc() < 80) return Support::no("cuDNN's fused flash attention needs compute capability 8.0 or newer");
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in attention_cudnn_impls.cpp.
cuda::Factory cudnn_factory() {
  return {
      .supports = supported,
      .make = [] { return std::make_unique<CudnnAttention>(); },
  };
}

}  // namespace opmeter::attention
