#include "ops/transformer/blocked_self_attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "ops/attention/attention_blocked.hpp"

namespace opmeter::transformer {
namespace {
constexpr std::size_t kQueryBlock = 128;  // queries per attention task: enough tasks for every thread
}

void BlockedSelfAttention::prepare(const Shape& s, DType dtype, int threads) {
  const std::size_t e = size_of(dtype);
  per_thread_.clear();
  workspaces_.clear();
  const std::size_t ws_floats = attention::blocked::kernel().workspace_floats(s.seq, s.head_dim(), false);
  for (int t = 0; t < std::max({1, threads, omp_get_max_threads()}); ++t) {
    per_thread_.emplace_back(4 * s.seq * s.head_dim() * e);
    workspaces_.emplace_back(ws_floats * sizeof(float));
  }
}

void BlockedSelfAttention::run(const Shape& s, DType dtype, const void* qkv_rows, void* attn_rows) {
  const std::size_t e = size_of(dtype), h = s.hidden, d = s.head_dim(), row = d * e;
  const std::size_t blocks = (s.seq + kQueryBlock - 1) / kQueryBlock, tasks = s.batch * s.heads * blocks;
  const char* qkv = static_cast<const char*>(qkv_rows);
  char* attn = static_cast<char*>(attn_rows);
  const auto& k = attention::blocked::kernel();
  const bool bf16 = dtype == DType::bf16;
  const int threads = std::min(omp_get_max_threads(), int(per_thread_.size()));  // one gather buffer each
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::size_t t = 0; t < tasks; ++t) {
    const std::size_t b = t / (s.heads * blocks), head = t / blocks % s.heads, blk = t % blocks;
    const std::size_t q0 = blk * kQueryBlock, q1 = std::min(s.seq, q0 + kQueryBlock);
    const std::size_t keys = s.causal ? q1 : s.seq;
    char* buf = static_cast<char*>(per_thread_[std::size_t(omp_get_thread_num())].data());
    char *qb = buf, *kb = qb + s.seq * row, *vb = kb + s.seq * row, *ob = vb + s.seq * row;
    for (std::size_t i = 0; i < keys; ++i) {
      const char* src = qkv + ((b * s.seq + i) * 3 * h + head * d) * e;
      if (i >= q0 && i < q1) std::memcpy(qb + i * row, src, row);
      std::memcpy(kb + i * row, src + h * e, row);
      std::memcpy(vb + i * row, src + 2 * h * e, row);
    }
    const attention::blocked::Head hd{.bf16 = bf16, .probs = false, .causal = s.causal, .q = qb, .k = kb,
                                      .v = vb, .out = ob, .seq = keys, .d = d, .scale = s.scale()};
    k.rows(hd, q0, q1, workspaces_[std::size_t(omp_get_thread_num())].as<float>());
    for (std::size_t i = q0; i < q1; ++i) std::memcpy(attn + ((b * s.seq + i) * h + head * d) * e, ob + i * row, row);
  }
}

}  // namespace opmeter::transformer
