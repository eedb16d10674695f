// The AMX bf16 GEMM (ops/tensor/amx_gemm.hpp) against oneDNN's bf16 matmul on the same operands
// as stored (A m x k and B k x n row-major, C bf16), in one process: each is the best of `reps`
// runs on the threads given (OMP_NUM_THREADS); the AMX peak is 1024 FLOP per cycle per core.
// Outputs are compared (largest difference, relative to C's largest element). Beside them, the
// training step's oneDNN paths for dX and dW (tensor::ProjectionBackward without the AMX GEMM).
// Operands are page-aligned: a tile row across two cache lines takes two loads.
//   build/bench/amx_gemm [M K N reps]   (default the training step's dX at 512 x 4096 x 4096: 512 4096 4096 20)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/bench_util.hpp"
#include "opmeter/buffer.hpp"
#include "opmeter/dtype.hpp"
#include "ops/tensor/amx_gemm.hpp"
#include "ops/tensor/onednn_util.hpp"
#include "ops/tensor/onednn_pack.hpp"
#include "ops/tensor/projection_backward.hpp"

using namespace opmeter;

// bf16 elements in a page-aligned Buffer (a std::vector's large blocks start 16 bytes into a
// page, which puts every 64-byte row of a tile across two cache lines).
struct Bf16s {
  explicit Bf16s(std::size_t n) : buffer(n * 2), count(n) {}
  std::uint16_t* data() { return buffer.as<std::uint16_t>(); }
  std::uint16_t& operator[](std::size_t i) { return data()[i]; }
  std::uint16_t* begin() { return data(); }
  std::uint16_t* end() { return data() + count; }
  Buffer buffer;
  std::size_t count;
};



int main(int argc, char** argv) {
  const std::size_t m = positive_arg("amx_gemm", argc, argv, 1, "M", 512), k = positive_arg("amx_gemm", argc, argv, 2, "K", 4096),
                    n = positive_arg("amx_gemm", argc, argv, 3, "N", 4096), reps = positive_arg("amx_gemm", argc, argv, 4, "reps", 20);
  if (argc > 5) {
    std::fprintf(stderr, "usage: amx_gemm [M K N reps]\n");
    return 2;
  }
  if (m % 32 || k % 32 || n % 32) {
    std::fprintf(stderr, "amx_gemm: M, K and N must be multiples of 32 (M=%zu, K=%zu, N=%zu)\n", m, k, n);
    return 2;
  }
  if (!tensor::amx_gemm_fits(m, k, n)) {
    std::fprintf(stderr, "amx_gemm: this CPU has no AMX-BF16, or Linux did not grant this process the tiles\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  Bf16s a(m * k), b(k * n), ours(m * n), theirs(m * n);
  for (auto& v : a) v = to_bf16(dist(rng));
  for (auto& v : b) v = to_bf16(dist(rng));

  using tag = dnnl::memory::format_tag;
  const auto t = dnnl::memory::data_type::bf16;
  const auto M = dnnl::memory::dim(m), K = dnnl::memory::dim(k), N = dnnl::memory::dim(n);
  const dnnl::memory::desc a_md({M, K}, t, tag::ab), b_md({K, N}, t, tag::ab), c_md({M, N}, t, tag::ab);
  auto pd = tensor::onednn_matmul(a_md, b_md, nullptr, c_md);
  dnnl::matmul mm(pd);
  auto onednn = [&] {
    mm.execute(tensor::onednn_stream(), {{DNNL_ARG_SRC, tensor::onednn_memory(a_md, a.data())},
                                         {DNNL_ARG_WEIGHTS, tensor::onednn_memory(b_md, b.data())},
                                         {DNNL_ARG_DST, tensor::onednn_memory(c_md, theirs.data())}});
    tensor::onednn_stream().wait();
  };
  Bf16s a_tiles(m * k), b_tiles(k * n);  // b_tiles: B's panels once, past 512 rows (as the step does)
  auto amx = [&] {
    tensor::amx_gemm_bf16(a.data(), k, b.data(), n, ours.data(), n, m, k, n, a_tiles.data(), {.b_tiles = b_tiles.data()});
  };
  auto amx_streaming = [&] {
    tensor::amx_gemm_bf16(a.data(), k, b.data(), n, ours.data(), n, m, k, n, a_tiles.data(),
                          {.store = tensor::Store::streaming, .b_tiles = b_tiles.data()});
  };
  // The training step's oneDNN paths (tensor::ProjectionBackward without the AMX GEMM): C as
  // dX = dZ W (A = dZ, B = W) and as dW = dZ^T X (A = dZ^T, B = X), the layouts it gets in a step.
  Bf16s at(k * m), step(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < k; ++j) at[j * m + i] = a[i * k + j];
  tensor::ProjectionBackward as_dx, as_dw, amx_as_dw;
  as_dx.prepare(m, n, k, DType::bf16, false);
  as_dw.prepare(k, n, m, DType::bf16, false);
  amx_as_dw.prepare(k, n, m, DType::bf16, true);
  auto step_dx = [&] { as_dx.data(a.data(), b.data(), step.data()); };
  auto step_dw = [&] { as_dw.weights(at.data(), b.data(), step.data()); };
  auto amx_step_dw = [&] { amx_as_dw.weights(at.data(), b.data(), step.data()); };
  Bf16s packed(k * n);
  auto pack = [&] { tensor::pack_amx_bf16(b.data(), packed.data(), k, n); };
  // dX as the forward's fast case: B transposed per call (a reorder to ba), then src x (B^T)^T.
  Bf16s bt(k * n);
  const dnnl::memory::desc bt_md({K, N}, t, tag::ba);
  auto tpd = tensor::onednn_matmul(a_md, bt_md, nullptr, c_md);
  dnnl::matmul mm_t(tpd);
  dnnl::reorder transpose_b(dnnl::reorder::primitive_desc(tensor::onednn_engine(), b_md, tensor::onednn_engine(), bt_md));
  auto tr = [&] {
    transpose_b.execute(tensor::onednn_stream(), {{DNNL_ARG_FROM, tensor::onednn_memory(b_md, b.data())},
                                                  {DNNL_ARG_TO, tensor::onednn_memory(bt_md, bt.data())}});
    tensor::onednn_stream().wait();
  };
  auto on_t = [&] {
    mm_t.execute(tensor::onednn_stream(), {{DNNL_ARG_SRC, tensor::onednn_memory(a_md, a.data())},
                                           {DNNL_ARG_WEIGHTS, tensor::onednn_memory(bt_md, bt.data())},
                                           {DNNL_ARG_DST, tensor::onednn_memory(c_md, theirs.data())}});
    tensor::onednn_stream().wait();
  };
  // The forward's case on the AMX GEMM: B^T as stored (a weight, n x k), packed by transposes.
  auto amx_t = [&] {
    tensor::amx_gemm_bf16(a.data(), k, bt.data(), k, ours.data(), n, m, k, n, a_tiles.data(),
                          {.b = tensor::BLayout::n_by_k, .b_tiles = b_tiles.data()});
  };
  // Every timed path's C against oneDNN's matmul on the operands as stored, relative to C's largest
  // element (single elements near zero would make any per-element ratio meaningless).
  std::printf("M %zu K %zu N %zu, %d threads, oneDNN %s\n", m, k, n, omp_get_max_threads(), pd.impl_info_str());
  onednn();
  double largest = 0;
  for (std::size_t i = 0; i < m * n; ++i) largest = std::max(largest, double(std::fabs(from_bf16(theirs[i]))));
  Bf16s reference(m * n);
  std::copy(theirs.begin(), theirs.end(), reference.begin());
  auto worst = [&](Bf16s& c) {
    double w = 0;
    for (std::size_t i = 0; i < m * n; ++i) w = std::max(w, std::fabs(double(from_bf16(c[i])) - from_bf16(reference[i])));
    return w / largest;
  };
  amx();
  std::printf("difference from oneDNN's C, of C's largest element (bf16 rounds at 2^-8 = %.3g):\n  amx_gemm %.3g", 0x1p-8,
              worst(ours));
  amx_streaming();
  std::printf(", streaming %.3g", worst(ours));
  tr();
  on_t();
  std::printf(", oneDNN on B^T %.3g", worst(theirs));
  amx_t();
  std::printf(", amx_gemm on B^T %.3g", worst(ours));
  step_dx();
  std::printf(", oneDNN as dX %.3g", worst(step));
  step_dw();
  std::printf(", oneDNN as dW %.3g", worst(step));
  amx_step_dw();
  std::printf(", amx_gemm as dW %.3g\n", worst(step));
  const double flop = 2.0 * double(m) * k * n;
  // Interleaved rounds: a noisy minute disturbs all of them.
  double t_onednn = 1e30, t_amx = 1e30, t_amx_s = 1e30, t_amx_dw = 1e30, t_dx = 1e30, t_dw = 1e30, t_tr = 1e30, t_ont = 1e30, t_pack = 1e30, t_amx_t = 1e30;
  for (int round = 0; round < 3; ++round) {
    t_onednn = std::min(t_onednn, best_of(reps, onednn));
    t_amx = std::min(t_amx, best_of(reps, amx));
    t_amx_s = std::min(t_amx_s, best_of(reps, amx_streaming));
    t_dx = std::min(t_dx, best_of(reps, step_dx));
    t_pack = std::min(t_pack, best_of(reps, pack));
    t_dw = std::min(t_dw, best_of(reps, step_dw));
    t_amx_dw = std::min(t_amx_dw, best_of(reps, amx_step_dw));
    t_tr = std::min(t_tr, best_of(reps, tr));
    t_ont = std::min(t_ont, best_of(reps, on_t));
    t_amx_t = std::min(t_amx_t, best_of(reps, amx_t));
  }
  auto line = [&](const char* what, double s, const char* note) {
    std::printf("%-15s %9.3f ms  %8.1f GFLOP/s  %.2fx amx_gemm's time  %s\n", what, s * 1e3, flop / s * 1e-9, s / t_amx, note);
  };
  line("amx_gemm", t_amx, "(C written with cached stores: dX)");
  line("amx_gemm", t_amx_s, "(C written with streaming stores: dW)");
  line("oneDNN matmul", t_onednn, "(A and B as stored)");
  line("oneDNN on B^T", t_ont, "(B given transposed, the forward's layout; the transpose not counted)");
  std::printf("  transposing B  %9.3f ms\n", t_tr * 1e3);
  line("amx_gemm on B^T", t_amx_t, "(the same B^T as stored: a weight in the forward, packed by transposes)");
  line("oneDNN as dX", t_dx, "(the step's oneDNN path: W packed per call, slabs)");
  std::printf("  of which pack  %9.3f ms\n", t_pack * 1e3);
  line("oneDNN as dW", t_dw, "(the step's oneDNN path: dZ and X transposed per call; as dW, A is dZ^T)");
  line("amx_gemm as dW", t_amx_dw, "(the step's AMX path: dZ transposed per call, streaming stores; as dW, A is dZ^T)");
}
