#include "opmeter/buffer.hpp"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>

namespace opmeter {
namespace {
std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};

void note_alloc(std::size_t bytes) {
  auto live = g_live.fetch_add(bytes) + bytes;
  auto peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}
}  // namespace

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  std::size_t rounded = (bytes + 4095) / 4096 * 4096;
  data_ = std::aligned_alloc(4096, rounded);
  if (!data_) throw std::bad_alloc();
  // Touch every page now, so the first timed call does not pay for page faults.
  std::memset(data_, 0, rounded);
  note_alloc(bytes_);
}

Buffer::~Buffer() {
  if (data_) {
    std::free(data_);
    g_live.fetch_sub(bytes_);
  }
}

Buffer::Buffer(Buffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
  o.data_ = nullptr;
  o.bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    this->~Buffer();
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

HeldBytes::HeldBytes(std::size_t bytes) : bytes_(bytes) { note_alloc(bytes_); }
HeldBytes::~HeldBytes() { g_live.fetch_sub(bytes_); }
HeldBytes::HeldBytes(HeldBytes&& o) noexcept : bytes_(o.bytes_) { o.bytes_ = 0; }
HeldBytes& HeldBytes::operator=(HeldBytes&& o) noexcept {
  if (this != &o) {
    g_live.fetch_sub(bytes_);
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

std::size_t Buffer::live_bytes() { return g_live.load(); }
std::size_t Buffer::peak_bytes() { return g_peak.load(); }
void Buffer::reset_peak() { g_peak.store(g_live.load()); }

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

void fill_uniform(std::span<float> out, Rng& rng, float lo, float hi) {
  for (auto& x : out) x = static_cast<float>(rng.uniform(lo, hi));
}

void fill_uniform_tiled(std::span<float> out, Rng& rng, float lo, float hi) {
  constexpr std::size_t kTile = 1 << 18;
  auto head = out.subspan(0, std::min(out.size(), kTile));
  fill_uniform(head, rng, lo, hi);
  for (std::size_t i = head.size(); i < out.size(); i += kTile)
    std::memcpy(out.data() + i, head.data(), std::min(kTile, out.size() - i) * sizeof(float));
}

void fill_uniform(std::span<double> out, Rng& rng, double lo, double hi) {
  for (auto& x : out) x = rng.uniform(lo, hi);
}

}  // namespace opmeter
