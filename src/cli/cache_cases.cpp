#include "cli/cache_cases.hpp"

#include <algorithm>

#include "engine/runner.hpp"
#include "ops/bandwidth/bandwidth.hpp"

namespace opmeter {

std::vector<CacheReadCase> cache_read_cases(const std::vector<CacheLevel>& caches, int threads, std::size_t llc_bytes) {
  threads = std::max(1, threads);
  std::size_t last = 0;
  for (auto& c : caches)
    if (c.type != "Instruction") last = std::max(last, c.bytes);
  std::vector<CacheReadCase> out;
  for (auto& cache : caches) {
    if (cache.type == "Instruction" || cache.bytes == 0) continue;
    const std::size_t size = cache.bytes == last && llc_bytes > 0 ? std::min(cache.bytes, llc_bytes) : cache.bytes;
    const int shared_by = cache.shared_by > 0 ? cache.shared_by : cache.level <= 2 ? 1 : threads;
    const std::size_t instances = static_cast<std::size_t>((threads + shared_by - 1) / shared_by);
    const std::size_t capacity = size * instances;
    // Half the capacity in fp32 elements, a multiple of 16 (whole vectors per thread).
    const std::size_t n = std::max<std::size_t>(16, capacity / 2 / 4 / 16 * 16);
    Case c = ceiling_case("bandwidth", DType::fp32, {{"kernel", "read"}, {"n", std::to_string(n)}}, threads);
    // A call of at least kCacheCallBytes: reading a few KB takes about what a call costs anyway.
    const std::size_t passes = (kCacheCallBytes + n * 4 - 1) / (n * 4);
    if (passes > 1) c.set(bandwidth::kPasses, std::to_string(passes));
    c.hot = true;
    out.push_back({cache.level, capacity, c});
  }
  return out;
}

}  // namespace opmeter
