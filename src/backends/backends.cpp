// The backend registry and what a backend does unless it says otherwise.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/backend.hpp"
#include "opmeter/buffer.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "sensors/telemetry.hpp"

namespace opmeter {
namespace {
std::vector<std::unique_ptr<Backend>>& registered() {
  static std::vector<std::unique_ptr<Backend>> all;
  return all;
}
}  // namespace

void register_backend(std::unique_ptr<Backend> backend) { registered().push_back(std::move(backend)); }

std::vector<Backend*> backends() {
  std::vector<Backend*> out;
  for (auto& b : registered()) out.push_back(b.get());
  return out;
}

Backend& backend_of(const std::string& device) {
  std::vector<std::string> grammars;
  for (auto* b : backends()) {
    if (b->owns(device)) return *b;
    grammars.push_back(b->device_grammar());
  }
  std::sort(grammars.begin(), grammars.end());
  throw UsageError(fmt::format("unknown device '{}' (expected {})", device, fmt::join(grammars, " or ")));
}

Backend* backend_named(const std::string& name) {
  for (auto* b : backends())
    if (b->name() == name) return b;
  return nullptr;
}

void drop_launch_batching(Case& c) {
  for (auto& setting : backend_of(c).settings())
    if (setting.batches_launches) c.drop_setting(setting.name);
}

std::unique_ptr<Impl> Backend::make(const ImplDef& def, const Case&) { return def.make(); }

void Backend::mark_memory(const Case&) {
  host_bytes_at_mark_ = Buffer::live_bytes();
  Buffer::reset_peak();
}

std::optional<std::size_t> Backend::memory_peak(const Case&) { return Buffer::peak_bytes() - host_bytes_at_mark_; }

std::unique_ptr<SampleTimer> Backend::timer(Impl& impl, const Case&) { return std::make_unique<HostTimer>(impl); }

std::unique_ptr<Telemetry> Backend::telemetry(const Case&, std::string&) { return nullptr; }
std::unique_ptr<EnergyCounter> Backend::energy_counter(const Case&, std::string&) { return nullptr; }

}  // namespace opmeter
