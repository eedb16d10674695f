#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "opmeter/dtype.hpp"

namespace opmeter {

inline constexpr const char* kHostDevice = "cpu";

// One thing to measure: op + impl + dtype + shape parameters + settings. Its canonical string,
// e.g. `gemm/onednn/bf16/M=4096,N=4096,K=4096/threads=2`, parses back into the same case.
struct Case {
  std::string op;
  std::string impl;
  DType dtype = DType::fp32;
  std::vector<std::pair<std::string, std::string>> params;  // ordered, as the op declares them
  int threads = 1;
  bool hot = false;  // warm-cache measurement instead of the default cold one
  // Where it runs: the host ("cpu") or a device of another backend ("cuda:N"). Host cases print
  // `threads=N`, the others `device=NAME`.
  std::string device = kHostDevice;
  // Settings of the device's backend, in the order given (CUDA's graph=N: launches per graph).
  std::vector<std::pair<std::string, std::string>> settings;
  // What the case is to its reader, e.g. the layer `attn.wqkv` a GEMM shape comes from. Not part
  // of the case's identity: not in its string, not compared.
  std::string label;

  bool on_host() const { return device == kHostDevice; }
  int device_index() const;  // N of a device named NAME:N; throws UsageError for the host
  // A backend setting's integer value; `otherwise` when the case does not carry it.
  std::int64_t setting_int(const std::string& key, std::int64_t otherwise = 0) const;
  Case& set_setting(const std::string& key, std::string value);
  Case& drop_setting(const std::string& key);

  bool has(const std::string& key) const;
  const std::string& get(const std::string& key) const;    // throws CaseError when absent
  std::int64_t get_int(const std::string& key) const;      // throws CaseError when not an integer
  // An optional parameter's value, `otherwise` when the case does not carry it.
  const std::string& get_or(const std::string& key, const std::string& otherwise) const;
  Case& set(const std::string& key, std::string value);
  Case& set(const std::string& key, std::int64_t value);

  std::string to_string() const;
  std::string params_string() const;  // `M=..,N=..,K=..`
  // Same case: same canonical string (the label aside).
  bool operator==(const Case& o) const { return to_string() == o.to_string(); }
};

// Checks a device name against the registered backends' grammars. Throws UsageError naming what
// is expected.
void check_device(const std::string& device);

// Parses a canonical case string. Throws UsageError naming the part that is wrong.
Case parse_case(const std::string& text);

}  // namespace opmeter
