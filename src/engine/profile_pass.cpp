#include "engine/profile_pass.hpp"

#include <fmt/format.h>

#include "engine/profile_request.hpp"
#include "util/artifact_file.hpp"
#include "util/file_safe_name.hpp"

namespace opmeter {

void profile_pass(Result& r, Impl& impl, const RunOptions& options) {
  if (!(options.profile || options.memory_profile) || options.profile_dir.empty()) return;
  try {
    auto* profiled = dynamic_cast<ProfiledImpl*>(&impl);
    if (!profiled) return;  // opmeter's own impls: nsys and ncu profile them, peak memory is in every result
    make_private_folder(options.profile_dir);
    ProfileRequest request{options.profile_dir, file_safe_name(r.case_string), options.profile, options.memory_profile};
    for (auto& [key, value] : profiled->profile(request)) r.details[key] = value;
    if (impl.allocates_elsewhere())
      if (auto peak = impl.own_peak_memory()) r.peak_memory_bytes = peak;  // what the pass measured
  } catch (const std::exception& e) {  // the measurement stands; the profile is what failed
    r.details["profile"] = fmt::format("not taken: {}", e.what());
  }
}

}  // namespace opmeter
