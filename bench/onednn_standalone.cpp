// The least program that times oneDNN's fp32 matmul: primitive made once, inputs random, a
// warm-up, then N timed executions; prints the median GFLOP/s. opmeter's onednn GEMM is
// compared with it (docs/BENCHMARKS.md).
// usage: onednn_standalone [size=2048] [iterations=50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2048;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 50;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  dnnl::memory::desc md({n, n}, dt::f32, tag::ab);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&a, &b})
    for (auto& x : *v) x = u(rng);
  dnnl::memory A(md, eng, a.data()), B(md, eng, b.data()), C(md, eng, c.data());
  dnnl::matmul mm(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), eng));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_DST, C}};
  for (int i = 0; i < 3; ++i) mm.execute(strm, args), strm.wait();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    mm.execute(strm, args);
    strm.wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  double med = t[t.size() / 2];
  std::printf("onednn_standalone fp32 %ld^3: median %.3f ms, %.1f GFLOP/s\n", n, med * 1e3, 2.0 * n * n * n / med * 1e-9);
}
