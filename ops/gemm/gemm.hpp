#pragma once
// GEMM C = A * B^T, row-major, on every device: A is M x K, B is stored N x K (a linear layer's
// weight, the layout cuBLASLt needs for fp8 and int8), C is M x N.
// Element types (types() below, the one place they are defined):
//   fp64, fp32, tf32: same in and out (tf32 rounds inputs to 10 mantissa bits on the GPU);
//   fp16, bf16: fp32 accumulation; C in the input type on CUDA (as torch.matmul), fp32 on the CPU;
//   fp8 (e4m3): C in bf16 (CUDA only);
//   int8: s32 accumulation and C; A is u8 on the CPU (oneDNN's u8*s8), s8 on CUDA (cuBLAS's s8*s8).
// Work: 2*M*N*K flops; bytes = A + B + C (each read or written once).
// Error metric: |c - ref| / sum_k |a_ik * b_jk| with ref in fp64, per sampled element.
#include <cstdint>

#include "opmeter/op_spec.hpp"

namespace opmeter::gemm {

struct Dims {
  std::int64_t M = 0, N = 0, K = 0;
};
Dims dims(const Case& c);

struct Types {
  Elem a, b, c;
};
Types types(const Case& c);  // by dtype, and host or CUDA device
double tolerance(const Case& c);

// The spec every GEMM impl shares, CPU or GPU: inputs A and B, output C, tolerance, the check
// (every element of C written and finite, a sample of elements within tolerance of fp64 sums).
class GemmSpec : public OpSpec {
 public:
  void bind(const Case& c) override;
  std::vector<TensorDesc> inputs() const override;
  TensorDesc output() const override;
  double tolerance() const override { return gemm::tolerance(case_); }
  Check check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const override;

 protected:
  static constexpr std::size_t kA = 0, kB = 1;
  Case case_;
  Dims d_;
};

// CPU GEMM impls: derive and implement run() (and prepare() for library handles).
class GemmImpl : public HostImpl<GemmSpec> {
 protected:
  void* a(std::size_t copy) { return in(copy, kA); }
  void* b(std::size_t copy) { return in(copy, kB); }
  void* c(std::size_t copy) { return out(copy); }
  int threads() const { return case_.threads; }
};

}  // namespace opmeter::gemm
