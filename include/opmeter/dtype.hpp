#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opmeter {

// Element types an op can be measured in. Mixed-precision ops name their input type
// (bf16 GEMM = bf16 inputs, fp32 accumulation; int8 GEMM = u8 x s8 -> s32).
enum class DType { fp64, fp32, tf32, fp16, bf16, fp8_e4m3, int8 };

std::string_view to_string(DType d);
std::optional<DType> parse_dtype(std::string_view name);
const std::vector<DType>& all_dtypes();
std::size_t size_of(DType d);  // bytes of one input element

}  // namespace opmeter
