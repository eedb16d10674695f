// The loss ops (loss.hpp): their spec, fp64 reference and opmeter's CPU kernel.
#include "ops/loss/loss.hpp"

#include <cmath>

#include "ops/tensor/kernels.hpp"

namespace opmeter::loss {

std::vector<TensorDesc> LossOp::inputs() const {
  std::size_t rows = tensor::rows_of(case_), n = rows * tensor::hidden_of(case_);
  if (kind_ == Kind::mse) return {{"pred", act(), n}, {"target", act(), n}};
  return {{"logits", act(), n, -8, 8}, {"labels", Elem::s32, rows, 0, double(tensor::hidden_of(case_))}};
}

double LossOp::reference_row_cost() const { return 8.0 * double(tensor::rows_of(case_) * tensor::hidden_of(case_)); }

void LossOp::reference_row(const HostTensors& in, std::size_t, double* ref, double* mag) const {
  const std::size_t rows = tensor::rows_of(case_), h = tensor::hidden_of(case_);
  double sum = 0, scale = 0;
  if (kind_ == Kind::mse) {
    for (std::size_t i = 0; i < rows * h; ++i) {
      double d = in[0][i] - in[1][i];
      sum += d * d;
    }
    scale = sum;
  } else {
    for (std::size_t r = 0; r < rows; ++r) {
      double mx = -INFINITY, s = 0;
      for (std::size_t c = 0; c < h; ++c) mx = std::max(mx, in[0][r * h + c]);
      for (std::size_t c = 0; c < h; ++c) s += std::exp(in[0][r * h + c] - mx);
      double target = in[0][r * h + static_cast<std::size_t>(in[1][r])];
      sum += std::log(s) + mx - target;
      scale += std::fabs(std::log(s) + mx) + std::fabs(target);
    }
  }
  *ref = sum / double(kind_ == Kind::mse ? rows * h : rows);
  *mag = scale / double(kind_ == Kind::mse ? rows * h : rows) + 1e-30;
}

namespace {

class OpmeterLoss : public HostImpl<LossOp> {
 public:
  using HostImpl::HostImpl;
  void run(std::size_t copy) override {
    const auto& k = tensor::kernels();
    std::size_t rows = tensor::rows_of(case_), h = tensor::hidden_of(case_);
    double loss = kind_ == Kind::mse
                      ? k.mse(bf16(), in(copy, 0), in(copy, 1), rows * h)
                      : k.cross_entropy(bf16(), in(copy, 0), static_cast<const std::int32_t*>(in(copy, 1)), rows, h);
    *static_cast<float*>(out(copy)) = static_cast<float>(loss);
  }
  std::map<std::string, std::string> details() const override { return {{"isa", tensor::kernels().isa}}; }
};

const bool registered = [] {
  struct Info {
    Kind kind;
    const char* name;
    const char* summary;
  };
  for (auto info : {Info{Kind::mse, "mse", "mean squared error, mean reduction"},
                    Info{Kind::cross_entropy, "cross_entropy", "cross-entropy of logits (hidden = classes) with integer labels, mean"}}) {
    Kind kind = info.kind;
    OpDef op = tensor::rows_op(info.name, info.summary, [kind](const Case& c) {
      double rows = double(tensor::rows_of(c)), n = rows * double(tensor::hidden_of(c));
      double act = n * double(size_of(c.dtype));
      if (kind == Kind::mse) return Work{3 * n, 2 * act, 4};
      return Work{4 * n, act + 4 * rows, 4};
    });
    // One class (cross-entropy's loss is 0), 2^16 + 1 classes; a one-element mean.
    op.check_shapes = tensor::row_check_shapes(op.example);
    Registry::global().add(std::move(op));
    tensor::register_reference<LossOp>(info.name, {DType::fp32, DType::bf16},
                               [](const Case& c) { return 20.0 * double(tensor::rows_of(c) * tensor::hidden_of(c)); }, kind);
    Registry::global().add(ImplDef{
        .op = info.name,
        .impl = "opmeter",
        .preference = ImplDef::own_kernel,
        .summary = "opmeter's vectorized one-pass kernel (fp32 chunk sums, fp64 across chunks)",
        .dtypes = {DType::fp32, DType::bf16},
        .make = [kind] { return std::make_unique<OpmeterLoss>(kind); },
    });
  }
  return true;
}();

}  // namespace
}  // namespace opmeter::loss
