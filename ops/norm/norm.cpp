// Normalization ops, their fp64 reference and opmeter's kernels.
#include "ops/norm/norm.hpp"

#include <cmath>

#include "ops/norm/layernorm_reference.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::norm {

std::vector<TensorDesc> NormOp::inputs() const {
  std::size_t n = out_rows() * out_cols(), h = out_cols();
  switch (kind_) {
    case Kind::layernorm: return {{"x", act(), n}, {"gamma", Elem::f32, h, 0.5, 1.5}, {"beta", Elem::f32, h, -0.5, 0.5}};
    case Kind::rmsnorm: return {{"x", act(), n}, {"gamma", Elem::f32, h, 0.5, 1.5}};
    case Kind::batchnorm:
      return {{"x", act(), n}, {"mean", Elem::f32, h, -0.5, 0.5}, {"var", Elem::f32, h, 0.25, 1.5},
              {"gamma", Elem::f32, h, 0.5, 1.5}, {"beta", Elem::f32, h, -0.5, 0.5}};
    case Kind::softmax: return {{"x", act(), n, -8, 8}};
  }
  return {};
}

double NormOp::fp32_tolerance() const {
  // Row sums in fp32 grow rounding like sqrt(hidden).
  return (64 + 4 * std::sqrt(double(out_cols()))) * 0x1p-24;
}

void NormOp::reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const {
  const std::size_t h = out_cols();
  std::vector<double> x(h);
  for (std::size_t c = 0; c < h; ++c) x[c] = in[0][row * h + c];
  const double eps = tensor::kNormEps;
  switch (kind_) {
    case Kind::layernorm: {
      layernorm_row(x.data(), h, x.data());
      for (std::size_t c = 0; c < h; ++c) {
        double scaled = x[c] * vec(in, 1)[c], beta = vec(in, 2)[c];
        ref[c] = scaled + beta;
        mag[c] = std::fabs(scaled) + std::fabs(beta) + 1;
      }
      break;
    }
    case Kind::rmsnorm: {
      double s2 = 0;
      for (double v : x) s2 += v * v;
      double rrms = 1 / std::sqrt(s2 / double(h) + eps);
      for (std::size_t c = 0; c < h; ++c) {
        ref[c] = x[c] * rrms * vec(in, 1)[c];
        mag[c] = std::fabs(ref[c]) + 1;
      }
      break;
    }
    case Kind::batchnorm:
      for (std::size_t c = 0; c < h; ++c) {
        double scaled = (x[c] - vec(in, 1)[c]) / std::sqrt(double(vec(in, 2)[c]) + eps) * vec(in, 3)[c];
        double beta = vec(in, 4)[c];
        ref[c] = scaled + beta;
        mag[c] = std::fabs(scaled) + std::fabs(beta) + 1;
      }
      break;
    case Kind::softmax: {
      double mx = *std::max_element(x.begin(), x.end()), sum = 0;
      for (std::size_t c = 0; c < h; ++c) sum += ref[c] = std::exp(x[c] - mx);
      // fp16 stores values below 2^-14 as subnormals, rounded to 2^-25 absolute: their scale is
      // at least that smallest normal (wide rows have many; bf16 and fp32 have fp32's range).
      const double floor = std::max(1.0 / double(h), case_.dtype == DType::fp16 ? 0x1p-14 : 0.0);
      for (std::size_t c = 0; c < h; ++c) {
        ref[c] /= sum;
        mag[c] = ref[c] + floor;
      }
      break;
    }
  }
}

namespace {

class OpmeterNorm : public HostImpl<NormOp> {
 public:
  using HostImpl::HostImpl;
  void run(std::size_t copy) override {
    const auto& k = tensor::kernels();
    std::size_t rows = out_rows(), h = out_cols();
    const HostTensors& set = host_inputs(copy);
    switch (kind_) {
      case Kind::layernorm: k.layernorm(bf16(), in(copy, 0), out(copy), vec(set, 1), vec(set, 2), rows, h); break;
      case Kind::rmsnorm: k.rmsnorm(bf16(), in(copy, 0), out(copy), vec(set, 1), rows, h); break;
      case Kind::batchnorm:
        k.batchnorm(bf16(), in(copy, 0), out(copy), vec(set, 1), vec(set, 2), vec(set, 3), vec(set, 4), rows, h);
        break;
      case Kind::softmax: k.softmax(bf16(), in(copy, 0), out(copy), rows, h); break;
    }
  }
  std::map<std::string, std::string> details() const override { return {{"isa", tensor::kernels().isa}}; }
};

struct NormInfo {
  Kind kind;
  const char* name;
  const char* summary;
  double flops;         // per element
  double param_vectors; // fp32 vectors of hidden values read per call
};
constexpr NormInfo kNorms[] = {
    {Kind::layernorm, "layernorm", "LayerNorm over hidden with gamma and beta", 7, 2},
    {Kind::rmsnorm, "rmsnorm", "RMSNorm over hidden with gamma", 4, 1},
    {Kind::batchnorm, "batchnorm", "BatchNorm inference, channels along hidden", 2, 4},
    {Kind::softmax, "softmax", "softmax along hidden", 5, 0},
};

const bool registered = [] {
  for (const auto& info : kNorms) {
    OpDef op = tensor::rows_op(info.name, info.summary, [info](const Case& c) {
      double n = double(tensor::rows_of(c)) * double(tensor::hidden_of(c));
      double act = n * double(size_of(c.dtype));
      return Work{n * info.flops, act + info.param_vectors * 4 * double(tensor::hidden_of(c)), act};
    });
    // Learned vectors: gamma and beta (BatchNorm's running statistics are buffers, not parameters).
    const double learned = info.kind == Kind::softmax ? 0 : info.kind == Kind::rmsnorm ? 1 : 2;
    op.model_cost = [learned](const Case& c) { return ModelCost{learned * double(tensor::hidden_of(c)), 0}; };
    op.check_shapes = tensor::row_check_shapes(op.example);  // 2^16 + 1: a row reduced in many passes
    Registry::global().add(std::move(op));
    Kind kind = info.kind;
    tensor::register_reference<NormOp>(info.name, {DType::fp32, DType::bf16},
                               [](const Case& c) { return 8.0 * double(tensor::rows_of(c) * tensor::hidden_of(c)); }, kind);
    Registry::global().add(ImplDef{
        .op = info.name,
        .impl = "opmeter",
        .preference = ImplDef::own_kernel,
        .summary = "opmeter's vectorized kernel: one pass over memory, row statistics in cache",
        .dtypes = {DType::fp32, DType::bf16},
        .make = [kind] { return std::make_unique<OpmeterNorm>(kind); },
    });
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::norm
