#include "opmeter/shapes.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace opmeter {

std::vector<MatShape> pow2_shapes(int min_power, int max_power) {
  std::vector<MatShape> out;
  for (int p = min_power; p <= max_power; ++p) {
    std::int64_t v = std::int64_t{1} << p;
    out.push_back({v, v, v, {}});
  }
  return out;
}

std::vector<MatShape> pow2_extended_shapes(int min_power, int max_power) {
  std::vector<MatShape> out;
  for (int p = min_power; p <= max_power; ++p) {
    std::int64_t v = std::int64_t{1} << p;
    out.push_back({v, v, v, {}});
    out.push_back({v + v / 2, v + v / 2, v + v / 2, {}});
  }
  return out;
}

std::vector<MatShape> sweep_shapes(int min_power, int max_power) {
  std::vector<MatShape> out;
  for (int pm = min_power; pm <= max_power; ++pm)
    for (int pk = min_power; pk <= max_power; ++pk)
      for (int pn = min_power; pn <= max_power; ++pn)
        out.push_back({std::int64_t{1} << pm, std::int64_t{1} << pk, std::int64_t{1} << pn, {}});
  return out;
}

std::vector<MatShape> llama_shapes(std::int64_t tokens) {
  // LLaMA-2-70B weights as one node of 8 tensor-parallel shards holds them (hidden 8192,
  // 64 query + 8 kv heads of 128, FFN 28672), attention QKV and FFN w1/w3 fused: [K, N].
  return {
      {tokens, 8192, 1280, "attn.wqkv"},
      {tokens, 1024, 8192, "attn.wo"},
      {tokens, 8192, 7168, "ffn.w13"},
      {tokens, 3584, 8192, "ffn.w2"},
  };
}

namespace {
// A uniform double in [0, 1) from the generator's raw bits: the standard distributions may differ
// between standard libraries, the seeds' shapes must not.
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }
}  // namespace

std::vector<MatShape> random_shapes(int count, std::int64_t lo, std::int64_t hi, std::uint64_t seed,
                                    std::int64_t multiple_of, double max_macs) {
  if (lo < 1 || hi < lo || multiple_of < 1 || count < 0) throw std::invalid_argument("random_shapes: bad range");
  if (max_macs > 0 && max_macs < static_cast<double>(lo) * lo * lo)
    throw std::invalid_argument("random_shapes: max_macs is below the smallest shape");
  // Every dimension is a multiple of multiple_of within [lo, hi]: rounded to the nearest multiple,
  // then kept within the first and last multiples in the range.
  const std::int64_t first = (lo + multiple_of - 1) / multiple_of * multiple_of, last = hi / multiple_of * multiple_of;
  if (first > last) throw std::invalid_argument("random_shapes: no multiple of multiple_of lies in [min, max]");
  std::mt19937_64 g(seed);
  const double l = std::log(static_cast<double>(lo)), h = std::log(static_cast<double>(hi));
  auto draw = [&] {
    auto v = static_cast<std::int64_t>(std::llround(std::exp(l + (h - l) * unit(g)) / static_cast<double>(multiple_of)));
    return std::clamp(v * multiple_of, first, last);
  };
  std::vector<MatShape> out;
  while (static_cast<int>(out.size()) < count) {
    MatShape s{draw(), draw(), draw(), {}};
    if (max_macs > 0 && static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n) > max_macs) continue;
    out.push_back(s);
  }
  return out;
}

std::vector<std::size_t> sample_indices(std::size_t n, std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  if (count >= n) return all;
  std::mt19937_64 g(seed);
  for (std::size_t i = 0; i < count; ++i) {  // a partial Fisher-Yates: the first `count` are the sample
    auto j = i + static_cast<std::size_t>(unit(g) * static_cast<double>(n - i));
    std::swap(all[i], all[std::min(j, n - 1)]);
  }
  all.resize(count);
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<std::size_t> sample_indices_with_edges(std::size_t n, std::size_t count, std::uint64_t seed) {
  if (count >= n || n <= 2) return sample_indices(n, n, seed);
  std::vector<std::size_t> picks{0};
  for (std::size_t i : sample_indices(n - 2, count > 2 ? count - 2 : 0, seed)) picks.push_back(i + 1);
  picks.push_back(n - 1);
  return picks;
}

}  // namespace opmeter
