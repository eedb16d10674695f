#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "opmeter/dtype.hpp"  // to_bf16 / from_bf16, which ops storing bf16 use with buffers

namespace opmeter {

// 64-byte aligned, page-touched memory that counts itself: the engine reports the peak bytes a
// case held. Move-only.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::size_t bytes() const { return bytes_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T> T* as() { return static_cast<T*>(data_); }
  template <class T> const T* as() const { return static_cast<const T*>(data_); }
  template <class T> std::span<T> span() { return {as<T>(), bytes_ / sizeof(T)}; }

  static std::size_t live_bytes();
  static std::size_t peak_bytes();
  static void reset_peak();  // peak := live

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Bytes an impl holds in containers of its own (a quantized layer's packed weight copies), counted
// with the Buffers in the peak a case held. Move-only.
class HeldBytes {
 public:
  HeldBytes() = default;
  explicit HeldBytes(std::size_t bytes);
  ~HeldBytes();
  HeldBytes(HeldBytes&& other) noexcept;
  HeldBytes& operator=(HeldBytes&& other) noexcept;
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
};

// Deterministic fast random numbers for inputs (splitmix64): never zeros, reproducible by seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform(double lo, double hi);  // [lo, hi)
 private:
  std::uint64_t state_;
};

void fill_uniform(std::span<float> out, Rng& rng, float lo, float hi);
void fill_uniform(std::span<double> out, Rng& rng, double lo, double hi);
// Random values in the first 256 Ki elements, repeated: fast for large timing buffers whose
// values matter only for not being constant.
void fill_uniform_tiled(std::span<float> out, Rng& rng, float lo, float hi);

}  // namespace opmeter
