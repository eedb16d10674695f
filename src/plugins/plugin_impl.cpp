#include "plugins/plugin_impl.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "opmeter/engine.hpp"
#include "opmeter/registry.hpp"

namespace opmeter {
namespace {

// The ABI's element codes are opmeter's Elem values.
static_assert(int(Elem::f64) == OPMETER_F64 && int(Elem::f32) == OPMETER_F32 && int(Elem::f16) == OPMETER_F16 &&
              int(Elem::bf16) == OPMETER_BF16 && int(Elem::fp8_e4m3) == OPMETER_FP8_E4M3 && int(Elem::s8) == OPMETER_S8 &&
              int(Elem::u8) == OPMETER_U8 && int(Elem::s32) == OPMETER_S32);

// The most of a library's message that a reason keeps.
constexpr std::size_t kMessageChars = 300;

opmeter_tensor view(const TensorDesc& d, void* data) {
  return {d.name.c_str(), static_cast<opmeter_elem>(d.elem), d.count, data};
}

std::vector<opmeter_tensor> views(HostTensors& tensors) {
  std::vector<opmeter_tensor> out;
  for (auto& t : tensors) out.push_back(view(t.desc(), t.data()));
  return out;
}

}  // namespace

PluginImpl::~PluginImpl() {
  if (state_) desc_->functions.teardown(state_);
}

std::string PluginImpl::message(const char* what, const std::string& fallback) const {
  std::string text(err_, strnlen(err_, sizeof err_));  // a library may leave it unterminated
  // It becomes a result's reason and a console line: one line, of a readable length.
  for (char& ch : text)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  if (text.size() > kMessageChars)
    text = fmt::format("{}... ({} more characters)", text.substr(0, kMessageChars), text.size() - kMessageChars);
  if (text.empty()) text = fallback;
  return fmt::format("{} ({}) {}: {}", desc_->name, desc_->library, what, text);
}

void PluginImpl::check_call(const char* what, int status) {
  if (status != 0) throw std::runtime_error(message(what, fmt::format("returned {} with no message", status)));
}

void PluginImpl::setup(const Case& c, const SetupOptions& options) {
  const OpDef* op = Registry::global().op(desc_->op);
  spec_ = op->spec();
  spec_->bind(c);
  case_ = c;
  dtype_ = std::string(to_string(c.dtype));
  for (auto& [name, value] : case_.params) {
    param_names_.push_back(name.c_str());
    param_values_.push_back(value.c_str());
  }
  output_ = spec_->output();
  HostTensors inputs = spec_->make_inputs(options.seed);  // opmeter's until setup returns
  auto input_views = views(inputs);
  opmeter_case kase{
      .op = case_.op.c_str(),
      .impl = case_.impl.c_str(),
      .dtype = dtype_.c_str(),
      .device = case_.device.c_str(),
      .threads = case_.threads,
      .n_params = param_names_.size(),
      .param_names = param_names_.data(),
      .param_values = param_values_.data(),
      .n_inputs = input_views.size(),
      .inputs = input_views.data(),
      .output = view(output_, nullptr),
      .copies = options.copies,
  };
  int flags = 0;
  err_[0] = '\0';
  state_ = desc_->functions.setup(&kase, &flags, err_, sizeof err_);
  if (state_) return;
  if (flags & OPMETER_UNSUPPORTED) throw Unsupported(message("setup", "cannot run this case (no reason given)"));
  throw std::runtime_error(message("setup", "returned NULL with no message"));
}

void PluginImpl::run(std::size_t copy) {
  err_[0] = '\0';
  check_call("run", desc_->functions.run(state_, copy, err_, sizeof err_));
}

void PluginImpl::sync() {
  err_[0] = '\0';
  check_call("sync", desc_->functions.sync(state_, err_, sizeof err_));
}

Check PluginImpl::verify(std::uint64_t seed) {
  HostTensors inputs = spec_->make_inputs(seed);
  auto input_views = views(inputs);
  err_[0] = '\0';
  check_call("load", desc_->functions.load(state_, input_views.data(), input_views.size(), poison_byte(output_.elem),
                                           err_, sizeof err_));
  run(0);
  sync();
  HostTensor out(output_);
  out.poison();  // what `output` leaves uncopied shows too
  err_[0] = '\0';
  check_call("output", desc_->functions.output(state_, out.data(), err_, sizeof err_));
  return spec_->check(inputs, out, seed);
}

std::unique_ptr<SampleTimer> PluginImpl::own_timer(const Case& c) {
  // A device impl computes on the library's own streams, which the CUDA backend's events (on
  // opmeter's stream) would not see: its samples are timed on the host around run() and sync().
  // On the CPU the backend's timer is that host timer already.
  if (c.on_host()) return nullptr;
  return std::make_unique<HostTimer>(*this);
}

}  // namespace opmeter
