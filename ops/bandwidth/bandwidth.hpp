#pragma once
// Memory bandwidth kernels over fp32 arrays of n elements (STREAM's accounting: bytes = read +
// written, write-allocate traffic not counted):
//   copy   b = a            scale  b = s*a          add  c = a + b       triad  a = b + s*c
//   read   sum(a)           write  a = v
// `_nt` variants (copy_nt, scale_nt, add_nt, triad_nt, write_nt) use non-temporal stores.
#include <cstddef>
#include <cstdint>

#include "opmeter/op.hpp"
#include <optional>
#include <string>
#include <vector>

namespace opmeter::bandwidth {

enum class Kind { copy, scale, add, triad, read, write };

struct KernelSpec {
  Kind kind;
  bool nt;
  int arrays;  // arrays the kernel touches
  int reads;   // arrays read
  int writes;  // arrays written
};

std::optional<KernelSpec> parse_kernel(const std::string& name);
const std::vector<std::string>& kernel_names();

constexpr float kScalar = 3.0f;
constexpr float kWriteValue = 1.5f;

// The exact check every impl (CPU or GPU) shares. Inputs are small integers so every kernel's
// answer is representable: any difference is a bug, not rounding.
std::vector<std::vector<float>> check_inputs(const KernelSpec& spec, std::size_t n, std::uint64_t seed);
int output_array(const KernelSpec& spec);  // which array a kernel writes (-1: read)
Check check_output(const KernelSpec& spec, const std::vector<std::vector<float>>& inputs, const float* out, std::size_t n);
Check check_sum(const std::vector<float>& input, double got);
// The same over arrays in place (spec.arrays pointers of n floats), so the CPU impl checks its own
// buffers without n-sized copies: at hundreds of MiB per array the copies cost seconds per case.
void fill_check_inputs(const KernelSpec& spec, float* const* arrays, std::size_t n, std::uint64_t seed);
Check check_output(const KernelSpec& spec, const float* const* inputs, const float* out, std::size_t n);
Check check_sum(const float* input, std::size_t n, double got);

// One ISA's kernels over a range (pointers 64-byte aligned, n a multiple of 16 except at the end).
struct Kernels {
  const char* isa;
  void (*copy)(const float* a, float* b, std::size_t n, bool nt);
  void (*scale)(const float* a, float* b, std::size_t n, bool nt);
  void (*add)(const float* a, const float* b, float* c, std::size_t n, bool nt);
  void (*triad)(float* a, const float* b, const float* c, std::size_t n, bool nt);
  double (*read)(const float* a, std::size_t n);
  void (*write)(float* a, float value, std::size_t n, bool nt);
};

Kernels avx512_kernels();
Kernels avx2_kernels();
Kernels base_kernels();
Kernels select_kernels();  // the widest this CPU runs

// Optional parameter `passes`: the kernel goes over its arrays this many times in one call, so
// that a call on an array of a few KB (a cache level's bandwidth) is not its fixed cost.
inline constexpr const char* kPasses = "passes";
std::int64_t passes_of(const Case& c);

}  // namespace opmeter::bandwidth
