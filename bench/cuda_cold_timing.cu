// What the convention of a "cold" sample adds to a bandwidth-bound kernel's time, on one GPU:
// cuBLASLt's bf16 product at M = 1 (a decode step's linear layer, y = x W^T with W row-major
// N x K) on LLaMA-2-70B's shard shapes, and an empty kernel, each timed by CUDA events around
// one call after
//   write-1x  a write of L2's size (opmeter's cold samples before; nvbench's way),
//   write-2x  a write of twice L2's size (opmeter's worker before; Triton's do_bench writes 256 MB),
//   read-2x   a read of twice L2's size (opmeter's cold samples now: no dirty lines left in L2);
// and by events around back-to-back calls, per call:
//   rotate    over copies of W that together exceed L2 three times, no flush (each call's W
//             comes from memory, as each layer's weights do in a decode step),
//   graph     the same rotation captured once in a CUDA graph, one replay a sample (what
//             opmeter's cold graph-mode cases time),
//   hot       the same W every call (in L2 where it fits).
// Every timed stretch waits behind a hold kernel until the host has issued it all, so host launch
// cost stays out. Each figure is the median of `samples` samples, in microseconds. The one-call
// columns include the event pair's and the launch's cost, which the empty kernel's line shows;
// rotate, graph and hot share it among their calls.
// Usage: cuda_cold_timing [samples]   (default 200)
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

// Spins until the host releases it, at most 0.1 s (a host blocked in a launch must not hang it).
__global__ void hold(const volatile int* release) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (*release == 0 && t - t0 < 100000000ull);
}
__global__ void empty() {}

// Reads every 16 bytes once through L2 at normal priority; the store behind a test the zeroed
// buffer never passes keeps the loads.
__global__ void read_through_l2(const uint4* p, std::size_t n, unsigned* sink) {
  unsigned sum = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    uint4 v = __ldcg(p + i);
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum == 0x9e3779b9u) sink[blockIdx.x] = sum;
}

struct Gpu {
  cudaStream_t s{};
  int sms = 0;
  std::size_t l2 = 0;
  volatile int* release = nullptr;
  int* release_device = nullptr;
  cudaEvent_t start{}, stop{};
  void* flush = nullptr;  // 2 x L2, zeroed
  unsigned* sink = nullptr;

  Gpu() {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
    sms = p.multiProcessorCount;
    l2 = static_cast<std::size_t>(p.l2CacheSize);
    std::printf("GPU: %s, %d SMs, L2 %.1f MB\n", p.name, sms, static_cast<double>(l2) / 1e6);
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    int* host = nullptr;
    check(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
    release = host;
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&release_device), host, 0), "mapped pointer");
    check(cudaEventCreate(&start), "event");
    check(cudaEventCreate(&stop), "event");
    check(cudaMalloc(&flush, 2 * l2), "flush buffer");
    check(cudaMemset(flush, 0, 2 * l2), "flush buffer");
    check(cudaMalloc(reinterpret_cast<void**>(&sink), 4096 * sizeof(unsigned)), "sink");
    check(cudaDeviceSynchronize(), "set-up");
  }

  // One sample: `before` untimed, then the hold, then events around `calls` calls. Seconds.
  double sample(const std::function<void()>& before, int calls, const std::function<void(int)>& call) {
    before();
    *release = 0;
    hold<<<1, 1, 0, s>>>(release_device);
    check(cudaEventRecord(start, s), "record");
    for (int i = 0; i < calls; ++i) call(i);
    check(cudaEventRecord(stop, s), "record");
    *release = 1;
    check(cudaStreamSynchronize(s), "sample");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    return ms * 1e-3;
  }

  void write_flush(std::size_t bytes) { check(cudaMemsetAsync(flush, 0, bytes, s), "write flush"); }
  void read_flush() {
    read_through_l2<<<4 * sms, 256, 0, s>>>(static_cast<const uint4*>(flush), 2 * l2 / sizeof(uint4), sink);
  }
};

struct Layer {
  const char* name;
  int K, N;
};

// cuBLASLt's bf16 product y (N) = W (N x K row-major) x (K), fp32 accumulation, by its first
// heuristic choice: W is K x N column-major used transposed.
struct Gemv {
  cublasLtHandle_t handle{};
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t w_layout{}, x_layout{}, y_layout{};
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  std::size_t workspace_bytes = 32u << 20;
  float alpha = 1, beta = 0;

  Gemv(int K, int N) {
    check(cublasLtCreate(&handle), "cublasLtCreate");
    check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "TRANSA");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "TRANSB");
    check(cublasLtMatrixLayoutCreate(&w_layout, CUDA_R_16BF, K, N, K), "layout W");
    check(cublasLtMatrixLayoutCreate(&x_layout, CUDA_R_16BF, K, 1, K), "layout x");
    check(cublasLtMatrixLayoutCreate(&y_layout, CUDA_R_16BF, N, 1, N), "layout y");
    check(cudaMalloc(&workspace, workspace_bytes), "workspace");
    cublasLtMatmulPreference_t pref{};
    check(cublasLtMatmulPreferenceCreate(&pref), "preference");
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                               sizeof workspace_bytes),
          "workspace preference");
    cublasLtMatmulHeuristicResult_t found{};
    int count = 0;
    check(cublasLtMatmulAlgoGetHeuristic(handle, desc, w_layout, x_layout, y_layout, y_layout, pref, 1, &found, &count),
          "heuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    if (count == 0) {
      std::fprintf(stderr, "cuBLASLt has no algorithm for %d x %d\n", K, N);
      std::exit(1);
    }
    algo = found.algo;
  }
  ~Gemv() {
    cudaFree(workspace);
    cublasLtMatrixLayoutDestroy(w_layout);
    cublasLtMatrixLayoutDestroy(x_layout);
    cublasLtMatrixLayoutDestroy(y_layout);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(handle);
  }
  Gemv(const Gemv&) = delete;
  Gemv& operator=(const Gemv&) = delete;
  void run(const void* w, const void* x, void* y, cudaStream_t s) {
    check(cublasLtMatmul(handle, desc, &alpha, w, w_layout, x, x_layout, &beta, y, y_layout, y, y_layout, &algo, workspace,
                         workspace_bytes, s),
          "cublasLtMatmul");
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double median_of(int samples, const std::function<double()>& one) {
  std::vector<double> v;
  for (int i = 0; i < samples; ++i) v.push_back(one());
  return median(v);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: cuda_cold_timing [samples]\n");
    return 2;
  }
  int samples = 200;
  if (argc == 2) {
    char* end = nullptr;
    const long n = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || n < 1 || n > 100000) {
      std::fprintf(stderr, "samples must be a whole number from 1 to 100000, got '%s'\n", argv[1]);
      return 2;
    }
    samples = static_cast<int>(n);
  }
  Gpu g;
  auto none = [] {};
  auto write1 = [&] { g.write_flush(g.l2); };
  auto write2 = [&] { g.write_flush(2 * g.l2); };
  auto read2 = [&] { g.read_flush(); };

  auto one_empty = [&](int) { empty<<<1, 32, 0, g.s>>>(); };
  // Every kernel loaded before a held sample: a lazy load while the hold spins could block the host.
  one_empty(0);
  read2();
  check(cudaStreamSynchronize(g.s), "warm-up");
  std::printf("\nempty kernel (us): write-1x %.2f  write-2x %.2f  read-2x %.2f  back-to-back %.2f\n",
              1e6 * median_of(samples, [&] { return g.sample(write1, 1, one_empty); }),
              1e6 * median_of(samples, [&] { return g.sample(write2, 1, one_empty); }),
              1e6 * median_of(samples, [&] { return g.sample(read2, 1, one_empty); }),
              1e6 * median_of(samples, [&] { return g.sample(none, 64, one_empty) / 64; }));

  const Layer layers[] = {{"attn.wqkv", 8192, 1280}, {"attn.wo", 1024, 8192}, {"ffn.w13", 8192, 7168}, {"ffn.w2", 3584, 8192}};
  std::printf("\n%-10s %8s | %9s %9s %9s %9s %9s %9s | TB/s of W at read-2x, graph\n", "layer", "W MB", "write-1x",
              "write-2x", "read-2x", "rotate", "graph", "hot");
  for (const Layer& l : layers) {
    const std::size_t w_bytes = static_cast<std::size_t>(l.K) * l.N * sizeof(__nv_bfloat16);
    const int copies = static_cast<int>(std::max<std::size_t>(2, (3 * g.l2 + w_bytes - 1) / w_bytes + 1));
    std::vector<void*> w(copies);
    for (auto& p : w) {
      check(cudaMalloc(&p, w_bytes), "W");
      check(cudaMemset(p, 0x3c, w_bytes), "W");  // bf16 0x3c3c: about 0.0115, finite
    }
    void *x = nullptr, *y = nullptr;
    check(cudaMalloc(&x, l.K * sizeof(__nv_bfloat16)), "x");
    check(cudaMemset(x, 0x3c, l.K * sizeof(__nv_bfloat16)), "x");
    check(cudaMalloc(&y, l.N * sizeof(__nv_bfloat16)), "y");
    check(cudaDeviceSynchronize(), "inputs");
    Gemv gemv(l.K, l.N);
    auto first = [&](int) { gemv.run(w[0], x, y, g.s); };
    auto rotated = [&](int i) { gemv.run(w[i % copies], x, y, g.s); };
    const int batch = copies * std::max(1, 32 / copies);
    gemv.run(w[0], x, y, g.s);  // loads cuBLASLt's kernel before any held sample
    check(cudaStreamSynchronize(g.s), "warm-up");
    for (int i = 0; i < 5; ++i) g.sample(none, 1, first);
    const double t_w1 = median_of(samples, [&] { return g.sample(write1, 1, first); });
    const double t_w2 = median_of(samples, [&] { return g.sample(write2, 1, first); });
    const double t_r2 = median_of(samples, [&] { return g.sample(read2, 1, first); });
    const double t_rot = median_of(samples, [&] { return g.sample(none, batch, rotated) / batch; });
    // The same batch as one CUDA graph (a multiple of the copies: every replay reads each alike).
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(g.s, cudaStreamCaptureModeThreadLocal), "capture");
    for (int i = 0; i < batch; ++i) rotated(i);
    check(cudaStreamEndCapture(g.s, &graph), "capture");
    check(cudaGraphInstantiate(&exec, graph, 0), "graph instantiate");
    auto replay = [&](int) { check(cudaGraphLaunch(exec, g.s), "graph launch"); };
    g.sample(none, 1, replay);  // uploads the graph
    const double t_graph = median_of(samples, [&] { return g.sample(none, 1, replay) / batch; });
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    const double t_hot = median_of(samples, [&] { return g.sample(none, 32, first) / 32; });
    std::printf("%-10s %8.1f | %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f | %.2f, %.2f  (%d copies, %d calls a sample)\n", l.name,
                w_bytes / 1e6, 1e6 * t_w1, 1e6 * t_w2, 1e6 * t_r2, 1e6 * t_rot, 1e6 * t_graph, 1e6 * t_hot,
                w_bytes / t_r2 / 1e12, w_bytes / t_graph / 1e12, copies, batch);
    for (auto p : w) cudaFree(p);
    cudaFree(x);
    cudaFree(y);
  }
  return 0;
}
