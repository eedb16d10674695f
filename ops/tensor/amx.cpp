// AMX's run-time gate (amx.hpp): CPUID, then Linux's permission for the tile state.
#include "ops/tensor/amx.hpp"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace opmeter::amx {
namespace {

// CPUID leaf 7, subleaf 0, EDX: AMX-BF16 bit 22, AMX-TILE bit 24, AMX-INT8 bit 25.
constexpr unsigned kBf16Bit = 22, kTileBit = 24, kInt8Bit = 25;

bool cpu_has(unsigned edx_bit) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (d >> kTileBit & 1) && (d >> edx_bit & 1);
}

bool tiles_granted() {
  // ARCH_REQ_XCOMP_PERM (0x1023) for XTILEDATA (state component 18); a grant lasts the process.
  static const bool granted = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  return granted;
}

}  // namespace

bool bf16_usable() { return cpu_has(kBf16Bit) && tiles_granted(); }
bool int8_usable() { return cpu_has(kInt8Bit) && tiles_granted(); }

}  // namespace opmeter::amx
