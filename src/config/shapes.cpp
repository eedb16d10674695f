#include "opmeter/shapes.hpp"

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

}  // namespace opmeter
