#pragma once
// Small builders the built-in pipelines share: a network under construction (its layers in
// forward order), NCHW feature maps, convolution + folded BatchNorm + activation, residual adds,
// squeeze-excite, pooling and linear heads, each as the inference-form op case it runs as.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "opmeter/pipeline.hpp"

namespace opmeter::pipeline {

using Params = std::vector<std::pair<std::string, std::string>>;

// An NCHW feature map's shape after some layer (square images).
struct Feature {
  std::int64_t channels;
  std::int64_t image;
};

// A network being generated: every layer runs in `dtype` on `batch` samples.
class Net {
 public:
  Net(DType dtype, std::int64_t batch) : dtype_(dtype), batch_(batch) {}

  // Appends a layer of `op` with `params` (the op's defaults fill the rest).
  void add(std::string label, const std::string& op, Params params, std::size_t count = 1, double extra_params = 0);

  std::int64_t batch() const { return batch_; }
  // The finished pipeline: its layers, `samples` of `unit` per forward pass.
  Pipeline finish(double samples, std::string unit);

 private:
  DType dtype_;
  std::int64_t batch_;
  std::vector<Layer> layers_;
};

std::string str(std::int64_t v);

// An image classifier's model tensors: `batch` images of 3 x image x image in, `classes` logits
// per image out.
void classifier_tensors(Pipeline& p, std::int64_t batch, std::int64_t image, std::int64_t classes);

// Spatial size after a square window: floor((image + 2 padding - kernel) / stride) + 1.
std::int64_t out_image(std::int64_t image, std::int64_t kernel, std::int64_t stride, std::int64_t padding);

// Conv2d with its BatchNorm folded in (bn=1: weights + BN scale and shift) and activation `act`
// ("none", "relu", "hardswish", "silu", "gelu"); `groups` = channels makes it depthwise. Padding
// is kernel / 2 ("same" for odd kernels at stride 1), as every model here pads.
Feature conv_bn_act(Net& net, std::string label, Feature in, std::int64_t out_channels, std::int64_t kernel,
                    std::int64_t stride, const std::string& act, std::int64_t groups = 1);
// Depthwise conv_bn_act: one filter per channel.
Feature dw_conv_bn_act(Net& net, std::string label, Feature in, std::int64_t kernel, std::int64_t stride,
                       const std::string& act);

// Residual connection on a feature map: add (batch=N, seq=C, hidden=H*W).
void residual_add(Net& net, std::string label, Feature x);
// An elementwise activation op (`relu`, `gelu`, ...) on a feature map.
void activation(Net& net, std::string label, const std::string& act, Feature x);
// Inference BatchNorm over channels: batchnorm (rows = N*H*W, hidden = C).
void batchnorm2d(Net& net, std::string label, Feature x);
// Squeeze-and-excitation on x: the gate's FCs have `reduced` channels.
void squeeze_excite(Net& net, std::string label, Feature x, std::int64_t reduced, const std::string& act,
                    const std::string& gate);
// Max pooling; returns the pooled map.
Feature max_pool(Net& net, std::string label, Feature in, std::int64_t kernel, std::int64_t stride,
                 std::int64_t padding);
// Global average pooling to 1x1 (pool2d kind=avg, kernel=image, stride=1, padding=0).
Feature global_avg_pool(Net& net, std::string label, Feature in);
// A linear layer on `rows` vectors per sample (batch=N, seq=rows), activation `act` folded in.
void linear(Net& net, std::string label, std::int64_t rows, std::int64_t in, std::int64_t out,
            const std::string& act = "none");

// PyTorch's round-to-multiple for channel counts (torchvision's _make_divisible): the nearest
// multiple of `divisor`, at least `divisor`, and never more than 10% below `v`.
std::int64_t make_divisible(double v, std::int64_t divisor = 8);

}  // namespace opmeter::pipeline
