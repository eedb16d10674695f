#pragma once
// One weight-only quantized projection on the CPU, y = act(x W^T + b) [+ residual], for layers
// that run their own LayerNorm and attention around it (transformer_block's opmeter_quant): the
// quantized linear kernels (quant_kernel.hpp) over blocks of rows, each block's x made fp32 (and
// bf16 bits for the int4 bf16 dot product) once, the threads splitting the output channels and
// finishing their columns (residual, bias, activation) while they are in cache.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "opmeter/buffer.hpp"
#include "ops/linear/quant_kernel.hpp"
#include "ops/tensor/kernels.hpp"

namespace opmeter::linear {

class QuantProjection {
 public:
  // W quantized by a weight-only recipe; activations and outputs bf16 (else fp32); rows: the
  // calls' rows, which pick int4's kernel and so its layout (int4_path); copies: packed copies of
  // the same weights, one per input set, so that a cold case's calls read them from memory.
  void prepare(const quant::QuantizedWeights& q, bool bf16, std::size_t rows, std::size_t copies);
  // A call of input set `copy`, reading that set's weights. x: rows x in; y, residual (may be
  // null): rows x out, in the activations' type; bias: out fp32.
  void run(std::size_t copy, const void* x, std::size_t rows, const float* bias, tensor::Act act, const void* residual,
           void* y);
  std::size_t copies() const { return weight_copies_.size() + 1; }
  const PackedWeights& packed() const { return packed_; }
  // What a call of this many rows runs (details.kernel).
  std::string kernel(std::size_t rows) const { return weight_only_kernel_name(packed_, call_path(rows)); }

 private:
  // The kernel for this call's rows among those that read the prepared layout (where the limbs
  // kernel reads tiles, as AMX does, either; where it reads blocks, the prepared one).
  Int4Path call_path(std::size_t rows) const {
    return in_tiles(quant_kernels(), path_) ? int4_path(quant_kernels(), bf16_, packed_.group, rows, packed_.hidden)
                                            : path_;
  }
  PackedWeights packed_;                      // copy 0's
  std::vector<PackedWeights> weight_copies_;  // copies 1..: the same values elsewhere in memory
  HeldBytes held_;                            // the copies' bytes, in the case's peak memory
  bool bf16_ = false;
  Int4Path path_ = Int4Path::fp32;
  std::vector<float> xs_, xsum_, tile_;
  XLimbs limb_x_;
};

}  // namespace opmeter::linear
