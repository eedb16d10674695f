#pragma once
// One linear layer through the weight-only kernel (quant_weight_only_sm80.cu): the recipe's
// quantized weight packed (gpu_pack) and uploaded once, the row tiling and split-K planned for a
// number of rows, and y = act(x W^T + b) enqueued. Shared by every CUDA impl that runs weight-only
// recipes (linear cuda_quant, transformer_block cuda_quant).
#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <string>

#include "ops/linear/cuda/quant_kernels.hpp"
#include "ops/linear/quant/quantize.hpp"
#include "ops/linear/quant_gpu_pack.hpp"
#include "opmeter/cuda/device.hpp"
#include "opmeter/op.hpp"

namespace opmeter::linear::quant_cuda {

class WeightOnlyLinear {
 public:
  // Packs and uploads q (scales of int4 groups in scale_elem, the activations' 16-bit type) in the
  // layout for `rows` rows of x (gpu_pack::weight_operand: `asked`, else the kernel's choice), the
  // rows plan takes.
  void load(const quant::Recipe& r, const quant::QuantizedWeights& q, Elem scale_elem, std::size_t rows, cudaStream_t s,
            std::optional<gpu_pack::Operand> asked = std::nullopt);
  // A layer holding the same packed weight, copied on the device on `s` (no packing again), to be
  // planned: another input set of a cold case in graph mode.
  WeightOnlyLinear copy_weights(cudaStream_t s) const;
  // Row tiles and split-K for `rows` rows of x on a GPU of `sms` multiprocessors (after load):
  // `ksplit` splits of K where given (weight_only_split_support says which fit), else the kernel's
  // choice.
  void plan(std::size_t rows, int sms, int ksplit = 0);
  // y = act(x W^T + bias) for the planned rows, x and y in d; bias fp32 (out floats).
  void launch(DType d, const void* x, const float* bias, tensor::Act act, void* y, cudaStream_t s) const;
  // What launch runs, for details(); the device bytes of the weight (codes and scales).
  std::string kernel() const;
  std::size_t weight_bytes() const { return weight_bytes_; }

 private:
  quant::Recipe recipe_;
  gpu_pack::Layout layout_;
  std::size_t rows_ = 0, weight_bytes_ = 0;
  int tile_rows_ = 16, ksplit_ = 1;
  cuda::DeviceBuffer codes_, scales_, partial_, counters_;  // scales: channel floats or int4 group words
};

// Whether this GPU runs the weight-only kernel for `r` on `rows` rows ("" when it does: the
// reason otherwise).
Support weight_only_device_support(const quant::Recipe& r, std::size_t rows, const cuda::DeviceProps& p);
// Whether the weights fit the `asked` mma operand for `rows` rows (gpu_pack::operand_problem).
Support weight_only_operand_support(const quant::Recipe& r, std::size_t rows, gpu_pack::Operand asked);
// Whether `ksplit` splits of K fit a layer of `hidden` x `out` on `rows` rows: every split gets a
// chunk of K, and the partials stay within their budget.
Support weight_only_split_support(const quant::Recipe& r, std::size_t rows, std::size_t hidden, std::size_t out,
                                  int ksplit);

}  // namespace opmeter::linear::quant_cuda
