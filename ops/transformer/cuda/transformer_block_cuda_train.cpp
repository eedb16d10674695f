// impl `cuda_train` of transformer_block: the training step (mode=train) on CUDA devices, composed
// of opmeter's CUDA pieces as onednn_train composes the CPU's (declared in
// transformer_block_cuda_impls.cpp):
//   forward   LN1 (layernorm_train_kernel: mean and rstd kept) -> qkv = LN1 Wqkv^T + bqkv (cuBLASLt,
//             BIAS epilogue) -> S = scale q k^T (cuBLAS batched over heads, fp32) -> P = softmax(S)
//             (masked_softmax, P kept) -> o = P v (batched) -> h = x + o Wo^T + bo (BIAS epilogue,
//             add kernel) -> LN2 -> u = LN2 W1^T + b1 (BIAS) -> a = act(u) (u kept) ->
//             y = h + a W2^T + b2
//   backward  per projection dA = dZ W and dW = dZ^T A with db from the BGRADB epilogue (cuBLASLt,
//             operands read as stored); act'(u); LayerNorm's backward kernels, the residual's
//             gradient added by the add kernel; attention: dP = do v^T, dv = P^T do (batched),
//             dS = P (dP - rowsum(P dP)) scale (softmax_backward.cu), dq = dS k, dk = dS^T q, all
//             written into dqkv where the QKV projection's backward reads them.
// Output: TrainLayout (y, then every input's gradient); the check is transformer_block's mode=train
// check. phase=backward times the backward from a forward made at setup; every check runs the
// whole step (train_phases.hpp). cuBLASLt's bias has D's type: the fp32 biases are rounded once.
#include <fmt/format.h>

#include <array>
#include <cstdint>

#include "ops/add/cuda/add_kernel.hpp"
#include "ops/attention/cuda/masked_softmax.hpp"
#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/act_backward_kernel.hpp"
#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/linear/cuda/layernorm_train_kernel.hpp"
#include "ops/linear/train_phases.hpp"
#include "ops/transformer/cuda/attention_train_cublas.hpp"
#include "ops/transformer/cuda/softmax_backward.hpp"
#include "ops/transformer/transformer_train.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::transformer {
namespace {
using linear::Phase;
using tensor::Act;

// A section of the output that cuBLASLt or the add kernel writes. cuBLASLt's heuristic assumes
// 256-byte aligned pointers and the add kernel 16-byte ones; a section at an odd offset (small
// shapes) is written into a buffer of its own and copied in.
class OutputSection {
 public:
  void bind(void* final, std::size_t bytes) {
    final_ = final;
    bytes_ = bytes;
    if (reinterpret_cast<std::uintptr_t>(final) % kAlign == 0)
      stage_ = cuda::DeviceBuffer();
    else if (stage_.bytes() != bytes)
      stage_ = cuda::DeviceBuffer(bytes);
  }
  void* where() const { return stage_.bytes() ? stage_.data() : final_; }
  void finish(cudaStream_t s) const {
    if (stage_.bytes())
      cuda::check(cudaMemcpyAsync(final_, stage_.data(), bytes_, cudaMemcpyDeviceToDevice, s), "output section copy");
  }

 private:
  static constexpr std::uintptr_t kAlign = 256;
  void* final_ = nullptr;
  std::size_t bytes_ = 0;
  cuda::DeviceBuffer stage_;
};

// Device bytes of a step beside its inputs and output: what the forward keeps, the backward's
// scratch and the libraries' workspaces (the twelve projections' plans and the batched GEMMs').
double scratch_bytes(const Shape& s, DType d) {
  const double e = double(size_of(d)), r = double(s.rows()), h = double(s.hidden), m = double(s.mlp);
  const double square = double(s.batch * s.heads) * double(s.seq) * double(s.seq);
  const double kept = r * h * e * 7 + r * m * e * 2 + square * e + 4 * r * 4;    // xhat1 qkv(3) o h xhat2, u a, P, stats
  const double scratch = r * h * e * 7 + r * m * e * 2 + square * (4 + e);       // proj dxhat dh do dqkv(3), da du, S/dP dS
  const double ln_partials = double(linear::layernorm_backward_workspace_bytes(static_cast<std::int64_t>(s.rows()),
                                                                              static_cast<std::int64_t>(s.hidden)));
  return kept + scratch + ln_partials + 13.0 * double(gemm::kWorkspaceBytes);
}

class CudaTrainBlock : public linear::TrainPhases<cuda::DeviceImpl<TransformerBlockOp>> {
 public:
  std::map<std::string, std::string> details() const override {
    std::map<std::string, std::string> d{
        {"forward", "LN1 kernel, QKV cuBLASLt+BIAS, S = scale q k^T (cuBLAS batched, fp32), masked softmax (P kept), "
                    "o = P v (batched), Wo cuBLASLt+BIAS, add, LN2 kernel, W1 cuBLASLt+BIAS, act kernel, W2 cuBLASLt+BIAS, add"},
        {"backward", "per projection dA = dZ W and dW = dZ^T A with db from BGRADB (cuBLASLt); act' kernel; LayerNorm "
                     "backward kernels + add; dP = do v^T, dv = P^T do, dS kernel, dq = dS k, dk = dS^T q (cuBLAS batched)"},
        {"biases", fmt::format("rounded to {} once (cuBLASLt's bias has D's type)", to_string(case_.dtype))}};
    for (std::size_t i = 0; i < gemms_.size(); ++i)
      if (gemms_[i].planned()) d[std::string(kGemmNames[i]) + "_algo"] = gemms_[i].details().at("algo");
    return d;
  }

 private:
  enum Gemm { qkv_fwd, o_fwd, w1_fwd, w2_fwd, w2_data, w2_weights, w1_data, w1_weights, o_data, o_weights, qkv_data,
              qkv_weights, kGemms };
  static constexpr std::array<const char*, kGemms> kGemmNames = {
      "qkv", "wo", "w1", "w2", "w2_dgrad", "w2_wgrad", "w1_dgrad", "w1_wgrad", "wo_dgrad", "wo_wgrad", "qkv_dgrad",
      "qkv_wgrad"};
  // Sections written by cuBLASLt or the add kernel, in TrainLayout's terms.
  enum Section { y_sec, dx_sec, dwqkv_sec, dbqkv_sec, dwo_sec, dbo_sec, dw1_sec, db1_sec, dw2_sec, db2_sec, kSections };

  void prepare() override {
    s_ = shape_of(case_);
    const bool first = !gemms_[qkv_fwd].planned();
    if (first) {
      allocate();
      bind_sections();
    }
    // Fresh inputs before each check: the biases rounded again; plans and buffers stay.
    convert_bias(kBqkv, bqkv_, 3 * s_.hidden);
    convert_bias(kBo, bo_, s_.hidden);
    convert_bias(kB1, b1_, s_.mlp);
    convert_bias(kB2, b2_, s_.hidden);
    if (first) {
      attention_.prepare(stream());
      plan();
    }
    if (backward_alone()) forward();  // what the timed backward reads
  }

  void launch() override {
    const Phase p = phase_now();
    if (p != Phase::backward) forward();
    if (p != Phase::forward) backward();
  }

  // ---- buffers
  std::size_t elem() const { return size_of(case_.dtype); }
  void allocate() {
    const std::size_t e = elem(), r = s_.rows(), h = s_.hidden, m = s_.mlp;
    const std::size_t square = s_.batch * s_.heads * s_.seq * s_.seq;
    for (auto* b : {&xhat1_, &o_, &h_, &xhat2_, &proj_, &dxhat_, &dh_, &dout_}) *b = cuda::DeviceBuffer(r * h * e);
    for (auto* b : {&qkv_, &dqkv_}) *b = cuda::DeviceBuffer(3 * r * h * e);
    for (auto* b : {&mean1_, &rstd1_, &mean2_, &rstd2_}) *b = cuda::DeviceBuffer(r * sizeof(float));
    ln_work_ = cuda::DeviceBuffer(linear::layernorm_backward_workspace_bytes(static_cast<std::int64_t>(r),
                                                                            static_cast<std::int64_t>(h)));
    u_ = cuda::DeviceBuffer(r * m * e);
    da_ = cuda::DeviceBuffer(r * m * e);
    if (has_act()) {
      a_ = cuda::DeviceBuffer(r * m * e);
      du_ = cuda::DeviceBuffer(r * m * e);
    }
    probs_ = cuda::DeviceBuffer(square * e);
    dscores_ = cuda::DeviceBuffer(square * e);
    scores_ = cuda::DeviceBuffer(square * sizeof(float));
    bqkv_ = cuda::DeviceBuffer(3 * h * e);
    bo_ = cuda::DeviceBuffer(h * e);
    b1_ = cuda::DeviceBuffer(m * e);
    b2_ = cuda::DeviceBuffer(h * e);
    // The plans time their candidates on these: zeros, not whatever the allocator left.
    for (auto* b : {&xhat1_, &o_, &h_, &xhat2_, &proj_, &dxhat_, &dh_, &dout_, &qkv_, &dqkv_, &u_, &da_, &a_, &du_})
      if (b->bytes()) cuda::fill(b->data(), 0, b->bytes(), stream());
  }

  void bind_sections() {
    const TrainLayout l = train_layout(s_);
    const auto counts = input_counts(s_);
    const std::size_t e = elem();
    auto bind = [&](Section sec, std::size_t offset, std::size_t count) {
      sections_[sec].bind(static_cast<char*>(out()) + offset * e, count * e);
    };
    bind(y_sec, l.y, s_.rows() * s_.hidden);
    const std::pair<Section, std::size_t> grads[] = {{dx_sec, kX},     {dwqkv_sec, kWqkv}, {dbqkv_sec, kBqkv},
                                                     {dwo_sec, kWo},   {dbo_sec, kBo},     {dw1_sec, kW1},
                                                     {db1_sec, kB1},   {dw2_sec, kW2},     {db2_sec, kB2}};
    for (auto [sec, input] : grads) bind(sec, l.grad[input], counts[input]);
  }
  void* sec(Section s) const { return sections_[s].where(); }
  void* grad(std::size_t input) const {  // a section written by a scalar kernel (any alignment)
    return static_cast<char*>(out()) + train_layout(s_).grad[input] * elem();
  }
  void finish(std::initializer_list<Section> which) {
    for (Section s : which) sections_[s].finish(stream());
  }

  void convert_bias(std::size_t input, const cuda::DeviceBuffer& dst, std::size_t n) {
    linear::launch_bias_convert(case_.dtype, static_cast<const float*>(in(input)), dst.data(),
                                static_cast<std::int64_t>(n), stream());
    cuda::check(cudaGetLastError(), "bias conversion kernel");
  }

  bool has_act() const { return s_.act != Act::none; }
  void* activated() const { return has_act() ? a_.data() : u_.data(); }
  void* du() const { return has_act() ? du_.data() : da_.data(); }

  // ---- plans
  void plan() {
    const std::uint64_t r = s_.rows(), h = s_.hidden, m = s_.mlp;
    const DType dt = case_.dtype;
    auto forward = [&](Gemm g, std::uint64_t n, std::uint64_t k, const void* bias, const void* a, const void* w, void* d) {
      gemms_[g].plan({.dtype = dt, .M = r, .N = n, .K = k, .epilogue = CUBLASLT_EPILOGUE_BIAS, .bias = bias}, a, w, d,
                     stream());
    };
    // dA = dZ W: W (out x in) read as stored, K = out.
    auto data = [&](Gemm g, std::uint64_t n, std::uint64_t k, const void* dz, const void* w, void* da) {
      gemms_[g].plan({.dtype = dt, .M = r, .N = n, .K = k, .b_transposed = true}, dz, w, da, stream());
    };
    // dW = dZ^T A (out x in) and db = the sum of dZ over rows (BGRADB), both read as stored.
    auto weights = [&](Gemm g, std::uint64_t out, std::uint64_t in, void* db, const void* dz, const void* a, void* dw) {
      gemms_[g].plan({.dtype = dt,
                      .M = out,
                      .N = in,
                      .K = r,
                      .epilogue = CUBLASLT_EPILOGUE_BGRADB,
                      .bias = db,
                      .a_transposed = true,
                      .b_transposed = true},
                     dz, a, dw, stream());
    };
    forward(qkv_fwd, 3 * h, h, bqkv_.data(), xhat1_.data(), in(kWqkv), qkv_.data());
    forward(o_fwd, h, h, bo_.data(), o_.data(), in(kWo), proj_.data());
    forward(w1_fwd, m, h, b1_.data(), xhat2_.data(), in(kW1), u_.data());
    forward(w2_fwd, h, m, b2_.data(), activated(), in(kW2), proj_.data());
    data(w2_data, m, h, in(kDy), in(kW2), da_.data());
    weights(w2_weights, h, m, sec(db2_sec), in(kDy), activated(), sec(dw2_sec));
    data(w1_data, h, m, du(), in(kW1), dxhat_.data());
    weights(w1_weights, m, h, sec(db1_sec), du(), xhat2_.data(), sec(dw1_sec));
    data(o_data, h, h, dh_.data(), in(kWo), dout_.data());
    weights(o_weights, h, h, sec(dbo_sec), dh_.data(), o_.data(), sec(dwo_sec));
    data(qkv_data, h, 3 * h, dqkv_.data(), in(kWqkv), dxhat_.data());
    weights(qkv_weights, 3 * h, h, sec(dbqkv_sec), dqkv_.data(), xhat1_.data(), sec(dwqkv_sec));
  }

  // ---- the step
  linear::LayerNormTrain ln(const void* x, std::size_t gamma, std::size_t beta, const cuda::DeviceBuffer& mean,
                            const cuda::DeviceBuffer& rstd) const {
    return {.x = x,
            .gamma = static_cast<const float*>(in(gamma)),
            .beta = static_cast<const float*>(in(beta)),
            .mean = static_cast<float*>(mean.data()),
            .rstd = static_cast<float*>(rstd.data()),
            .rows = static_cast<std::int64_t>(s_.rows()),
            .hidden = static_cast<std::int64_t>(s_.hidden)};
  }
  AttnDims dims() const {
    return {.batch = static_cast<std::int64_t>(s_.batch),
            .seq = static_cast<std::int64_t>(s_.seq),
            .heads = static_cast<std::int64_t>(s_.heads),
            .head_dim = static_cast<std::int64_t>(s_.head_dim()),
            .scale = s_.scale()};
  }
  AttnPointers attn_pointers() const {
    return {.qkv = qkv_.data(),
            .o = o_.data(),
            .dout = dout_.data(),
            .scores = static_cast<float*>(scores_.data()),
            .probs = probs_.data(),
            .dscores = dscores_.data(),
            .dqkv = dqkv_.data()};
  }
  std::int64_t score_rows() const { return static_cast<std::int64_t>(s_.batch * s_.heads * s_.seq); }
  std::int64_t rh() const { return static_cast<std::int64_t>(s_.rows() * s_.hidden); }
  std::int64_t rm() const { return static_cast<std::int64_t>(s_.rows() * s_.mlp); }
  void run(Gemm g, const void* a, const void* b, void* d) { gemms_[g].run(a, b, d, stream()); }

  void forward() {
    const DType dt = case_.dtype;
    const int n = static_cast<int>(s_.seq);
    linear::launch_layernorm_forward(dt, ln(in(kX), kLn1Gamma, kLn1Beta, mean1_, rstd1_), xhat1_.data(), stream());
    run(qkv_fwd, xhat1_.data(), in(kWqkv), qkv_.data());
    attention_.run(AttnStep::scores, dims(), dt, attn_pointers());
    attention::launch_masked_softmax(dt, static_cast<const float*>(scores_.data()), probs_.data(), score_rows(), n,
                                     s_.causal, stream());
    attention_.run(AttnStep::out, dims(), dt, attn_pointers());
    run(o_fwd, o_.data(), in(kWo), proj_.data());
    add::launch_add(dt, in(kX), proj_.data(), h_.data(), rh(), stream());
    linear::launch_layernorm_forward(dt, ln(h_.data(), kLn2Gamma, kLn2Beta, mean2_, rstd2_), xhat2_.data(), stream());
    run(w1_fwd, xhat2_.data(), in(kW1), u_.data());
    if (has_act()) linear::launch_act_forward(dt, s_.act, u_.data(), a_.data(), rm(), stream());
    run(w2_fwd, activated(), in(kW2), proj_.data());
    add::launch_add(dt, h_.data(), proj_.data(), sec(y_sec), rh(), stream());
    finish({y_sec});
  }

  void backward() {
    const DType dt = case_.dtype;
    const void* dy = in(kDy);
    // MLP: dW2, db2, da = dy W2; du = da act'(u); dW1, db1, dxhat2 = du W1.
    run(w2_weights, dy, activated(), sec(dw2_sec));
    run(w2_data, dy, in(kW2), da_.data());
    if (has_act()) linear::launch_act_backward(dt, s_.act, da_.data(), u_.data(), du_.data(), rm(), stream());
    run(w1_weights, du(), xhat2_.data(), sec(dw1_sec));
    run(w1_data, du(), in(kW1), dxhat_.data());
    // dh = dy + LN2'(dxhat2) (LayerNorm's dx into proj_).
    linear::launch_layernorm_backward(dt, ln(h_.data(), kLn2Gamma, kLn2Beta, mean2_, rstd2_), dxhat_.data(),
                                      proj_.data(), grad(kLn2Gamma), grad(kLn2Beta), ln_work_.data(), stream());
    add::launch_add(dt, proj_.data(), dy, dh_.data(), rh(), stream());
    // Attention: dWo, dbo, do = dh Wo; dP, dv, dS, dq, dk into dqkv; dWqkv, dbqkv, dxhat1 = dqkv Wqkv.
    run(o_weights, dh_.data(), o_.data(), sec(dwo_sec));
    run(o_data, dh_.data(), in(kWo), dout_.data());
    attention_.run(AttnStep::dprobs, dims(), dt, attn_pointers());
    attention_.run(AttnStep::dv, dims(), dt, attn_pointers());
    launch_softmax_backward(dt, probs_.data(), static_cast<const float*>(scores_.data()), dscores_.data(), score_rows(),
                            static_cast<int>(s_.seq), s_.causal, s_.scale(), stream());
    attention_.run(AttnStep::dq, dims(), dt, attn_pointers());
    attention_.run(AttnStep::dk, dims(), dt, attn_pointers());
    run(qkv_weights, dqkv_.data(), xhat1_.data(), sec(dwqkv_sec));
    run(qkv_data, dqkv_.data(), in(kWqkv), dxhat_.data());
    // dx = dh + LN1'(dxhat1).
    linear::launch_layernorm_backward(dt, ln(in(kX), kLn1Gamma, kLn1Beta, mean1_, rstd1_), dxhat_.data(),
                                      proj_.data(), grad(kLn1Gamma), grad(kLn1Beta), ln_work_.data(), stream());
    add::launch_add(dt, dh_.data(), proj_.data(), sec(dx_sec), rh(), stream());
    finish({dx_sec, dwqkv_sec, dbqkv_sec, dwo_sec, dbo_sec, dw1_sec, db1_sec, dw2_sec, db2_sec});
  }

  Shape s_{};
  std::array<gemm::LtMatmul, kGemms> gemms_;
  AttentionTrainCublas attention_;
  std::array<OutputSection, kSections> sections_;
  // Kept by the forward for the backward: LN1(x) and its statistics, qkv, P, o (heads merged),
  // h, LN2(h) and its statistics, u, act(u).
  cuda::DeviceBuffer xhat1_, mean1_, rstd1_, qkv_, probs_, o_, h_, xhat2_, mean2_, rstd2_, u_, a_;
  // Scratch: S then dP (fp32), dS; a projection's output before its residual add, then
  // LayerNorm's dx before the residual's gradient; the backward's intermediates.
  cuda::DeviceBuffer scores_, dscores_, proj_, da_, du_, dxhat_, dh_, dout_, dqkv_;
  cuda::DeviceBuffer bqkv_, bo_, b1_, b2_;  // biases in the case's dtype
  cuda::DeviceBuffer ln_work_;              // LayerNorm backward's partial sums (both LayerNorms, in turn)
};

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1u << 30)); }

Support device_supports(const Case& c, const cuda::DeviceProps& p) {
  if (auto own = cuda::own_kernels_run_on(p); !own.ok) return own;
  if (auto lt = gemm::dtype_support(c.dtype, p, true); !lt.ok) return lt;
  TransformerBlockOp spec;
  spec.bind(c);
  double need = double(spec.output().bytes()) + scratch_bytes(shape_of(c), c.dtype);
  for (const auto& t : spec.inputs()) need += double(t.bytes());
  cuda::check(cudaSetDevice(c.device_index()), "cudaSetDevice");
  std::size_t free = 0, total = 0;
  cuda::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  if (need > 0.9 * double(free))
    return Support::no(fmt::format("needs {} of device memory (S, P and dS are seq x seq per head), {} free on {}",
                                   gib(need), gib(double(free)), p.prop.name));
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in transformer_block_cuda_impls.cpp.
cuda::Factory cuda_train_factory() {
  return {
      .supports = device_supports,
      .make = [] { return std::make_unique<CudaTrainBlock>(); },
  };
}

}  // namespace opmeter::transformer
