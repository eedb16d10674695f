#pragma once
// The float8 training step's decisions that need no GPU, for cublaslt_fp8_train
// (ops/linear/cuda/linear_cublaslt_fp8_train.cpp) and the check (linear_train_check.cpp): the
// scale a tensor gets from its amax, the three fp8 GEMMs in the only layout Hopper's fp8 GEMM
// takes (TN) with the transposed fp8 copies they need, which cuBLASLt scale mode a granularity
// maps to, what a case and a device support, and the check's tolerance.
#include <cstddef>
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/op.hpp"
#include "ops/linear/fp8_scale.hpp"
#include "ops/linear/linear.hpp"

namespace opmeter::linear::fp8_train {

// Largest finite value: 448 (e4m3), 57344 (e5m2).
float max_finite(Format f);
// Relative rounding error of a normal value cast to the format (half an ulp): 2^-4, 2^-3.
double unit_roundoff(Format f);

// One operand of an fp8 GEMM: `rows` x `ld` row-major, K (the contraction) contiguous.
struct Operand {
  std::string name;  // "x", "W^T", ...
  Format format;
  std::size_t rows, ld;
  bool transposed_copy;  // made by the transpose-and-quantize pass (counted in the step)
};
// D (M x N, bf16) = A (M x K) B (N x K)^T: cuBLASLt's TN, the one fp8 layout Hopper runs.
struct Gemm {
  std::string name;  // forward, dgrad, wgrad
  std::size_t M, N, K;
  Operand a, b;
};
// The gradient's format: e5m2 with tensorwise scales; e4m3 with rowwise ones, as torchao's
// rowwise recipe (and the worker's form, worker/torch_training.py) has it.
Format grad_format(bool rowwise);
// The step's three GEMMs: forward z = x W^T (x, W as stored), dgrad dx = dz W (dz as stored, W^T
// copy), wgrad dW = dz^T x (dz^T and x^T copies). x is LayerNorm's output for ln_linear.
std::vector<Gemm> step_gemms(const Shape& s, bool rowwise);

// How cuBLASLt reads an operand's scales: one float for the tensor (SCALAR_32F) or one per row
// of the operand (OUTER_VEC_32F: M floats for A, N for B), as torchao's rowwise recipe scales
// each operand along its contraction dimension.
enum class ScaleMode { tensor, outer_vector };
ScaleMode scale_mode(const Float8Knobs& k);
std::size_t scale_count(ScaleMode m, const Operand& o);

// What no device runs: the impl trains float8dq-tensor / float8dq-row in bf16, and cuBLASLt's
// fp8 GEMMs want every leading dimension (hidden, out and rows: each is some GEMM's K) a multiple
// of 16.
Support case_support(const Case& c);
// What the device runs: fp8 tensor cores from compute capability 8.9; per-row (outer-vector)
// scales in cuBLASLt from 9.0. Rowwise is never run as tensorwise.
Support device_support(int cc, bool rowwise, const std::string& gpu);

// The check's tolerance on its scaled error |got - ref| / sum |terms| (linear_train_check.cpp)
// for a step whose GEMMs contract over at most `max_k`. Each term a*b of a GEMM becomes
// q(a) q(b) with |q(v) - v| <= u |v| for normal codes, so its error is at most
// (u_a + u_b + u_a u_b) |a b|: the backward GEMMs' (gradient x e4m3) bound it, at 2^-3 + 2^-4 +
// 2^-7 with e5m2 gradients.
// Accumulation adds a random-walk 4 sqrt(K) u_acc, u_acc 2^-24 (fp32) or, with fast
// accumulation, 2^-14 (Hopper's fp8 tensor cores keep about 14 bits when partial sums are not
// promoted). dz is stored in bf16 before its cast and the outputs are bf16: 2 x 2^-8. Values
// below the format's normal range (2^-6 of the scale for e4m3) round with an absolute error
// instead; with dynamic scaling they are far below amax and add nothing visible; with scaling
// disabled on tiny tensors they can exceed this bound, which is a real loss the check reports.
double tolerance(bool fast_accum, std::size_t max_k, Format grad);
// The relative error of the forward's z = x W^T (both e4m3) against its sum of |terms|: how far
// the check must look around z for act'(z).
double forward_error(bool fast_accum, std::size_t k);

}  // namespace opmeter::linear::fp8_train
