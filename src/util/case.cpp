#include "opmeter/case.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

std::optional<std::int64_t> to_int(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

bool Case::has(const std::string& key) const {
  for (auto& [k, v] : params)
    if (k == key) return true;
  return false;
}

const std::string& Case::get(const std::string& key) const {
  for (auto& [k, v] : params)
    if (k == key) return v;
  throw CaseError(fmt::format("case {} has no parameter '{}'", to_string(), key));
}

const std::string& Case::get_or(const std::string& key, const std::string& otherwise) const {
  for (auto& [k, v] : params)
    if (k == key) return v;
  return otherwise;
}

std::int64_t Case::get_int(const std::string& key) const {
  auto v = to_int(get(key));
  if (!v) throw CaseError(fmt::format("parameter {}={} is not an integer", key, get(key)));
  return *v;
}

Case& Case::set(const std::string& key, std::string value) {
  for (auto& [k, v] : params)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  params.emplace_back(key, std::move(value));
  return *this;
}

Case& Case::set(const std::string& key, std::int64_t value) { return set(key, std::to_string(value)); }

std::string Case::params_string() const {
  if (params.empty()) return "-";
  std::string out;
  for (auto& [k, v] : params) {
    if (!out.empty()) out += ',';
    out += k + '=' + v;
  }
  return out;
}

int Case::device_index() const {
  auto colon = device.rfind(':');
  auto n = colon == std::string::npos ? std::nullopt : to_int(device.substr(colon + 1));
  if (!n || *n < 0 || *n > 1 << 20) throw UsageError(fmt::format("case {} names no numbered device", to_string()));
  return static_cast<int>(*n);
}

std::int64_t Case::setting_int(const std::string& key, std::int64_t otherwise) const {
  for (auto& [k, v] : settings)
    if (k == key) return to_int(v).value_or(otherwise);
  return otherwise;
}

Case& Case::set_setting(const std::string& key, std::string value) {
  for (auto& [k, v] : settings)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  settings.emplace_back(key, std::move(value));
  return *this;
}

Case& Case::drop_setting(const std::string& key) {
  std::erase_if(settings, [&](auto& kv) { return kv.first == key; });
  return *this;
}

void check_device(const std::string& device) { backend_of(device); }

std::string Case::to_string() const {
  auto s = fmt::format("{}/{}/{}/{}/", op, impl, opmeter::to_string(dtype), params_string());
  s += on_host() ? fmt::format("threads={}", threads) : "device=" + device;
  for (auto& [k, v] : settings) s += "," + k + "=" + v;
  if (hot) s += ",hot";
  return s;
}

namespace {

// The settings part: threads=N or device=NAME, hot, and the device's backend's own settings
// (checked once the device is known).
void parse_settings(const std::string& text, const std::string& part, Case& c) {
  struct Given {
    std::string key;
    std::optional<std::string> value;  // none: a bare word
  };
  std::vector<Given> others;
  bool threads_given = false;
  std::set<std::string> keys;  // a setting twice: which one holds would be the parser's choice
  for (auto& setting : split(part, ',')) {
    auto eq = setting.find('=');
    if (!keys.insert(setting.substr(0, eq)).second)
      throw UsageError(fmt::format("case string '{}': setting '{}' is given twice", text, setting.substr(0, eq)));
    Given g{setting.substr(0, eq), eq == std::string::npos ? std::nullopt : std::optional(setting.substr(eq + 1))};
    if (setting == "hot") {
      c.hot = true;
    } else if (g.key == "threads" && g.value) {
      auto n = to_int(*g.value);
      if (!n || *n < 1 || *n > 4096)
        throw UsageError(fmt::format("case string '{}': threads must be an integer in 1..4096", text));
      c.threads = static_cast<int>(*n);
      threads_given = true;
    } else if (g.key == "device" && g.value) {
      c.device = *g.value;
      try {
        check_device(c.device);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("case string '{}': {}", text, e.what()));
      }
    } else {
      others.push_back(std::move(g));
    }
  }
  Backend& backend = backend_of(c);
  if (!c.on_host() && threads_given)
    throw UsageError(fmt::format("case string '{}': threads=N is for CPU cases; a {} case names only its device", text,
                                 backend.name()));
  for (auto& g : others) {
    if (g.value) {
      auto own = backend.settings();
      auto def = std::find_if(own.begin(), own.end(), [&](auto& d) { return d.name == g.key; });
      if (def != own.end()) {
        try {
          if (def->check) def->check(*g.value);
        } catch (const UsageError& e) {
          throw UsageError(fmt::format("case string '{}': {}", text, e.what()));
        }
        c.set_setting(g.key, *g.value);
        continue;
      }
      for (auto* b : backends())  // another backend's setting: say which device it needs
        for (auto& d : b->settings())
          if (d.name == g.key)
            throw UsageError(fmt::format("case string '{}': {} needs device={}", text, d.help, b->device_grammar()));
    }
    std::vector<std::string> known = {"threads=N", "device=NAME"};
    for (auto* b : backends())
      for (auto& d : b->settings()) known.push_back(d.name + "=N");
    known.push_back("hot");
    throw UsageError(fmt::format("case string '{}': unknown setting '{}' (expected {})", text,
                                 g.value ? g.key + "=" + *g.value : g.key, fmt::join(known, ", ")));
  }
}

}  // namespace

Case parse_case(const std::string& text) {
  auto parts = split(text, '/');
  if (parts.size() != 5)
    throw UsageError(fmt::format("case string '{}' must have 5 parts op/impl/dtype/params/settings, "
                                 "e.g. gemm/onednn/fp32/M=1024,N=1024,K=1024/threads=2", text));
  Case c;
  c.op = parts[0];
  c.impl = parts[1];
  auto dt = parse_dtype(parts[2]);
  if (!dt) throw UsageError(fmt::format("case string '{}': unknown dtype '{}'", text, parts[2]));
  c.dtype = *dt;
  if (parts[3] != "-" && !parts[3].empty()) {
    for (auto& kv : split(parts[3], ',')) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError(fmt::format("case string '{}': parameter '{}' is not key=value", text, kv));
      if (c.has(kv.substr(0, eq)))
        throw UsageError(fmt::format("case string '{}': parameter '{}' is given twice", text, kv.substr(0, eq)));
      try {
        check_canonical_integer(kv.substr(0, eq), kv.substr(eq + 1));
      } catch (const CaseError& e) {
        throw CaseError(fmt::format("case string '{}': {}", text, e.what()));
      }
      c.params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  parse_settings(text, parts[4], c);
  put_params_in_op_order(c);
  return c;
}

}  // namespace opmeter
