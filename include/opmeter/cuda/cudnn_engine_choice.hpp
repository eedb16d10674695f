#pragma once
// Which of the engines cuDNN's heuristics propose opmeter may take for a graph: a pure decision
// over an engine's numerical notes (CUDNN_ATTR_ENGINE_NUMERICAL_NOTE), kept free of cuDNN's
// headers so the tests can check it without cuDNN or a GPU.
//
// fp32: cuDNN runs fp32 graphs on tensor cores (TF32, 10-bit mantissa inputs) by default on sm_80+,
// and may down-convert inputs or reduce in less than fp32. An `fp32` result must be fp32 (the
// `torch` baseline turns TF32 off, and opmeter's fp32 tolerance would fail TF32), so such engines
// are refused, as PyTorch's cuDNN v8 path does with allow_tf32 off. When no engine is left the
// case is skipped with that reason; it is not relabelled tf32: a tf32 convolution is another
// dtype, to be declared as one, not a silent fallback.
// fp16 / bf16: tensor cores are the intended path, so every engine is taken; the check against
// the fp64 reference still catches one that is too inexact.
#include <string>
#include <vector>

#include "opmeter/dtype.hpp"

namespace opmeter::cudnn {

// The numerical notes of one engine that bear on its precision.
struct EngineNotes {
  bool tensor_core = false;                  // CUDNN_NUMERICAL_NOTE_TENSOR_CORE
  bool down_convert_inputs = false;          // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
  bool reduced_precision_reduction = false;  // CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION
};

// Why an engine with `notes` does not compute a graph of `dtype` in that precision; empty when
// it may be taken.
inline std::string precision_refusal(DType dtype, const EngineNotes& notes) {
  if (dtype != DType::fp32) return "";
  std::vector<std::string> why;
  if (notes.tensor_core) why.emplace_back("runs on tensor cores (TF32)");
  if (notes.down_convert_inputs) why.emplace_back("down-converts its inputs");
  if (notes.reduced_precision_reduction) why.emplace_back("reduces in less than fp32");
  if (why.empty()) return "";
  std::string text = "it ";
  for (std::size_t i = 0; i < why.size(); ++i) text += (i == 0 ? "" : i + 1 == why.size() ? " and " : ", ") + why[i];
  return text + ", not fp32";
}

// The notes as text for a result's details: "tensor_core, down_convert_inputs" or "none".
inline std::string notes_text(const EngineNotes& notes) {
  std::string text;
  auto add = [&](bool on, const char* name) {
    if (on) text += (text.empty() ? "" : ", ") + std::string(name);
  };
  add(notes.tensor_core, "tensor_core");
  add(notes.down_convert_inputs, "down_convert_inputs");
  add(notes.reduced_precision_reduction, "reduced_precision_reduction");
  return text.empty() ? "none" : text;
}

}  // namespace opmeter::cudnn
