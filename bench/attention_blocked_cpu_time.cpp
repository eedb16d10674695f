// The blocked attention kernel alone, on one thread, timed by this thread's CPU time (minimum
// of 20 runs), so that other jobs on a shared machine do not count (docs/BENCHMARKS.md, issue 14).
//   attention_blocked_cpu_time [seq] [head_dim] [heads] [probs 0|1] [causal 0|1] [bf16 0|1] [kernel]
// kernel: amx_bf16, avx512_bf16, avx512, avx2 or base (default: the best this CPU runs).
#include <time.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "opmeter/buffer.hpp"
#include "ops/attention/attention_blocked.hpp"
#include "ops/tensor/amx.hpp"

namespace {
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
std::size_t arg(int argc, char** argv, int i, std::size_t fallback) {
  return argc > i ? std::size_t(std::strtoull(argv[i], nullptr, 10)) : fallback;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace opmeter::attention::blocked;
  const std::size_t seq = arg(argc, argv, 1, 1024), d = arg(argc, argv, 2, 64), heads = arg(argc, argv, 3, 2);
  const bool probs = arg(argc, argv, 4, 0), causal = arg(argc, argv, 5, 0), bf16 = arg(argc, argv, 6, 0);
  if (seq == 0 || d == 0 || heads == 0) {
    std::fprintf(stderr, "seq, head_dim and heads must be positive\n");
    return 2;
  }
  const std::size_t e = bf16 ? 2 : 4, in_bytes = heads * seq * d * e, cols = probs ? seq : d;
  opmeter::Buffer q(in_bytes), k(in_bytes), v(in_bytes), o(heads * seq * cols * e);
  opmeter::Rng rng(1);
  for (auto* b : {&q, &k, &v})
    for (std::size_t i = 0; i < heads * seq * d; ++i) {
      const float x = float(rng.uniform(-1, 1));
      if (bf16)
        b->as<std::uint16_t>()[i] = std::uint16_t(std::bit_cast<std::uint32_t>(x) >> 16);
      else
        b->as<float>()[i] = x;
    }
  const std::string name = argc > 7 ? argv[7] : kernel().isa;
  const Kernel kr = name == "amx_bf16"      ? amx_bf16_kernel()
                    : name == "avx512_bf16" ? avx512_bf16_kernel()
                    : name == "avx512"      ? avx512_kernel()
                    : name == "avx2"        ? avx2_kernel()
                    : name == "base"        ? base_kernel()
                                            : Kernel{};
  if (!kr.rows) {
    std::fprintf(stderr, "kernel must be amx_bf16, avx512_bf16, avx512, avx2 or base (not %s)\n", name.c_str());
    return 2;
  }
  // The tiles need Linux's grant (asked here); the vector kernels need their instructions.
  __builtin_cpu_init();
  const bool runs = name == "amx_bf16"      ? opmeter::amx::bf16_usable()
                    : name == "avx512_bf16" ? __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")
                    : name == "avx512"      ? __builtin_cpu_supports("avx512f")
                    : name == "avx2"        ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                            : true;
  if (!runs) {
    std::fprintf(stderr, "kernel %s does not run on this CPU\n", name.c_str());
    return 2;
  }
  opmeter::Buffer ws(kr.workspace_floats(seq, d, probs) * sizeof(float));
  double best = 1e300;
  for (int rep = 0; rep < 20; ++rep) {
    const double t0 = thread_cpu_s();
    for (std::size_t h = 0; h < heads; ++h) {
      Head head{.bf16 = bf16, .probs = probs, .causal = causal,
                .q = q.as<char>() + h * seq * d * e, .k = k.as<char>() + h * seq * d * e,
                .v = v.as<char>() + h * seq * d * e, .out = o.as<char>() + h * seq * cols * e,
                .seq = seq, .d = d, .scale = 0.125f};
      kr.rows(head, 0, seq, ws.as<float>());
    }
    best = std::min(best, thread_cpu_s() - t0);
  }
  const double n = double(seq), flops = double(heads) * (2 * n * n * double(d) + 5 * n * n + (probs ? 0 : 2 * n * n * double(d)));
  std::printf("%s seq=%zu head_dim=%zu heads=%zu probs=%d causal=%d bf16=%d: %.3f ms CPU, %.1f GFLOP/s (full square)\n",
              kr.isa, seq, d, heads, int(probs), int(causal), int(bf16), best * 1e3, flops / best * 1e-9);
  return 0;
}
