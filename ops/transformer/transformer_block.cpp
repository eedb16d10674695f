// transformer_block: parameters, work models (fused and every step separate), inputs, tolerance,
// which rows a check samples.
#include "ops/transformer/transformer_block.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "ops/activation/activation.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/spec_by_recipe.hpp"
#include "ops/transformer/transformer_quant.hpp"
#include "ops/transformer/transformer_train.hpp"

namespace opmeter::transformer {
using tensor::Act;

namespace {
// fp64 work of one sequence's keys and values in the reference (value, scale): above this a
// check takes one sequence, else two.
constexpr double kTwoSequenceBudget = double(1u << 30);
constexpr std::size_t kCheckedRowsPerSequence = 8;
}  // namespace

float Shape::scale() const { return 1.0f / std::sqrt(float(head_dim())); }

Shape shape_of(const Case& c) {
  using tensor::param;
  Shape s{param(c, "batch"), param(c, "seq"), param(c, "hidden"), param(c, "heads"), param(c, "mlp"),
          tensor::parse_act(c.get("act")).value_or(Act::gelu), c.get_int("causal") != 0};
  if (s.mlp == 0) s.mlp = 4 * s.hidden;
  return s;
}

namespace {

// The fp32 vectors: LayerNorms' gamma and beta (2 x 2h), bqkv (3h), bo (h), b1 (mlp), b2 (h).
double vector_elems(const Shape& s) { return double(2 * s.hidden + 3 * s.hidden + s.hidden + 2 * s.hidden + s.mlp + s.hidden); }

}  // namespace

// x and the weights read once, y written once: everything else stays in cache (the ideal).
Work fused_work(const Case& c) {
  if (training(c)) return train_work(c);
  auto s = shape_of(c);
  const double r = double(s.rows()), h = double(s.hidden), m = double(s.mlp), e = double(size_of(c.dtype));
  const double bh = double(s.batch * s.heads), n = double(s.seq), d = double(s.head_dim());
  Work w;
  w.flops = 2 * r * h * (3 * h) + 2 * r * h * h + 4 * r * h * m  // the four projections
            + bh * (4 * n * n * d + 5 * n * n)                    // attention (causal counted square)
            + 2 * 7 * r * h                                       // two LayerNorms
            + r * (3 * h + h + m + h)                             // biases
            + r * m * activation::flops_per_element(s.act) + 2 * r * h;  // activation, residuals
  const double weight_bytes = quantized(c) ? quantized_weight_bytes(c) : s.weight_elems() * e;  // quant: as stored
  w.bytes_read = r * h * e + weight_bytes + vector_elems(s) * 4;
  w.bytes_written = r * h * e;
  return w;
}

// The same math as separate ops, each intermediate written and read back: LayerNorm, matmul,
// bias pass, S = q k^T (fp32), softmax to P, P v, matmul, bias, residual add, LayerNorm,
// matmul, bias, activation, matmul, bias, residual add.
Work unfused_work(const Case& c) {
  if (training(c)) {  // a phase's set holds the whole step's tensors
    Case step = c;
    std::erase_if(step.params, [](auto& kv) { return kv.first == linear::kPhase; });
    return train_work(step);
  }
  auto s = shape_of(c);
  const double r = double(s.rows()), h = double(s.hidden), m = double(s.mlp), e = double(size_of(c.dtype));
  const double sq = double(s.batch * s.heads) * double(s.seq) * double(s.seq);
  Work w = fused_work(c);
  w.bytes_read = w.bytes_written = 0;
  auto step = [&](double read, double written) {
    w.bytes_read += read;
    w.bytes_written += written;
  };
  step(r * h * e + 8 * h, r * h * e);                      // LN1
  step(r * h * e + 3 * h * h * e, 3 * r * h * e);          // qkv matmul
  step(3 * r * h * e + 12 * h, 3 * r * h * e);             // + bqkv
  step(2 * r * h * e, sq * 4);                              // S = scale q k^T
  step(sq * 4, sq * e);                                     // P = softmax(S)
  step(sq * e + r * h * e, r * h * e);                      // O = P v
  step(r * h * e + h * h * e, r * h * e);                   // O Wo^T
  step(r * h * e + 4 * h, r * h * e);                       // + bo
  step(2 * r * h * e, r * h * e);                           // h = x + attn
  step(r * h * e + 8 * h, r * h * e);                       // LN2
  step(r * h * e + m * h * e, r * m * e);                   // W1
  step(r * m * e + 4 * m, r * m * e);                       // + b1
  if (s.act != Act::none) step(r * m * e, r * m * e);       // act
  step(r * m * e + m * h * e, r * h * e);                   // W2
  step(r * h * e + 4 * h, r * h * e);                       // + b2
  step(2 * r * h * e, r * h * e);                           // y = h + mlp
  return w;
}

namespace {

void validate(const Case& c) {
  using tensor::check_range;
  check_range(c, "batch", 1, 1 << 16);
  check_range(c, "seq", 1, 1 << 20);
  check_range(c, "hidden", 1, 1 << 16);
  check_range(c, "heads", 1, 1 << 12);
  check_range(c, "mlp", 0, 1 << 20);
  check_range(c, "causal", 0, 1);
  const auto hidden = c.get_int("hidden"), heads = c.get_int("heads");
  if (hidden % heads != 0)
    throw CaseError(fmt::format("transformer_block hidden={} is not divisible by heads={}: each head takes "
                                "hidden / heads columns",
                                hidden, heads));
  if (!tensor::parse_act(c.get("act"))) {
    std::vector<std::string> names = {"none"};
    for (Act a : tensor::all_acts()) names.emplace_back(tensor::to_string(a));
    throw CaseError(
        fmt::format("transformer_block act={} unknown: expected one of {}", c.get("act"), fmt::join(names, ", ")));
  }
  auto s = shape_of(c);
  if (double(s.rows()) * double(std::max(3 * s.hidden, s.mlp)) > double(std::int64_t{1} << 36))
    throw CaseError("transformer_block: batch*seq*max(3*hidden, mlp) above 2^36 elements");
  if (double(s.batch * s.heads) * double(s.seq) * double(s.seq) > double(std::int64_t{1} << 36))
    throw CaseError("transformer_block: batch*heads*seq^2 above 2^36 elements");
  if (auto why = recipe_problem(c); !why.empty()) throw CaseError(fmt::format("quant={}: {}", linear::recipe_of(c), why));
  validate_train(c);
}

}  // namespace

std::vector<TensorDesc> TransformerBlockOp::inputs() const {
  auto s = shape_of(case_);
  const std::size_t h = s.hidden, m = s.mlp;
  const double in_h = 1 / std::sqrt(double(h)), in_m = 1 / std::sqrt(double(m));
  std::vector<TensorDesc> v = {{"x", act(), s.rows() * h},
          {"ln1_gamma", Elem::f32, h, 0.5, 1.5},
          {"ln1_beta", Elem::f32, h, -0.5, 0.5},
          {"wqkv", act(), 3 * h * h, -in_h, in_h},
          {"bqkv", Elem::f32, 3 * h, -in_h, in_h},
          {"wo", act(), h * h, -in_h, in_h},
          {"bo", Elem::f32, h, -in_h, in_h},
          {"ln2_gamma", Elem::f32, h, 0.5, 1.5},
          {"ln2_beta", Elem::f32, h, -0.5, 0.5},
          {"w1", act(), m * h, -in_h, in_h},
          {"b1", Elem::f32, m, -in_h, in_h},
          {"w2", act(), h * m, -in_m, in_m},
          {"b2", Elem::f32, h, -in_m, in_m}};
  if (training(case_)) v.push_back({"dy", act(), s.rows() * h});
  return v;
}

TensorDesc TransformerBlockOp::output() const {
  if (!training(case_)) return TensorOp::output();
  return {"out", act(), train_layout(shape_of(case_)).total};
}

double TransformerBlockOp::fp32_tolerance() const {
  auto s = shape_of(case_);
  // The longest sum decides, as for linear / attention; the stages' errors are in mag already.
  const double n = double(std::max({s.hidden, s.mlp, s.seq}));
  return (64 + 8 * std::sqrt(n)) * 0x1p-24;
}

double TransformerBlockOp::tolerance() const {
  // 16-bit storage: each stage rounds its output (at most the unit roundoff of a value within that
  // stage's own scale, which mag carries): two of those per stage, the propagated ones are in mag.
  const double storage = bf16() ? 2 * unit_roundoff(Elem::bf16) : case_.dtype == DType::fp16 ? 2 * unit_roundoff(Elem::f16) : 0.0;
  return fp32_tolerance() + storage;
}

// A sequence's keys and values (LN1 and two projections per row, value and scale), amortized.
double TransformerBlockOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return 3 * 2 * 2 * double(s.hidden) * double(s.hidden) * double(s.seq);
}

std::vector<std::size_t> TransformerBlockOp::check_rows(std::uint64_t seed) const {
  auto s = shape_of(case_);
  std::vector<std::size_t> sequences = {0};
  if (s.batch > 1 && reference_row_cost() <= kTwoSequenceBudget / 2) sequences.push_back(s.batch - 1);
  Rng rng(seed ^ 0x5eed);
  std::vector<std::size_t> picks;
  for (std::size_t b : sequences) {
    std::vector<std::size_t> local = {0, s.seq - 1};
    if (s.seq <= kCheckedRowsPerSequence) {
      local.clear();
      for (std::size_t i = 0; i < s.seq; ++i) local.push_back(i);
    }
    while (local.size() < kCheckedRowsPerSequence) local.push_back(rng.next() % s.seq);
    std::sort(local.begin(), local.end());
    local.erase(std::unique(local.begin(), local.end()), local.end());
    for (std::size_t i : local) picks.push_back(b * s.seq + i);
  }
  return picks;
}

namespace {

// Reference cost of the whole output (registered reference impl): each sequence's keys and values
// and every row's own work, value and scale.
double reference_cost(const Case& c) { return 3 * fused_work(c).flops; }

const bool registered = [] {
  auto op = tensor::fusable_op(
      "transformer_block",
      "pre-LN transformer block: h = x + Attn(LN1(x)), y = h + W2 act(W1 LN2(h) + b1) + b2 (mlp=0: 4*hidden)",
      {{"batch", "1"}, {"seq", "512"}, {"hidden", "768"}, {"heads", "12"}, {"mlp", "0"}, {"act", "gelu"},
       {"causal", "0"}},
      {{"batch", "2"}, {"seq", "37"}, {"hidden", "48"}, {"heads", "3"}, {"mlp", "80"}, {"act", "gelu"},
       {"causal", "1"}},
      fused_work, unfused_work, validate, [](const Case& c) {
        auto s = shape_of(c);
        std::string p = "layernorm+qkv+attention+proj+add+layernorm+linear+bias";
        if (s.act != Act::none) p.append("+").append(tensor::to_string(s.act));
        p.append("+linear+add");
        return s.causal ? p + " (causal)" : p;
      });
  // Two LayerNorms, Wqkv, Wo, W1, W2 with their biases; the four projections, the MLP and
  // attention's two products.
  op.model_cost = [](const Case& c) {
    auto s = shape_of(c);
    const double h = double(s.hidden), m = double(s.mlp), rows = double(s.rows());
    const double params = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * m + m) + (m * h + h);
    const double attention = 2 * double(s.batch) * double(s.seq) * double(s.seq) * h;
    return ModelCost{params, rows * (4 * h * h + 2 * h * m) + attention};
  };
  // `opmeter check`: the flash kernel's head_dim 64 (causal, seq not a tile's multiple) and 128,
  // odd hidden and seq, one token.
  auto block = [](int batch, int seq, int hidden, int heads, int mlp, const char* act, int causal) -> Params {
    return {{"batch", std::to_string(batch)}, {"seq", std::to_string(seq)},   {"hidden", std::to_string(hidden)},
            {"heads", std::to_string(heads)}, {"mlp", std::to_string(mlp)},   {"act", act},
            {"causal", std::to_string(causal)}};
  };
  // Sizes of multiples of 32 take the CPU's AMX GEMM for the projections in bf16 (`opmeter`), past
  // 512 rows with the weights' panels packed once per call.
  op.check_shapes = {block(1, 37, 128, 2, 0, "gelu", 1), block(2, 19, 128, 1, 200, "silu", 0), op.example,
                     block(1, 1, 39, 3, 0, "silu", 0), block(2, 16, 64, 2, 128, "gelu", 1),
                     block(1, 544, 64, 2, 96, "silu", 0)};
  // Each weight-only recipe on the four matrices (decode and a few rows; K of 128, 256 and 512 take
  // every group), and training steps (mode=train) on odd sizes (head_dim 16 and 18, causal or not)
  // and on sizes of multiples of 32 (the CPU's AMX GEMM for the projections' backward).
  for (const char* recipe : {"int8wo", "int4wo-64", "hqq-int4-64", "float8wo"})
    for (auto p : {block(1, 1, 128, 2, 0, "gelu", 1), block(1, 7, 128, 2, 256, "silu", 1)}) {
      p.emplace_back(linear::kQuant, recipe);
      op.check_shapes.push_back(std::move(p));
    }
  for (auto p : {block(2, 9, 48, 3, 80, "gelu", 1), block(1, 5, 36, 2, 0, "silu", 0), block(1, 32, 64, 2, 128, "gelu", 1)}) {
    p.emplace_back(linear::kMode, linear::kTrain);
    op.check_shapes.push_back(std::move(p));
  }
  // Weight-only recipes on the four weight matrices (transformer_quant.hpp).
  op.optional_params = {{.key = linear::kQuant, .config_key = "quantization", .absent = quant::kBaseline,
                         .help = "weight-only quantization recipe of the four weight matrices", .values = quant::recipe_names()}};
  for (auto& p : train_params()) op.optional_params.push_back(std::move(p));  // mode=train, phase
  // The projections: rows x hidden by weights of 4 hidden + 2 mlp rows, seen as that many
  // hidden x hidden GEMMs (attention's products are left out: smaller at common sizes).
  op.gemm_view = [](const Case& c) -> std::optional<GemmView> {
    auto batch = integer_param(c, "batch"), seq = integer_param(c, "seq"), hidden = integer_param(c, "hidden"),
         mlp = integer_param(c, "mlp");
    if (!batch || !seq || !hidden || !mlp || *hidden < 1) return std::nullopt;
    const double m = *mlp > 0 ? *mlp : 4 * *hidden;
    return GemmView{*batch * *seq, *hidden, *hidden, (4 * *hidden + 2 * m) / *hidden};
  };
  Registry::global().add(op);
  tensor::register_reference<TransformerBlockOp>("transformer_block", {DType::fp32, DType::bf16}, reference_cost);
  // A quantized case's spec is the recipe's (its stored weights, its gate and SQNR).
  Registry::global().set_spec("transformer_block", [] {
    return std::make_unique<linear::SpecByRecipe<TransformerBlockOp, QuantTransformerBlockOp>>();
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::transformer
