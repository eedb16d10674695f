#pragma once
// GPU correctness sweeps of opmeter's own CUDA kernels for the tensor ops (activations, norms,
// losses): every dtype of the op's `cuda` impl x hidden sizes that take each kernel shape (one
// lane per row, a warp, a block, the wide two-pass kernel; rows that are and are not 16-byte
// aligned) x row counts (one row, a few, more rows than the grid has blocks). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "opmeter/tensor_op.hpp"
#include "tests/quick_options.hpp"

namespace opmeter::testing {

inline bool gpu_here() {
  auto* p = cuda::plugin();
  return p && p->device(0).ok;
}
inline std::string why_no_gpu() {
  auto* p = cuda::plugin();
  return p ? p->device(0).reason : cuda::load_reason();
}

constexpr std::int64_t kSweepHidden[] = {1, 7, 8, 37, 1024, 4097, 262144};

// batch x seq pairs for a hidden size: one row, a few (111; 3 of rows wider than 2^16, where 111
// were 29 M elements, the sweep's largest case), and enough rows that every block of the grid
// loops (at least 300 rows, 2^22 elements for narrow rows). Rows wider than 2^16 take 32 (2^23
// elements at 262144): 300 of them were 79 M elements a case, whose host-side inputs and fp64
// reference made the sweeps outlast their step.
inline std::vector<std::pair<std::int64_t, std::int64_t>> sweep_rows(std::int64_t hidden) {
  const bool wide = hidden > (std::int64_t{1} << 16);
  const std::int64_t least = wide ? 32 : 300;
  const std::int64_t many = std::max<std::int64_t>(least, (std::int64_t{1} << 22) / hidden);
  const std::int64_t batch = std::min<std::int64_t>(many, 1024);
  const std::pair<std::int64_t, std::int64_t> few = wide ? std::pair{1, 3} : std::pair{3, 37};
  return {{1, 1}, few, {batch, (many + batch - 1) / batch}};
}

// Runs every (dtype, hidden, rows) case of `op`/cuda; each must be ok within its tolerance.
// Returns the results for further checks by the caller (details, determinism).
// many_rows false leaves out the last row count (every block of the grid looping): ops that share
// one kernel shape and differ only in their math (the activations) need it once, not each.
inline std::vector<Result> run_gpu_sweep(const std::string& op, bool many_rows = true) {
  std::vector<Result> out;
  const ImplDef* def = Registry::global().impl(op, "cuda");
  EXPECT_NE(def, nullptr) << op;
  if (!def) return out;
  for (DType d : def->dtypes)
    for (std::int64_t h : kSweepHidden)
      for (auto rows = sweep_rows(h); auto [batch, seq] : rows) {
        if (!many_rows && std::make_pair(batch, seq) == rows.back()) continue;
        auto kase = fmt::format("{}/cuda/{}/batch={},seq={},hidden={}/device=cuda:0", op, to_string(d), batch, seq, h);
        auto r = run_case(parse_case(kase), quick_options(2));
        EXPECT_EQ(r.status, Status::ok) << kase << ": " << r.reason;
        if (r.status == Status::ok) {
          EXPECT_LE(*r.max_error, *r.tolerance) << kase;
          EXPECT_GT(r.gbps, 0) << kase;
        }
        out.push_back(std::move(r));
      }
  return out;
}

// The op's spec's check of an output that is the fp64 reference rounded once to the case's
// storage: a correct kernel can do no better, so the tolerance must accept it (fp16's subnormals
// included). Runs on the CPU.
inline Check check_of_rounded_reference(const std::string& kase) {
  const OpDef* def = Registry::global().op(parse_case(kase).op);
  EXPECT_TRUE(def && def->spec) << kase;
  if (!def || !def->spec) return {};
  auto spec = def->spec();
  auto* op = dynamic_cast<tensor::TensorOp*>(spec.get());
  EXPECT_NE(op, nullptr) << kase;
  if (!op) return {};
  op->bind(parse_case(kase));
  HostTensors in = op->make_inputs(11);
  HostTensor out(op->output());
  std::vector<double> ref(op->out_cols()), mag(op->out_cols());
  for (std::size_t r = 0; r < op->out_rows(); ++r) {
    op->reference_row(in, r, ref.data(), mag.data());
    for (std::size_t c = 0; c < op->out_cols(); ++c) store(out.desc().elem, out.data(), r * op->out_cols() + c, ref[c]);
  }
  return op->check(in, out, 11);
}

}  // namespace opmeter::testing
