#pragma once
// GEMM C = A * B, row-major, A: M x K, B: K x N, C: M x N.
// dtypes: fp64, fp32; bf16 = bf16 inputs with fp32 accumulation and fp32 C;
// int8 = u8 A x s8 B -> s32 C.
// Work: 2*M*N*K flops; bytes = A + B + C (each read or written once).
// Error metric: |c - ref| / sum_k |a_ik * b_kj| with ref in fp64, per sampled element.
#include <cstdint>
#include <functional>
#include <vector>

#include "opmeter/buffer.hpp"
#include "opmeter/op.hpp"

namespace opmeter::gemm {

struct Dims {
  std::int64_t M = 0, N = 0, K = 0;
};
Dims dims(const Case& c);

std::size_t a_elem_bytes(DType d);
std::size_t c_elem_bytes(DType d);
// On CUDA devices (ops/gemm/cuda/): C in the input type for fp16/bf16, bf16 for fp8, else 4 bytes.
// B is stored N x K there (a linear layer's weight), the layout cuBLASLt needs for fp8 and int8.
std::size_t gpu_c_elem_bytes(DType d);
double tolerance(DType d, std::int64_t K);

// The check every GEMM impl shares, CPU or GPU: every element of C written and finite (poison
// gone), and a sample of them within `tolerance` of fp64 sums. a(i, k), b(k, j) and c(i * N + j)
// read element values as the impl stores them.
using ElementFn = std::function<double(std::size_t, std::size_t)>;
Check sampled_check(Dims d, std::uint64_t seed, double tolerance, int threads, const ElementFn& a, const ElementFn& b,
                    const std::function<double(std::size_t)>& c);

// What every GEMM impl shares: input/output sets, random inputs, poisoning and the check.
// An impl derives from this and implements prepare() (library handles) and run().
class GemmImpl : public Impl {
 public:
  void setup(const Case& c, const SetupOptions& options) override;
  Check verify(std::uint64_t seed) override;

 protected:
  // Called once after buffers are allocated and filled (create primitives, descriptors here).
  virtual void prepare() {}
  void* a(std::size_t copy) { return sets_[copy].a.data(); }
  void* b(std::size_t copy) { return sets_[copy].b.data(); }
  void* c(std::size_t copy) { return sets_[copy].c.data(); }
  std::size_t copies() const { return sets_.size(); }

  Case case_;
  Dims d_;
  int threads_ = 1;

 private:
  struct Set {
    Buffer a, b, c;
  };
  void fill_inputs(Set& s, std::uint64_t seed);
  void poison_output(Set& s);
  std::vector<Set> sets_;
};

}  // namespace opmeter::gemm
