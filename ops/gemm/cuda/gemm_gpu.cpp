#include "ops/gemm/cuda/gemm_gpu.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "opmeter/buffer.hpp"
#include "opmeter/context.hpp"

namespace opmeter::gemm {
namespace {
constexpr std::uint32_t kInt32Poison = 0x7f7f7f7f;  // beyond any s8*s8 sum with K < 2^16
constexpr int kCublasStatusNotSupported = 15;  // CUBLAS_STATUS_NOT_SUPPORTED

// Input element i of a buffer in the case's dtype, as the reference reads it.
double input_value(DType d, const std::uint8_t* p, std::size_t i) {
  switch (d) {
    case DType::fp16: return __half2float(reinterpret_cast<const __half*>(p)[i]);
    case DType::bf16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    case DType::fp8_e4m3: return static_cast<float>(reinterpret_cast<const __nv_fp8_e4m3*>(p)[i]);
    case DType::int8: return reinterpret_cast<const std::int8_t*>(p)[i];
    default: return reinterpret_cast<const float*>(p)[i];
  }
}

// Output element i; NaN when still poisoned.
double output_value(DType d, const std::uint8_t* p, std::size_t i) {
  switch (d) {
    case DType::fp16: return __half2float(reinterpret_cast<const __half*>(p)[i]);
    case DType::bf16:
    case DType::fp8_e4m3: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    case DType::int8: {
      auto v = reinterpret_cast<const std::int32_t*>(p)[i];
      return std::bit_cast<std::uint32_t>(v) == kInt32Poison ? std::numeric_limits<double>::quiet_NaN() : v;
    }
    default: return reinterpret_cast<const float*>(p)[i];
  }
}

// Elements [begin, end) of a buffer of random inputs in the case's dtype.
void encode_range(DType d, std::vector<std::uint8_t>& out, std::size_t begin, std::size_t end, Rng& rng) {
  for (std::size_t i = begin; i < end; ++i) {
    float x = static_cast<float>(rng.uniform(-1, 1));
    switch (d) {
      case DType::fp16: reinterpret_cast<__half*>(out.data())[i] = __float2half_rn(x); break;
      case DType::bf16: reinterpret_cast<__nv_bfloat16*>(out.data())[i] = __float2bfloat16_rn(x); break;
      case DType::fp8_e4m3: reinterpret_cast<__nv_fp8_e4m3*>(out.data())[i] = __nv_fp8_e4m3(x); break;
      case DType::int8: reinterpret_cast<std::int8_t*>(out.data())[i] = static_cast<std::int8_t>(rng.next() >> 56); break;
      default: reinterpret_cast<float*>(out.data())[i] = x; break;
    }
  }
}

// n random inputs: chunks of 1 Mi elements, each from its own stream of `seed`, on every usable
// CPU (an 8192^2 operand is 67 M elements: seconds on one core, three times per case).
void encode(DType d, std::vector<std::uint8_t>& out, std::size_t n, std::uint64_t seed) {
  constexpr std::size_t kChunk = 1 << 20;
  out.resize(n * size_of(d));
  const auto chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for num_threads(default_threads()) schedule(dynamic)
  for (std::int64_t c = 0; c < chunks; ++c) {
    Rng rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(c) + 1);
    const auto begin = static_cast<std::size_t>(c) * kChunk;
    encode_range(d, out, begin, std::min(n, begin + kChunk), rng);
  }
}

}  // namespace

double gpu_tolerance(DType d, std::int64_t K) {
  double acc = 4 * std::sqrt(static_cast<double>(K)) * 0x1p-24 + 1e-7;
  switch (d) {
    case DType::int8: return 0;
    case DType::tf32: return 0x1p-10 + acc;
    case DType::fp16: return 0x1p-10 + acc;
    case DType::bf16: return 0x1p-8 + acc;
    case DType::fp8_e4m3: return 0x1p-8 + 4 * std::sqrt(static_cast<double>(K)) * 0x1p-20;
    default: return acc;
  }
}

void check_cublas(int status, const char* what, const char* status_text) {
  if (status == 0) return;
  auto message = fmt::format("{}: {} (status {})", what, status_text ? status_text : "cuBLAS error", status);
  if (status == kCublasStatusNotSupported) throw Unsupported(message);
  throw std::runtime_error(message);
}

void GpuGemm::setup(const Case& c, const SetupOptions& options) {
  case_ = c;
  d_ = dims(c);
  device_ = c.device_index();
  stream_ = cuda::stream(device_);
  auto M = static_cast<std::size_t>(d_.M), N = static_cast<std::size_t>(d_.N), K = static_cast<std::size_t>(d_.K);
  a_ = cuda::DeviceBuffer(M * K * size_of(c.dtype));
  b_ = cuda::DeviceBuffer(N * K * size_of(c.dtype));
  c_ = cuda::DeviceBuffer(M * N * gpu_c_elem_bytes(c.dtype));
  upload_inputs(options.seed);
  prepare();
}

void GpuGemm::upload_inputs(std::uint64_t seed) {
  encode(case_.dtype, host_a_, a_.bytes() / size_of(case_.dtype), 2 * seed);
  encode(case_.dtype, host_b_, b_.bytes() / size_of(case_.dtype), 2 * seed + 1);
  cuda::upload(a_.data(), host_a_.data(), host_a_.size(), stream_);
  cuda::upload(b_.data(), host_b_.data(), host_b_.size(), stream_);
}

void GpuGemm::sync() { cuda::check(cudaStreamSynchronize(stream_), "GEMM"); }

Check GpuGemm::verify(std::uint64_t seed) {
  upload_inputs(seed);
  cuda::fill(c_.data(), case_.dtype == DType::int8 ? 0x7f : 0xff, c_.bytes(), stream_);  // poison C
  run(0);
  sync();
  std::vector<std::uint8_t> out(c_.bytes());
  cuda::download(out.data(), c_.data(), out.size(), stream_);

  const auto K = static_cast<std::size_t>(d_.K);
  const DType dt = case_.dtype;
  return sampled_check(
      d_, seed, gpu_tolerance(dt, d_.K), default_threads(),
      [&](std::size_t i, std::size_t k) { return input_value(dt, host_a_.data(), i * K + k); },
      [&](std::size_t k, std::size_t j) { return input_value(dt, host_b_.data(), j * K + k); },  // B is N x K
      [&](std::size_t idx) { return output_value(dt, out.data(), idx); });
}

}  // namespace opmeter::gemm
