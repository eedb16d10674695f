#include "opmeter/case.hpp"

#include <charconv>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    auto pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

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

int Case::cuda_index() const {
  auto index = parse_device(device);
  if (!index) throw UsageError(fmt::format("case {} does not run on a CUDA device", to_string()));
  return *index;
}

std::optional<int> parse_device(const std::string& device) {
  if (device == "cpu") return std::nullopt;
  if (device.rfind("cuda:", 0) == 0)
    if (auto n = to_int(device.substr(5)); n && *n >= 0 && *n < 1024) return static_cast<int>(*n);
  throw UsageError(fmt::format("unknown device '{}' (expected cpu or cuda:N, e.g. cuda:0)", device));
}

std::string Case::to_string() const {
  auto s = fmt::format("{}/{}/{}/{}/", op, impl, opmeter::to_string(dtype), params_string());
  s += on_cuda() ? "device=" + device : fmt::format("threads={}", threads);
  if (graph > 0) s += fmt::format(",graph={}", graph);
  if (hot) s += ",hot";
  return s;
}

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
      c.params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  for (auto& setting : split(parts[4], ',')) {
    if (setting == "hot") {
      c.hot = true;
    } else if (setting.rfind("threads=", 0) == 0) {
      auto n = to_int(setting.substr(8));
      if (!n || *n < 1 || *n > 4096)
        throw UsageError(fmt::format("case string '{}': threads must be an integer in 1..4096", text));
      c.threads = static_cast<int>(*n);
    } else if (setting.rfind("device=", 0) == 0) {
      c.device = setting.substr(7);
      try {
        parse_device(c.device);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("case string '{}': {}", text, e.what()));
      }
    } else if (setting.rfind("graph=", 0) == 0) {
      auto n = to_int(setting.substr(6));
      if (!n || *n < 1 || *n > 100000)
        throw UsageError(fmt::format("case string '{}': graph must be the launches per graph, 1..100000", text));
      c.graph = static_cast<int>(*n);
    } else {
      throw UsageError(fmt::format(
          "case string '{}': unknown setting '{}' (expected threads=N, device=cuda:N, graph=N or hot)", text, setting));
    }
  }
  if (c.on_cuda() && parts[4].find("threads=") != std::string::npos)
    throw UsageError(fmt::format("case string '{}': threads=N is for CPU cases; a CUDA case names only its device", text));
  if (c.graph > 0 && !c.on_cuda())
    throw UsageError(fmt::format("case string '{}': graph=N (CUDA Graph mode) needs device=cuda:N", text));
  return c;
}

}  // namespace opmeter
