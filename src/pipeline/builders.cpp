// Shared builders of the built-in pipelines (see builders.hpp).
#include "pipeline/builders.hpp"

#include <algorithm>

namespace opmeter::pipeline {

void Net::add(std::string label, const std::string& op, Params params, std::size_t count, double extra_params) {
  layers_.push_back(make_layer(std::move(label), op, std::move(params), dtype_, count, extra_params));
}

Pipeline Net::finish(double samples, std::string unit) {
  Pipeline p;
  p.dtype = dtype_;
  p.layers = std::move(layers_);
  p.samples = samples;
  p.sample_unit = std::move(unit);
  return p;
}

void classifier_tensors(Pipeline& p, std::int64_t batch, std::int64_t image, std::int64_t classes) {
  p.model_input = {"image", double(batch) * 3 * double(image) * double(image)};
  p.model_output = {"logits", double(batch) * double(classes)};
}

std::string str(std::int64_t v) { return std::to_string(v); }

std::int64_t out_image(std::int64_t image, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  return (image + 2 * padding - kernel) / stride + 1;
}

Feature conv_bn_act(Net& net, std::string label, Feature in, std::int64_t out_channels, std::int64_t kernel,
                    std::int64_t stride, const std::string& act, std::int64_t groups) {
  const std::int64_t padding = kernel / 2;
  net.add(std::move(label), "conv2d",
          {{"batch", str(net.batch())},
           {"channels", str(in.channels)},
           {"out_channels", str(out_channels)},
           {"image", str(in.image)},
           {"kernel", str(kernel)},
           {"stride", str(stride)},
           {"padding", str(padding)},
           {"groups", str(groups)},
           {"bn", "1"},
           {"act", act}});
  return {out_channels, out_image(in.image, kernel, stride, padding)};
}

Feature dw_conv_bn_act(Net& net, std::string label, Feature in, std::int64_t kernel, std::int64_t stride,
                       const std::string& act) {
  return conv_bn_act(net, std::move(label), in, in.channels, kernel, stride, act, in.channels);
}

void residual_add(Net& net, std::string label, Feature x) {
  net.add(std::move(label), "add",
          {{"batch", str(net.batch())}, {"seq", str(x.channels)}, {"hidden", str(x.image * x.image)}});
}

void activation(Net& net, std::string label, const std::string& act, Feature x) {
  net.add(std::move(label), act,
          {{"batch", str(net.batch())}, {"seq", str(x.channels)}, {"hidden", str(x.image * x.image)}});
}

void batchnorm2d(Net& net, std::string label, Feature x) {
  net.add(std::move(label), "batchnorm",
          {{"batch", str(net.batch())}, {"seq", str(x.image * x.image)}, {"hidden", str(x.channels)}});
}

void squeeze_excite(Net& net, std::string label, Feature x, std::int64_t reduced, const std::string& act,
                    const std::string& gate) {
  net.add(std::move(label), "squeeze_excite",
          {{"batch", str(net.batch())},
           {"channels", str(x.channels)},
           {"image", str(x.image)},
           {"reduced", str(reduced)},
           {"act", act},
           {"gate", gate}});
}

Feature max_pool(Net& net, std::string label, Feature in, std::int64_t kernel, std::int64_t stride,
                 std::int64_t padding) {
  net.add(std::move(label), "pool2d",
          {{"batch", str(net.batch())},
           {"channels", str(in.channels)},
           {"image", str(in.image)},
           {"kernel", str(kernel)},
           {"stride", str(stride)},
           {"padding", str(padding)},
           {"kind", "max"}});
  return {in.channels, out_image(in.image, kernel, stride, padding)};
}

Feature global_avg_pool(Net& net, std::string label, Feature in) {
  net.add(std::move(label), "pool2d",
          {{"batch", str(net.batch())},
           {"channels", str(in.channels)},
           {"image", str(in.image)},
           {"kernel", str(in.image)},
           {"stride", "1"},
           {"padding", "0"},
           {"kind", "avg"}});
  return {in.channels, 1};
}

void linear(Net& net, std::string label, std::int64_t rows, std::int64_t in, std::int64_t out, const std::string& act) {
  net.add(std::move(label), "linear",
          {{"batch", str(net.batch())}, {"seq", str(rows)}, {"hidden", str(in)}, {"out", str(out)}, {"act", act}});
}

std::int64_t make_divisible(double v, std::int64_t divisor) {
  std::int64_t rounded = std::max(divisor, std::int64_t(v + double(divisor) / 2) / divisor * divisor);
  if (double(rounded) < 0.9 * v) rounded += divisor;
  return rounded;
}

}  // namespace opmeter::pipeline
