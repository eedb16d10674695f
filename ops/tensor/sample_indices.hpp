#pragma once
// Which rows or columns a sampled check looks at: the training checks compare gradients against
// an fp64 reference on a sample when the whole would cost too much.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "opmeter/buffer.hpp"

namespace opmeter::tensor {

// `count` distinct indices of n in ascending order, the first and last among them (edges are
// where indexing mistakes show); all of them when count >= n.
inline std::vector<std::size_t> sample_indices(std::size_t n, std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> picks;
  if (count >= n) {
    for (std::size_t i = 0; i < n; ++i) picks.push_back(i);
    return picks;
  }
  Rng rng(seed);
  picks = {0, n - 1};
  while (picks.size() < count) {
    const std::size_t i = rng.next() % n;
    if (std::find(picks.begin(), picks.end(), i) == picks.end()) picks.push_back(i);
  }
  std::sort(picks.begin(), picks.end());
  return picks;
}

}  // namespace opmeter::tensor
