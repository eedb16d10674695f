// The host CPU: cases name `threads=N`; memory is what the OS says is available; samples are
// timed by the host's clock.
#include <fmt/format.h>

#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"

namespace opmeter {
namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string device_grammar() const override { return "cpu"; }
  std::string description() const override { return "the CPU"; }
  bool owns(const std::string& device) const override { return device == kHostDevice; }
  std::string first_device() const override { return kHostDevice; }
  Support ready() override { return Support::yes(); }
  Support supports(const Case&) override { return Support::yes(); }
  double free_memory(const Case&) override { return static_cast<double>(available_memory_bytes()); }
  std::string ceiling_key(const Case& c) const override { return fmt::format("threads={}", c.threads); }
};

const BackendRegistrar reg(std::make_unique<CpuBackend>());

}  // namespace
}  // namespace opmeter
