// Attention: parameters, work models (fused and three-op), fp64 reference, opmeter's fused impl.
#include "ops/attention/attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "ops/attention/attention_blocked.hpp"
#include "ops/tensor/kernels.hpp"
#include "opmeter/errors.hpp"

namespace opmeter::attention {

namespace {
const std::vector<std::pair<Stage, std::string>> kStages = {
    {Stage::scores, "scores"}, {Stage::probs, "probs"}, {Stage::full, "full"}};

std::optional<Stage> parse_stage(const std::string& s) {
  for (auto& [st, name] : kStages)
    if (name == s) return st;
  return std::nullopt;
}
}  // namespace

float Shape::scale() const { return 1.0f / std::sqrt(float(d)); }

Shape shape_of(const Case& c) {
  using tensor::param;
  return {param(c, "batch"), param(c, "heads"), param(c, "seq"), param(c, "head_dim"), c.get_int("causal") != 0,
          parse_stage(c.get("stage")).value_or(Stage::full)};
}

namespace {

// Inputs q, k, v once, the output once; flops of the two products and the softmax. Causal
// masking is counted as the full square: both forms do (or skip) the same share of it.
Work fused_work(const Case& c) {
  auto s = shape_of(c);
  double bh = double(s.heads_total()), n = double(s.seq), d = double(s.d), e = double(size_of(c.dtype));
  Work w;
  w.flops = bh * 2 * n * n * d;
  if (s.stage != Stage::scores) w.flops += bh * 5 * n * n;
  if (s.stage == Stage::full) w.flops += bh * 2 * n * n * d;
  w.bytes_read = bh * n * d * e * (s.stage == Stage::full ? 3 : 2);
  w.bytes_written = bh * n * (s.stage == Stage::full ? d : n) * e;
  return w;
}

// The three-op sequence writes S (fp32) and reads it back; full also writes and reads P.
Work unfused_work(const Case& c) {
  auto s = shape_of(c);
  Work w = fused_work(c);
  double bh = double(s.heads_total()), n = double(s.seq), e = double(size_of(c.dtype));
  if (s.stage != Stage::scores) {
    w.bytes_written += bh * n * n * 4;
    w.bytes_read += bh * n * n * 4;
  }
  if (s.stage == Stage::full) {
    w.bytes_written += bh * n * n * e;
    w.bytes_read += bh * n * n * e;
  }
  return w;
}

void validate(const Case& c) {
  using tensor::check_range;
  check_range(c, "batch", 1, 1 << 16);
  check_range(c, "heads", 1, 1 << 12);
  check_range(c, "seq", 1, 1 << 20);
  check_range(c, "head_dim", 1, 1024);
  check_range(c, "causal", 0, 1);
  if (!parse_stage(c.get("stage")))
    throw CaseError(fmt::format("attention stage='{}' unknown: expected scores, probs or full", c.get("stage")));
}

}  // namespace

std::vector<TensorDesc> AttentionOp::inputs() const {
  auto s = shape_of(case_);
  std::size_t n = s.heads_total() * s.seq * s.d;
  std::vector<TensorDesc> v = {{"q", act(), n}, {"k", act(), n}};
  if (s.stage == Stage::full) v.push_back({"v", act(), n});
  return v;
}

std::size_t AttentionOp::out_rows() const {
  auto s = shape_of(case_);
  return s.heads_total() * s.seq;
}

std::size_t AttentionOp::out_cols() const {
  auto s = shape_of(case_);
  return s.stage == Stage::full ? s.d : s.seq;
}

double AttentionOp::fp32_tolerance() const {
  auto s = shape_of(case_);
  return (64 + 8 * std::sqrt(double(s.seq + s.d))) * 0x1p-24;
}

double AttentionOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return 4.0 * double(s.seq * s.d);
}

void AttentionOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  auto s = shape_of(case_);
  const std::size_t head = row / s.seq, i = row % s.seq, base = head * s.seq * s.d;
  const std::size_t keys = s.causal ? i + 1 : s.seq;
  std::vector<double> sc(s.seq, 0.0), scmag(s.seq, 0.0);
  for (std::size_t j = 0; j < keys; ++j)
    for (std::size_t c = 0; c < s.d; ++c) {
      double p = in[kQ][base + i * s.d + c] * in[kK][base + j * s.d + c] * double(s.scale());
      sc[j] += p;
      scmag[j] += std::fabs(p);
    }
  if (s.stage == Stage::scores) {
    for (std::size_t j = 0; j < s.seq; ++j) {
      ref[j] = j < keys ? sc[j] : -INFINITY;
      mag[j] = j < keys ? scmag[j] + 1e-6 : INFINITY;  // masked: any -inf / huge negative passes
    }
    return;
  }
  double mx = -INFINITY, sum = 0;
  for (std::size_t j = 0; j < keys; ++j) mx = std::max(mx, sc[j]);
  std::vector<double> p(s.seq, 0.0);
  for (std::size_t j = 0; j < keys; ++j) sum += p[j] = std::exp(sc[j] - mx);
  for (auto& v : p) v /= sum;
  if (s.stage == Stage::probs) {
    for (std::size_t j = 0; j < s.seq; ++j) {
      ref[j] = p[j];
      mag[j] = p[j] + 1.0 / double(s.seq);
    }
    return;
  }
  for (std::size_t c = 0; c < s.d; ++c) {
    double o = 0, m = 0;
    for (std::size_t j = 0; j < keys; ++j) {
      double v = in[kV][base + j * s.d + c];
      o += p[j] * v;
      m += p[j] * std::fabs(v);
    }
    ref[c] = o;
    mag[c] = m + 1e-6;
  }
}

namespace {

// Flash-style blocking (attention_blocked.hpp): per (head, chunk of query rows), key blocks
// with an online softmax; `probs` keeps one block of score rows in cache while it normalizes
// them. Tasks are (head, chunk) so that every thread has work even with few heads; a task packs
// the k (and v) rows it needs, so a thread holds O(seq x head_dim + block) floats, never seq x seq.
class OpmeterAttention : public HostImpl<AttentionOp> {
 public:
  void prepare() override {
    auto s = shape_of(case_);
    const std::size_t floats = blocked::kernel().workspace_floats(s.seq, s.d, s.stage == Stage::probs);
    const int threads = std::max({case_.threads, omp_get_max_threads(), 1});
    workspaces_.clear();
    for (int t = 0; t < threads; ++t) workspaces_.emplace_back(floats * sizeof(float));
  }

  void run(std::size_t copy) override {
    const auto s = shape_of(case_);
    const auto& k = blocked::kernel();
    const std::size_t e = size_of(case_.dtype), per_head = s.seq * s.d, heads = s.heads_total();
    const std::size_t out_per_head = s.seq * (s.stage == Stage::full ? s.d : s.seq);
    // At least 4 tasks per thread where the heads alone give fewer; chunks are whole query blocks.
    const std::size_t want = std::max<std::size_t>(1, (4 * workspaces_.size() + heads - 1) / heads);
    const std::size_t chunk = std::max(k.query_block, (s.seq + want - 1) / want / k.query_block * k.query_block);
    const std::size_t chunks = (s.seq + chunk - 1) / chunk, tasks = heads * chunks;
    auto at = [&](const void* p, std::size_t off) { return static_cast<const char*>(p) + off * e; };
    char* o = static_cast<char*>(out(copy));
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t t = 0; t < tasks; ++t) {
      // Last chunks first: under a causal mask they have the most keys, so the tail stays short.
      const std::size_t h = t % heads, c = chunks - 1 - t / heads;
      blocked::Head head{.bf16 = bf16(),
                         .probs = s.stage == Stage::probs,
                         .causal = s.causal,
                         .q = at(in(copy, kQ), h * per_head),
                         .k = at(in(copy, kK), h * per_head),
                         .v = s.stage == Stage::full ? at(in(copy, kV), h * per_head) : nullptr,
                         .out = o + h * out_per_head * e,
                         .seq = s.seq,
                         .d = s.d,
                         .scale = s.scale()};
      k.rows(head, c * chunk, std::min(s.seq, (c + 1) * chunk),
             workspaces_[static_cast<std::size_t>(omp_get_thread_num())].as<float>());
    }
  }

  std::map<std::string, std::string> details() const override {
    const auto& k = blocked::kernel();
    const auto s = shape_of(case_);
    const blocked::Head head{.bf16 = bf16(), .probs = s.stage == Stage::probs, .causal = s.causal, .d = s.d};
    return {{"isa", k.isa},
            {"blocks", fmt::format("{} queries x {} keys", k.query_block, k.key_block)},
            {"products", k.products(head)}};
  }

 private:
  std::vector<Buffer> workspaces_;  // one per thread
};

const bool registered = [] {
  auto op = tensor::fusable_op(
      "attention",
      "scaled dot-product attention (stage scores | probs | full), optional causal mask",
      {{"batch", "4"}, {"heads", "16"}, {"seq", "1024"}, {"head_dim", "64"}, {"causal", "0"}, {"stage", "full"}},
      {{"batch", "1"}, {"heads", "2"}, {"seq", "37"}, {"head_dim", "16"}, {"causal", "1"}, {"stage", "full"}},
      fused_work, unfused_work, validate, [](const Case& c) {
        auto s = shape_of(c);
        std::string p = s.stage == Stage::scores ? "qk" : s.stage == Stage::probs ? "qk+softmax" : "qk+softmax+pv";
        return s.causal ? p + " (causal)" : p;
      });
  // QK^T and PV, counted whole even under a causal mask (as published figures count them).
  op.model_cost = [](const Case& c) {
    auto s = shape_of(c);
    double products = s.stage == Stage::full ? 2 : 1;
    return ModelCost{0, products * double(s.heads_total()) * double(s.seq) * double(s.seq) * double(s.d)};
  };
  // `opmeter check`: seq not a multiple of any tile, causal and not, the flash kernels' head_dim
  // 64 and 128, one query; then every stage at an odd head_dim.
  auto attention = [](int batch, int heads, int seq, int head_dim, int causal, const char* stage) -> Params {
    return {{"batch", std::to_string(batch)}, {"heads", std::to_string(heads)}, {"seq", std::to_string(seq)},
            {"head_dim", std::to_string(head_dim)}, {"causal", std::to_string(causal)}, {"stage", stage}};
  };
  op.check_shapes = {attention(1, 2, 67, 64, 1, "full"), attention(2, 1, 129, 128, 0, "full"),
                     attention(1, 1, 1, 64, 1, "full")};
  for (auto stage : {"scores", "probs", "full"})
    for (int causal : {0, 1}) op.check_shapes.push_back(attention(2, 1, 71, 13, causal, stage));
  // The products per (batch, head): q k^T (seq x seq x head_dim) and, for the full stage, P v,
  // which does the same multiply-adds; one view of both.
  op.gemm_view = [](const Case& c) -> std::optional<GemmView> {
    auto batch = integer_param(c, "batch"), heads = integer_param(c, "heads"), seq = integer_param(c, "seq"),
         d = integer_param(c, "head_dim");
    if (!batch || !heads || !seq || !d) return std::nullopt;
    const bool full = !c.has("stage") || c.get("stage") == "full";
    return GemmView{*seq, *seq, *d, *batch * *heads * (full ? 2 : 1)};
  };
  Registry::global().add(op);
  tensor::register_reference<AttentionOp>("attention", {DType::fp32, DType::bf16}, [](const Case& c) { return fused_work(c).flops; });
  Registry::global().add(ImplDef{
      .op = "attention",
      .impl = "opmeter",
      .preference = ImplDef::own_kernel,
      .summary = "opmeter's flash-style blocked attention (online softmax, own micro-kernels, no seq x seq)",
      .dtypes = {DType::fp32, DType::bf16},
      .supports = [](const Case& c) {
        if (shape_of(c).stage == Stage::scores) return Support::no("stage=scores is one product: nothing to fuse");
        return Support::yes();
      },
      .make = [] { return std::make_unique<OpmeterAttention>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::attention
