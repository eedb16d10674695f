// Linear-layer ops: parameters, work models, the fp64 reference.
#include "ops/linear/linear.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ops/activation/activation.hpp"
#include "ops/linear/train_params.hpp"
#include "ops/linear/quant/recipe.hpp"
#include "ops/norm/layernorm_reference.hpp"
#include "opmeter/errors.hpp"

namespace opmeter::linear {
using tensor::Act;

namespace {
constexpr const char* kLnPrefix = "ln_linear_";
}

Shape shape_of(const Case& c) {
  Shape s{tensor::rows_of(c), tensor::hidden_of(c), tensor::param(c, "out"), Act::none, false};
  if (c.op.rfind(kLnPrefix, 0) == 0) {
    s.layernorm = true;
    s.act = *tensor::parse_act(c.op.substr(std::string(kLnPrefix).size()));
  } else {
    s.act = *tensor::parse_act(c.get("act"));
  }
  return s;
}

std::vector<std::string> linear_ops() {
  std::vector<std::string> ops = {"linear"};
  for (Act a : tensor::all_acts()) ops.push_back(kLnPrefix + std::string(tensor::to_string(a)));
  return ops;
}

std::string recipe_of(const Case& c) { return c.get_or(kQuant, quant::kBaseline); }
int ksplit_of(const Case& c) {
  const auto v = c.get_or(kKsplit, "auto");
  return v == "auto" ? 0 : std::stoi(v);  // validated: digits, 1 to 1024
}
std::optional<gpu_pack::Operand> operand_of(const Case& c) {
  const auto v = c.get_or(kOperand, "auto");
  if (v == "auto") return std::nullopt;
  return v == "a" ? gpu_pack::Operand::a : gpu_pack::Operand::b;  // validated: a or b
}
bool training(const Case& c) { return c.get_or(kMode, "inference") == kTrain; }

double quantized_weight_bytes(const Case& c) {
  auto s = shape_of(c);
  auto r = quant::parse_recipe(recipe_of(c));
  const double weights = double(s.hidden) * double(s.out);
  if (!r || r->baseline()) return weights * double(size_of(c.dtype));
  // Scales (and zeros) are stored in the activations' 16-bit type, else fp32 (see recipe.hpp).
  const double scale = c.dtype == DType::fp32 ? 4 : 2;
  if (r->weights == quant::WeightFormat::int4) return weights / 2 + 2 * scale * weights / double(r->group);
  const double scales = r->activations == quant::ActivationFormat::fp8_per_tensor ? 1 : double(s.out);
  return weights + scale * scales;
}

namespace {
// One forward call.
Work forward_work(const Case& c) {
  auto s = shape_of(c);
  double rows = double(s.rows), h = double(s.hidden), o = double(s.out), e = double(size_of(c.dtype));
  Work w;
  w.flops = 2 * rows * h * o + rows * o * (1 + activation::flops_per_element(s.act)) + (s.layernorm ? 7 * rows * h : 0);
  w.bytes_read = rows * h * e + quantized_weight_bytes(c) + 4 * o + (s.layernorm ? 8 * h : 0);
  w.bytes_written = rows * o * e;
  return w;
}

// A training step's forward: the inference forward, and what it keeps for the backward, which
// backward_work reads back: z where an activation follows, LayerNorm's output. (LayerNorm's
// statistics, 8 bytes a row, are left out of both.)
Work train_forward_work(const Case& c) {
  auto s = shape_of(c);
  double rows = double(s.rows), h = double(s.hidden), o = double(s.out), e = double(size_of(c.dtype));
  Work w = forward_work(c);
  w.bytes_written += (s.act != Act::none ? rows * o * e : 0) + (s.layernorm ? rows * h * e : 0);
  return w;
}

// The backward: dz = dy * act'(z), dx = dz W (and LayerNorm's backward), dW = dz^T xhat,
// db = sum dz. Reads dy, W, the saved z and xhat (x for LayerNorm); writes dx, dW, db (and
// dgamma, dbeta), every gradient in the activations' type (train_layout).
Work backward_work(const Case& c) {
  auto s = shape_of(c);
  double rows = double(s.rows), h = double(s.hidden), o = double(s.out), e = double(size_of(c.dtype));
  Work w;
  w.flops = 4 * rows * h * o + rows * o * 2 + (s.layernorm ? 12 * rows * h : 0);
  w.bytes_read = rows * o * e + quantized_weight_bytes(c) + (s.act != Act::none ? rows * o * e : 0) + rows * h * e;
  w.bytes_written = rows * h * e + o * h * e + o * e + (s.layernorm ? 2 * h * e : 0);
  return w;
}

Work step_work(const Case& c) {
  Work f = train_forward_work(c), b = backward_work(c);
  return {f.flops + b.flops, f.bytes_read + b.bytes_read, f.bytes_written + b.bytes_written};
}
}  // namespace

Work fused_work(const Case& c) {
  if (!training(c)) return forward_work(c);
  switch (phase_of(c)) {
    case Phase::forward: return train_forward_work(c);
    case Phase::backward: return backward_work(c);
    case Phase::step: break;
  }
  return step_work(c);
}

Work unfused_work(const Case& c) {
  auto s = shape_of(c);
  double rows = double(s.rows), h = double(s.hidden), o = double(s.out), e = double(size_of(c.dtype));
  Work w = training(c) ? step_work(c) : forward_work(c);  // a phase's set holds the whole step's tensors
  // The bias pass reads and rewrites x W^T; the activation pass reads it once more, the GEMM reads
  // LayerNorm's output back. Both are written too, but a training step's work counts those writes
  // already (its forward keeps z and LayerNorm's output for the backward).
  double read = rows * o * e, written = rows * o * e;
  if (s.act != Act::none) {
    read += rows * o * e;
    if (!training(c)) written += rows * o * e;
  }
  if (s.layernorm) {
    read += rows * h * e;
    if (!training(c)) written += rows * h * e;
  }
  w.bytes_read += read;
  w.bytes_written += written;
  return w;
}

std::vector<TensorDesc> LinearOp::inputs() const {
  auto s = shape_of(case_);
  std::vector<TensorDesc> v = {{"x", act(), s.rows * s.hidden}, {"w", act(), s.out * s.hidden}, {"bias", Elem::f32, s.out}};
  if (s.layernorm) {
    v.push_back({"gamma", Elem::f32, s.hidden, 0.5, 1.5});
    v.push_back({"beta", Elem::f32, s.hidden, -0.5, 0.5});
  }
  if (training(case_)) v.push_back({"dy", act(), s.rows * s.out});
  return v;
}

double LinearOp::fp32_tolerance() const {
  return (64 + 8 * std::sqrt(double(shape_of(case_).hidden))) * 0x1p-24;
}

double LinearOp::reference_row_cost() const {
  auto s = shape_of(case_);
  return 2.0 * double(s.hidden) * double(s.out);
}

void LinearOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  auto s = shape_of(case_);
  std::vector<double> x(s.hidden);
  for (std::size_t k = 0; k < s.hidden; ++k) x[k] = in[kX][row * s.hidden + k];
  if (s.layernorm) {
    norm::layernorm_row(x.data(), s.hidden, x.data());
    for (std::size_t k = 0; k < s.hidden; ++k) x[k] = x[k] * vec(in, kGamma)[k] + vec(in, kBeta)[k];
  }
  for (std::size_t j = 0; j < s.out; ++j) {
    double z = vec(in, kBias)[j], m = std::fabs(z);
    for (std::size_t k = 0; k < s.hidden; ++k) {
      double p = x[k] * in[kW][j * s.hidden + k];
      z += p;
      m += std::fabs(p);
    }
    ref[j] = activation::reference(s.act, z);
    mag[j] = 1.2 * m + 1e-6;  // activations change an error by at most their slope (< 1.2)
  }
}

namespace {

// The case's recipe and mode make sense together, with its dtype and hidden size.
void validate_recipe(const Case& c) {
  auto name = recipe_of(c);
  auto r = quant::parse_recipe(name);
  if (!r) throw CaseError(fmt::format("{}={} unknown: expected one of {}", kQuant, name, fmt::join(quant::recipe_names(), ", ")));
  if (!r->baseline() && c.dtype != DType::fp32 && c.dtype != DType::bf16 && c.dtype != DType::fp16)
    throw CaseError(
        fmt::format("{}={} takes activations in fp32, bf16 or fp16, not {}", kQuant, name, to_string(c.dtype)));
  if (auto why = quant::recipe_problem(*r, shape_of(c).hidden); !why.empty()) throw CaseError(fmt::format("{}={}: {}", kQuant, name, why));
  if (training(c) && !quant::trains(*r))
    throw CaseError(fmt::format("{}={} has no training step: {}={} takes baseline, float8dq-tensor or float8dq-row", kQuant, name, kMode, kTrain));
}

// A parameter of the weight-only kernel (ksplit, operand) on a case that does not run it.
void require_weight_only_inference(const Case& c, const std::string& key, const std::string& what) {
  const auto name = recipe_of(c);
  const auto r = quant::parse_recipe(name);  // validate_recipe has checked it
  if (!r->weight_only() || training(c))
    throw CaseError(
        fmt::format("{}={} {} the weight-only kernel: it takes quant=int8wo, int4wo-G, hqq-int4-G or "
                    "float8wo in inference, not quant={}{}",
                    key, c.get(key), what, name, training(c) ? " with mode=train" : ""));
}

// ksplit=N (its default, auto, never stands in a case): a number of splits, for a weight-only
// recipe in inference.
void validate_ksplit(const Case& c) {
  if (!c.has(kKsplit)) return;
  const auto& v = c.get(kKsplit);
  const bool number =
      !v.empty() && v.size() <= 4 && std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!number || std::stoi(v) < 1 || std::stoi(v) > 1024)
    throw CaseError(fmt::format("{}={} unknown: expected auto or a number of splits from 1 to 1024", kKsplit, v));
  require_weight_only_inference(c, kKsplit, "splits K in");
}

// operand=a|b (auto never stands in a case; the values are the OptionalParam's), for a
// weight-only recipe in inference.
void validate_operand(const Case& c) {
  if (c.has(kOperand)) require_weight_only_inference(c, kOperand, "picks the mma operand of");
}

// `opmeter check`'s shapes: odd sizes with tails, one element, a decode row with a wide K, rows a
// vector wide, each act, sizes of multiples of 32 past one chunk of k and one task's columns (the
// AMX GEMM of opmeter's bf16 layer); then each quantization recipe at decode and at 18 rows over K of 3
// groups (a group must divide K) or else odd, and (linear) at decode over a K past two of the GPU
// kernel's 512-wide chunks (split-K and its in-kernel sum, a partial last chunk) and, for int8
// weights, 3 rows over K = 320 (the CPU's limbs kernel, which needs K a multiple of 64); then
// training steps.
std::vector<Params> linear_check_shapes(bool with_act) {
  auto shape = [with_act](int batch, int seq, int hidden, int out, const char* act) {
    Params p = {{"batch", std::to_string(batch)}, {"seq", std::to_string(seq)}, {"hidden", std::to_string(hidden)},
                {"out", std::to_string(out)}};
    if (with_act) p.emplace_back("act", act);
    return p;
  };
  std::vector<Params> out = {shape(2, 5, 263, 77, "none"), shape(1, 1, 1, 1, "relu"), shape(1, 1, 4099, 33, "gelu_tanh"),
                             shape(1, 17, 64, 128, "silu"), shape(2, 3, 37, 19, "gelu"), shape(2, 16, 544, 288, "gelu")};
  for (auto& name : quant::recipe_names()) {
    auto recipe = quant::parse_recipe(name);
    if (recipe->baseline()) continue;
    const int hidden = recipe->group ? 3 * static_cast<int>(recipe->group) : 263;
    const int wide = recipe->group ? 17 * static_cast<int>(recipe->group) : 1031;
    std::vector<Params> shapes = {shape(1, 1, hidden, 77, "none"), shape(2, 9, hidden, 37, "none")};
    if (with_act) {  // linear only (ln_linear's GEMM is the same): one row, and 11 (rows g and g + 8 of the tile)
      shapes.push_back(shape(1, 1, wide, 77, "none"));
      shapes.push_back(shape(1, 11, wide, 77, "none"));
    }
    // int8 weights (int8wo, int8dq): the CPU's limbs kernel (K a multiple of 64; for int8wo
    // ln_linear rounds its LayerNorm's output to bf16), one pass of 3 rows.
    if (recipe->weights == quant::WeightFormat::int8) shapes.push_back(shape(1, 3, 320, 77, "none"));
    for (auto p : shapes) {
      p.emplace_back(kQuant, name);
      out.push_back(std::move(p));
    }
  }
  // Training steps (mode=train): the whole step's y, dx, dW, db (dgamma, dbeta) against fp64, on
  // odd sizes with tails and on sizes of multiples of 32 (the CPU's AMX GEMM for the backward,
  // tensor::ProjectionBackward); the float8 training recipes on sizes fp8 GEMMs take (multiples of 16).
  for (auto p : {shape(2, 5, 67, 33, "gelu"), shape(1, 3, 17, 9, "silu"), shape(2, 16, 96, 64, "gelu")}) {
    p.emplace_back(kMode, kTrain);
    out.push_back(std::move(p));
  }
  for (const char* name : {"float8dq-tensor", "float8dq-row"}) {
    auto p = shape(2, 8, 64, 32, "none");
    p.emplace_back(kQuant, name);
    p.emplace_back(kMode, kTrain);
    out.push_back(std::move(p));
  }
  return out;
}

OpDef linear_def(const std::string& name, const std::string& summary, bool with_act) {
  std::vector<std::pair<std::string, std::string>> extra = {{"out", "4096"}};
  if (with_act) extra.emplace_back("act", "none");
  OpDef op = tensor::rows_op(name, summary, fused_work, extra);
  auto rows_validate = op.validate;
  op.validate = [rows_validate](const Case& c) {
    rows_validate(c);
    tensor::check_range(c, "out", 1, 1 << 20);
    if (c.op == "linear" && !tensor::parse_act(c.get("act"))) {
      std::vector<std::string> names = {"none"};
      for (Act a : tensor::all_acts()) names.emplace_back(tensor::to_string(a));
      throw CaseError(fmt::format("linear act={} unknown: expected one of {}", c.get("act"), fmt::join(names, ", ")));
    }
    validate_recipe(c);
    validate_ksplit(c);
    validate_operand(c);
    validate_training_params(c);
  };
  op.optional_params = {
      {.key = kQuant, .config_key = "quantization", .absent = quant::kBaseline,
       .help = "quantization recipe of the weights (and activations)", .values = quant::recipe_names()},
      {.key = kMode, .config_key = "mode", .absent = "inference", .help = "inference, or train: forward + backward",
       .values = {"inference", kTrain}}};
  for (auto& p : training_params()) op.optional_params.push_back(std::move(p));
  op.optional_params.push_back({.key = kKsplit, .config_key = kKsplit, .absent = "auto",
                                .help = "cuda_quant weight-only: ways to split K, auto (the kernel's choice) or 1 to 1024"});
  op.optional_params.push_back(
      {.key = kOperand,
       .config_key = kOperand,
       .absent = "auto",
       .help =
           "cuda_quant weight-only: the mma operand the weights are (auto: A for int4 and int8 at rows <= 8, else B)",
       .values = {"auto", "a", "b"}});
  op.footprint = [](const Case& c) { return unfused_work(c).bytes(); };
  op.from_matrix_shape = [with_act](std::int64_t m, std::int64_t k, std::int64_t n) {
    std::vector<std::pair<std::string, std::string>> p = {
        {"batch", "1"}, {"seq", std::to_string(m)}, {"hidden", std::to_string(k)}, {"out", std::to_string(n)}};
    return p;
  };
  op.fusion_pattern = [](const Case& c) {
    auto s = shape_of(c);
    std::string p = s.layernorm ? "layernorm+linear+bias" : "linear+bias";
    // Appended piecewise: "+" + std::string(...) trips GCC 12's false -Wrestrict.
    if (s.act != Act::none) p.append("+").append(tensor::to_string(s.act));
    return p;
  };
  op.unfused_work = unfused_work;
  op.model_cost = [](const Case& c) {
    auto s = shape_of(c);
    double weights = double(s.hidden) * double(s.out);
    return ModelCost{weights + double(s.out) + (s.layernorm ? 2.0 * double(s.hidden) : 0.0), weights * double(s.rows)};
  };
  // A dynamic recipe's GEMMs run in its activations' format: int8dq in int8 everywhere (tensor
  // cores; the CPU's int8 dot products), float8dq in fp8 on a GPU (the CPU decodes it to the
  // activations' type). That format's peak is the ceiling, else a kernel would show above 100%.
  op.peak_dtype = [](const Case& c) -> std::optional<DType> {
    auto r = quant::parse_recipe(recipe_of(c));
    if (r && r->dynamic() && r->activations == quant::ActivationFormat::int8_per_token) return DType::int8;
    if (c.device.starts_with("cuda") && r && r->dynamic()) return DType::fp8_e4m3;
    return c.dtype;
  };
  op.gemm_view = [](const Case& c) -> std::optional<GemmView> {
    auto batch = integer_param(c, "batch"), seq = integer_param(c, "seq"), hidden = integer_param(c, "hidden"),
         out = integer_param(c, "out");
    if (!batch || !seq || !hidden || !out) return std::nullopt;
    return GemmView{*batch * *seq, *out, *hidden, 1};
  };
  op.check_shapes = linear_check_shapes(with_act);
  return op;
}

template <class Op>
void add_reference(const std::string& name) {
  tensor::register_reference<Op>(name, {DType::fp32, DType::bf16},
                             [](const Case& c) { return fused_work(c).flops; });
  Registry::global().set_spec(name, make_linear_spec);  // quant cases: QuantLinearOp's spec
}

const bool registered = [] {
  Registry::global().add(linear_def("linear", "y = act(x W^T + b); act none by default", true));
  add_reference<LinearOp>("linear");
  for (Act a : tensor::all_acts()) {
    std::string name = kLnPrefix + std::string(tensor::to_string(a));
    Registry::global().add(linear_def(name, fmt::format("y = {}(LayerNorm(x) W^T + b)", tensor::to_string(a)), false));
    add_reference<LinearOp>(name);
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
