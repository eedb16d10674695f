#pragma once
// An impl from a C plugin (include/opmeter/plugin_abi.h): opmeter's Impl calling through the
// library's functions. Its inputs and its check come from the op's spec, as for every impl.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/op.hpp"
#include "opmeter/op_spec.hpp"
#include "opmeter/plugin_abi.h"

namespace opmeter {

// One impl as its library describes it, strings copied (the library's need not outlive `add`).
struct PluginImplDesc {
  std::string library;  // the plugin's path
  std::string op, name, summary, dtypes, devices;
  opmeter_impl functions{};  // only its function pointers are used
};

class PluginImpl final : public Impl {
 public:
  explicit PluginImpl(std::shared_ptr<const PluginImplDesc> desc) : desc_(std::move(desc)) {}
  ~PluginImpl() override;
  void setup(const Case& c, const SetupOptions& options) override;
  void run(std::size_t copy) override;
  void sync() override;
  Check verify(std::uint64_t seed) override;
  std::map<std::string, std::string> details() const override { return {{"plugin", desc_->library}}; }
  std::unique_ptr<SampleTimer> own_timer(const Case& c) override;
  // The library holds its own buffers, which opmeter cannot count: peak memory unknown.
  bool allocates_elsewhere() const override { return true; }

 private:
  // Throws with the library's message when a call returned nonzero.
  void check_call(const char* what, int status);
  std::string message(const char* what, const std::string& fallback) const;

  std::shared_ptr<const PluginImplDesc> desc_;
  std::unique_ptr<OpSpec> spec_;
  void* state_ = nullptr;
  char err_[1024] = {};
  // What the case handed to setup points into: it lives until teardown.
  Case case_;
  std::string dtype_;
  std::vector<const char*> param_names_, param_values_;
  TensorDesc output_;
};

}  // namespace opmeter
