#pragma once
// opmeter's CPU decode attention. Tasks are (head, chunk of keys): each streams its K and V rows
// once with an online softmax (running max m, sum l and accumulator acc over blocks of keys) and
// leaves a partial (m, l, acc); a second step merges the chunks of each head,
//   out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c,  M = max_c m_c.
// A head is split into chunks only when the heads alone give the threads too few tasks.
#include <cstddef>
#include <vector>

namespace opmeter::decode_attention {

struct CpuArgs {
  bool bf16 = false;  // q, K, V and out in bf16 (else fp32); math in fp32
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  std::size_t heads = 0, kv = 0, d = 0;  // heads = batch * heads
  float scale = 1.0f;
};

// Chunks per head for `threads` threads: enough tasks for every thread (4 each), no chunk
// shorter than kMinChunk keys.
constexpr std::size_t kMinChunk = 256;
std::size_t chunks_for(std::size_t heads, std::size_t kv, std::size_t threads);

// Scratch of one configuration: the partials and each thread's query and score block.
struct CpuWorkspace {
  std::size_t chunks = 1, threads = 1, thread_floats = 0;
  std::vector<float> partials, per_thread;
  void size_for(const CpuArgs& a, std::size_t threads);
};

// Sizes ws again first if more threads than it was sized for would run.
void run_cpu(const CpuArgs& a, CpuWorkspace& ws);

}  // namespace opmeter::decode_attention
