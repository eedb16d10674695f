#pragma once
// pool2d, NCHW: y[n, c, i, j] = max or mean of x[n, c] over the kernel x kernel window whose
// top-left corner is (i * stride - padding, j * stride - padding).
// Params: batch, channels, image (H = W), kernel, stride, padding, kind (max | avg);
// oh = (image + 2 padding - kernel) / stride + 1, padding <= kernel / 2 (as PyTorch requires).
// avg divides by kernel^2: padded elements count as zeros (PyTorch's count_include_pad=True; with
// floor rounding every window lies inside the padded image). max never sees padding.
// Global average pooling is kind=avg, kernel=image, padding=0 (oh = 1): every model's head.
// dtypes: fp32, bf16 (CPU and CUDA), fp16 (CUDA); sums in fp32.
// Output: rows (n, c, i) x cols j, as conv2d's. Error: max is exact; avg |y - ref| / (sum|x| / k^2).
#include <optional>
#include <string>

#include "opmeter/tensor_op.hpp"

namespace opmeter::pool {

enum class Kind { max, avg };
std::optional<Kind> parse_kind(const std::string& s);

struct Shape {
  std::size_t n, c, h, k, stride, pad, oh;
  Kind kind;
  std::size_t planes() const { return n * c; }
  // One output per plane that averages the whole plane: the fast path of every impl.
  bool global_avg() const { return kind == Kind::avg && k == h && pad == 0; }
};
Shape shape_of(const Case& c);

class PoolOp : public tensor::TensorOp {
 public:
  std::vector<TensorDesc> inputs() const override;
  std::size_t out_rows() const override;
  std::size_t out_cols() const override { return shape_of(case_).oh; }
  void reference_row(const HostTensors& in, std::size_t row, double* ref, double* mag) const override;
  double fp32_tolerance() const override;
  double reference_row_cost() const override;

 protected:
  static constexpr std::size_t kX = 0;
};

}  // namespace opmeter::pool
