#pragma once
// What an op reads from a config (YAML suite or file) to expand into parameter sets: its own
// keys, typed, with errors at the key's file:line (exit code 2). The config reader hands an op
// this view; the op never sees YAML.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "opmeter/shapes.hpp"

namespace opmeter {

using Params = std::vector<std::pair<std::string, std::string>>;

// One parameter set of an op, with the layer label it came from (e.g. `attn.wqkv`), if any.
struct ParamSet {
  Params params;
  std::string label;
};

class OpConfig {
 public:
  virtual ~OpConfig() = default;
  virtual bool has(const std::string& key) const = 0;
  // A key's value or list of values; `what` names it in messages.
  virtual std::vector<std::string> texts(const std::string& key, const std::string& what) const = 0;
  virtual std::vector<std::int64_t> integers(const std::string& key, const std::string& what, std::int64_t lo,
                                             std::int64_t hi) const = 0;
  // A nested map whose keys must be among `allowed`.
  virtual std::unique_ptr<OpConfig> section(const std::string& key, const std::vector<std::string>& allowed) const = 0;
  // The matrix shapes of the config's `shapes` list (generators custom, pow2, sweep, llama).
  virtual std::vector<MatShape> shapes() const = 0;
  // The last-level cache size sizing this run's arrays (--llc-bytes, llc_bytes or the CPU's).
  virtual std::size_t llc_bytes() const = 0;
  // Fails at `key` (at its `index`-th element for a list), with file, line and the message.
  [[noreturn]] virtual void fail(const std::string& key, const std::string& message) const = 0;
  [[noreturn]] virtual void fail_at(const std::string& key, std::size_t index, const std::string& message) const = 0;
};

}  // namespace opmeter
