#pragma once
// opmeter's blocked (flash-style) CPU attention for the rows of one (batch, head):
// per block of query rows, loop over blocks of keys: S = scale q k^T on cache-resident tiles,
// online softmax (running max and sum per row, the accumulator rescaled when the max grows),
// O += P v. Both products are register-blocked micro-kernels (GCC vector types, one copy per
// ISA chosen at run time; bf16 heads use AVX512_BF16 dot products where the CPU has them).
// The seq x seq matrix never exists: a thread holds k^T and v of one head (seq x d each, fp32
// or bf16 pairs) and tiles of block size.
#include <cstddef>

namespace opmeter::attention::blocked {

// One head: q, k, v are seq x d (row-major, fp32 or bf16 as `bf16` says), out is seq x d
// (probs = false) or seq x seq (probs = true, the softmax itself).
struct Head {
  bool bf16 = false;
  bool probs = false;
  bool causal = false;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  std::size_t seq = 0, d = 0;
  float scale = 1.0f;
};

struct Kernel {
  const char* isa;
  std::size_t query_block, key_block;  // rows of q per block (full stage), keys per block
  // Floats of workspace one call of `rows` needs (per thread, reused across calls).
  std::size_t (*workspace_floats)(std::size_t seq, std::size_t d, bool probs);
  // Output rows [q_begin, q_end) of head h; ws has workspace_floats(...) floats, 64-byte aligned.
  void (*rows)(const Head& h, std::size_t q_begin, std::size_t q_end, float* ws);
  // What computes the products for such a head (the seq and out of h are not read).
  const char* (*products)(const Head& h);
};

Kernel amx_bf16_kernel();     // bf16 heads of head_dim a multiple of 32 on AMX tiles (full stage), else as below
Kernel avx512_bf16_kernel();  // bf16 heads in vdpbf16ps
Kernel avx512_kernel();
Kernel avx2_kernel();
Kernel base_kernel();
const Kernel& kernel();  // the best this CPU runs

}  // namespace opmeter::attention::blocked
