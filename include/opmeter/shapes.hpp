#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace opmeter {

// A GEMM shape as the seeds write it: [m, k, n].
struct MatShape {
  std::int64_t m = 0, k = 0, n = 0;
  std::string label;  // e.g. `attn.wqkv` for llama shapes
  bool operator==(const MatShape&) const = default;
};

// Shape generators (all return shapes in [m, k, n] order).
std::vector<MatShape> pow2_shapes(int min_power, int max_power);           // square 2^p
std::vector<MatShape> pow2_extended_shapes(int min_power, int max_power);  // 2^p and 1.5 * 2^p
std::vector<MatShape> sweep_shapes(int min_power, int max_power);          // every m x k x n
// LLaMA-2-70B linear layers (fused attn.wqkv and ffn.w13, tensor-parallel degree 1) at `tokens`.
std::vector<MatShape> llama_shapes(std::int64_t tokens);
// `count` shapes, each dimension drawn log-uniformly in [lo, hi] and rounded to a multiple of
// `multiple_of` (at least that); shapes over `max_macs` multiply-adds (0: no cap) are redrawn.
// The same seed gives the same shapes on every machine.
std::vector<MatShape> random_shapes(int count, std::int64_t lo, std::int64_t hi, std::uint64_t seed,
                                    std::int64_t multiple_of = 1, double max_macs = 0);
// `count` indices of [0, n) drawn without replacement, in increasing order (all when count >= n).
std::vector<std::size_t> sample_indices(std::size_t n, std::size_t count, std::uint64_t seed);
// The same, but 0 and n - 1 always among them (the rest: sample_indices of the interior), for
// checks of computed rows, where indexing mistakes show at the edges; at least the two edges.
std::vector<std::size_t> sample_indices_with_edges(std::size_t n, std::size_t count, std::uint64_t seed);

}  // namespace opmeter
