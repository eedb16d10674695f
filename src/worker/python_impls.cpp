// The Python worker's impls (worker/opmeter_worker.py): PyTorch eager, torch.compile in two modes
// and our Triton kernels, for every op with a spec. They are measured only when named (each starts
// the worker); the worker answers for itself which op, dtype and device it can run.
#include <set>

#include "opmeter/registry.hpp"
#include "worker/worker_impl.hpp"

namespace opmeter::worker {
namespace {

// Ops our Triton kernels (worker/triton_kernels.py) compute.
const std::set<std::string> kTritonOps = {"relu",      "relu6",   "leaky_relu", "gelu",    "gelu_tanh",     "silu",
                                          "sigmoid",   "hardswish", "add",      "layernorm", "rmsnorm",     "softmax",
                                          "cross_entropy", "gemm", "linear"};

std::vector<DType> worker_dtypes(const std::string& op) {
  if (op == "gemm") return {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::int8};
  return {DType::fp32, DType::fp16, DType::bf16};
}

ImplDef worker_impl(const std::string& op, std::string impl, std::string summary, std::vector<std::string> backends) {
  return ImplDef{
      .op = op,
      .impl = std::move(impl),
      .backends = std::move(backends),
      .summary = std::move(summary),
      .dtypes = worker_dtypes(op),
      .make = [] { return std::make_unique<WorkerImpl>(); },
      .on_request = true,
  };
}

const LateImplRegistrar reg([] {
  std::vector<ImplDef> out;
  for (const OpDef* op : Registry::global().ops()) {
    if (!op->spec) continue;
    // The torch forms take the op's optional parameters: linear's training steps (mode, phase,
    // quant=float8dq-* and the float8 knobs) run through autograd (worker/torch_training.py).
    std::vector<std::string> optional;
    for (auto& p : op->optional_params) optional.push_back(p.key);
    for (auto [impl, summary] : {std::pair{"torch", "PyTorch eager, in the Python worker"},
                                 {"torch_compile", "torch.compile (default mode), in the Python worker"},
                                 {"torch_compile_max", "torch.compile(mode=\"max-autotune-no-cudagraphs\"): autotuned, no CUDA graphs of its own, in the Python worker"}}) {
      out.push_back(worker_impl(op->name, impl, summary, {"cpu", "cuda"}));
      out.back().accepts = optional;
    }
    if (kTritonOps.count(op->name)) out.push_back(worker_impl(op->name, "triton", "opmeter's Triton kernel, in the Python worker", {"cuda"}));
  }
  return out;
});

}  // namespace
}  // namespace opmeter::worker
