#pragma once
// What the config tests read back: the message a config's ConfigError gives.
#include <string>

#include "config/config.hpp"
#include "opmeter/errors.hpp"

namespace opmeter::config_test_support {

// The message of the ConfigError a config (named `source` in messages) raises, or "no error".
inline std::string config_error_of(const std::string& yaml, const std::string& source = "t.yaml") {
  try {
    load_config_text(yaml, source, 2);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace opmeter::config_test_support
