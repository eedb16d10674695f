// Picks the blocked attention kernel this CPU runs best.
#include "ops/attention/attention_blocked.hpp"

#include "ops/tensor/amx.hpp"

namespace opmeter::attention::blocked {

const Kernel& kernel() {
  static const Kernel k = [] {
    __builtin_cpu_init();
    if (amx::bf16_usable()) return amx_bf16_kernel();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")) return avx512_bf16_kernel();
    if (__builtin_cpu_supports("avx512f")) return avx512_kernel();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2_kernel();
    return base_kernel();
  }();
  return k;
}

}  // namespace opmeter::attention::blocked
