#pragma once
// opmeter's own CPU kernels for the tensor ops: one pass over memory where the math allows,
// vectorized by the compiler (one copy of kernels.inc per ISA, chosen at run time), threaded
// with OpenMP over rows. Activations are fp32 or bf16 (`bf16` = storage only: math in fp32);
// gamma, beta, bias and statistics are always fp32.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opmeter::tensor {

enum class Act { none, relu, relu6, leaky_relu, gelu, gelu_tanh, silu, sigmoid, hardswish };
std::string_view to_string(Act a);
std::optional<Act> parse_act(std::string_view s);
const std::vector<Act>& all_acts();        // without `none`
constexpr float kLeakySlope = 0.01f;       // PyTorch's default negative slope
constexpr float kNormEps = 1e-5f;          // LayerNorm / RMSNorm / BatchNorm epsilon

struct Kernels {
  const char* isa;
  // y = act(x) over n elements.
  void (*act)(Act a, bool bf16, const void* x, void* y, std::size_t n);
  // Row-wise over rows x cols: y = (x - mean) / sqrt(var + eps) * gamma + beta.
  void (*layernorm)(bool bf16, const void* x, void* y, const float* gamma, const float* beta, std::size_t rows,
                    std::size_t cols);
  // y = x / sqrt(mean(x^2) + eps) * gamma.
  void (*rmsnorm)(bool bf16, const void* x, void* y, const float* gamma, std::size_t rows, std::size_t cols);
  // y = exp(x - max) / sum(exp(x - max)) along each row.
  void (*softmax)(bool bf16, const void* x, void* y, std::size_t rows, std::size_t cols);
  // Inference BatchNorm with channels along cols: y = (x - mean) / sqrt(var + eps) * gamma + beta.
  void (*batchnorm)(bool bf16, const void* x, void* y, const float* mean, const float* var, const float* gamma,
                    const float* beta, std::size_t rows, std::size_t cols);
  // mean((p - t)^2) over n elements.
  double (*mse)(bool bf16, const void* p, const void* t, std::size_t n);
  // mean over rows of logsumexp(row) - row[label].
  double (*cross_entropy)(bool bf16, const void* logits, const std::int32_t* labels, std::size_t rows,
                          std::size_t cols);
  // In place on an fp32 tile: c[i][j] = act(c[i][j] + bias[j]) (bias may be null); the result goes to
  // y (fp32 or bf16, row stride ldy) so a tile is finished while it is still in cache.
  void (*epilogue)(Act a, const float* c, std::size_t ldc, const float* bias, bool bf16_out, void* y,
                   std::size_t ldy, std::size_t rows, std::size_t cols);
  // A training step's activation backward: dz = dy act'(z) over n elements (dz may be dy).
  void (*act_backward)(Act a, bool bf16, const void* dy, const void* z, void* dz, std::size_t n);
};

Kernels avx512_kernels();
Kernels avx2_kernels();
Kernels base_kernels();
const Kernels& kernels();  // the best this CPU runs

}  // namespace opmeter::tensor
