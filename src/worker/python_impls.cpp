// The Python worker's impls (worker/opmeter_worker.py): PyTorch eager, torch.compile in two modes
// and with backend aot_eager, and our Triton kernels, for every op with a spec; for ops that take a
// `quant` recipe, PyTorch's own quantized kernels and torchao (worker/torch_quant.py). They are measured only when named (each starts
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

// Whether the op takes a quantization recipe (OpDef::optional_params names `quant`).
bool takes_quant(const OpDef& op) {
  for (const auto& p : op.optional_params)
    if (p.key == "quant") return true;
  return false;
}

ImplDef worker_impl(const std::string& op, std::string impl, std::string summary, std::vector<std::string> backends,
                    std::vector<std::string> needs = {}) {
  return ImplDef{
      .op = op,
      .impl = std::move(impl),
      .backends = std::move(backends),
      .summary = std::move(summary),
      .dtypes = worker_dtypes(op),
      .make = [] { return std::make_unique<WorkerImpl>(); },
      .on_request = true,
      .needs = std::move(needs),
  };
}

const LateImplRegistrar reg([] {
  std::vector<ImplDef> out;
  for (const OpDef* op : Registry::global().ops()) {
    if (!op->spec) continue;
    out.push_back(worker_impl(op->name, "torch", "PyTorch eager, in the Python worker", {"cpu", "cuda"}));
    out.push_back(worker_impl(op->name, "torch_compile", "torch.compile (default mode), in the Python worker", {"cpu", "cuda"}));
    out.push_back(worker_impl(op->name, "torch_compile_max", "torch.compile(mode=\"max-autotune-no-cudagraphs\"): autotuned, no CUDA graphs of its own, in the Python worker",
                              {"cpu", "cuda"}));
    out.push_back(worker_impl(op->name, "torch_compile_aot_eager", "torch.compile(backend=\"aot_eager\"): traced, no Inductor codegen, in the Python worker",
                              {"cpu", "cuda"}));
    if (takes_quant(*op)) {
      out.push_back(worker_impl(op->name, "torch_quant", "PyTorch's own quantized kernels (_weight_int8pack_mm, tinygemm, _int_mm, _scaled_mm), in the Python worker",
                                {"cpu", "cuda"}, {"quant"}));
      out.push_back(worker_impl(op->name, "torchao", "torchao's quantize_ with the recipe's config, in the Python worker", {"cpu", "cuda"}, {"quant"}));
    }
    if (kTritonOps.count(op->name)) out.push_back(worker_impl(op->name, "triton", "opmeter's Triton kernel, in the Python worker", {"cuda"}));
  }
  return out;
});

}  // namespace
}  // namespace opmeter::worker
