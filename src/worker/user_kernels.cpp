#include "worker/user_kernels.hpp"

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "plugins/op_dtypes.hpp"
#include "util/interrupt.hpp"
#include "util/text.hpp"
#include "worker/reply_fields.hpp"
#include "worker/shared_worker.hpp"
#include "worker/worker_impl.hpp"

namespace opmeter::worker {
namespace {
namespace fs = std::filesystem;

// Kernels registered so far, by impl name: a second --kernel for the same one is a no-op.
std::map<std::string, std::string>& registered() {
  static std::map<std::string, std::string> by_name;  // impl -> "file:name"
  return by_name;
}

// A kernel's own op must print case strings that parse back to the same case: a name and
// parameters that case strings can carry, integers written as opmeter writes them.
void check_user_op(const std::string& spec, const std::string& name, const nlohmann::json& params) {
  static const std::regex op_name("[a-z][a-z0-9_]*"), key_name("[A-Za-z_][A-Za-z0-9_]*"), value_text("[A-Za-z0-9_.+-]+");
  if (!std::regex_match(name, op_name))
    throw UsageError(fmt::format("kernel '{}': op '{}' must be lower-case letters, digits and _ (it is part of case strings)",
                                 spec, name));
  if (!params.is_object()) throw UsageError(fmt::format("kernel '{}': params must be a dict of name: default value", spec));
  for (auto& [key, value] : params.items()) {
    const std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    if (!std::regex_match(key, key_name))
      throw UsageError(fmt::format("kernel '{}': parameter '{}' must be a Python identifier (it is part of case strings)", spec, key));
    if (!std::regex_match(v, value_text))
      throw UsageError(fmt::format("kernel '{}': parameter {}'s default '{}' must be letters, digits and . + - _ (no '/', ',', "
                                   "'=' or spaces: it is part of case strings)",
                                   spec, key, v));
    try {
      check_canonical_integer(key, v);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("kernel '{}': parameter {}'s default: {}", spec, key, e.what()));
    }
  }
}

// Ops that kernels declared (add_user_op): other kernels may compute them too.
std::set<std::string>& user_ops() {
  static std::set<std::string> ops;
  return ops;
}

// An op opmeter does not know, declared by the kernel: its parameters (all sweepable, the
// kernel's defaults) and no work model or spec (the kernel checks itself, if it can).
void add_user_op(const std::string& name, const nlohmann::json& params, const std::string& summary) {
  OpDef op;
  op.name = name;
  op.summary = summary.empty() ? "a user kernel's own op" : summary;
  for (auto& [key, value] : params.items()) {
    std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    op.params.push_back(key);
    op.example.emplace_back(key, v);
    op.defaults.emplace_back(key, v);
  }
  op.work = [](const Case&) { return Work{}; };
  op.footprint = [](const Case&) { return 0.0; };
  op.uses_memory = false;
  user_ops().insert(op.name);
  Registry::global().add(std::move(op));
}

// The ':' before NAME in "FILE[:NAME]", if there is one: a ':' inside a path (dir:x/k.py, k:1.py)
// is the file's.
std::size_t name_colon(const std::string& spec) {
  auto colon = spec.rfind(':');
  if (colon == std::string::npos) return colon;
  const std::string after = spec.substr(colon + 1);
  return after.find('/') != std::string::npos || after.ends_with(".py") ? std::string::npos : colon;
}

// FILE and NAME of "FILE[:NAME]" (NAME defaults to FILE's stem).
std::pair<std::string, std::string> split_spec(const std::string& spec) {
  auto colon = name_colon(spec);
  if (colon == std::string::npos) return {spec, fs::path(spec).stem().string()};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

// The dtypes a kernel's `describe` reply declares (["fp32"] when it names none).
std::vector<DType> declared_dtypes(const std::string& spec, const nlohmann::json& reply) {
  if (!reply.contains("dtypes")) return {DType::fp32};
  const auto& list = reply["dtypes"];
  if (!list.is_array() || list.empty())
    throw UsageError(
        fmt::format("kernel '{}': dtypes must be a list of dtype names, e.g. dtypes = [\"fp32\", \"bf16\"]; it "
                    "gives {}",
                    spec, list.dump()));
  std::vector<DType> dtypes;
  for (auto& d : list) {
    auto dtype = d.is_string() ? parse_dtype(d.get<std::string>()) : std::nullopt;
    if (!dtype)
      throw UsageError(fmt::format("kernel '{}' declares an unknown dtype {}", spec,
                                   d.is_string() ? "'" + d.get<std::string>() + "'" : d.dump()));
    dtypes.push_back(*dtype);
  }
  return dtypes;
}

}  // namespace

std::string absolute_kernel_spec(const std::string& spec, const std::string& base_dir) {
  auto [file, name] = split_spec(spec);
  if (file.empty())  // '', ':' or ':NAME': fs::absolute("") throws
    throw UsageError(fmt::format("kernel '{}' names no file; expected FILE.py or FILE.py:NAME", spec));
  std::error_code ec;
  fs::path path = fs::path(file).is_absolute() || base_dir.empty() ? fs::path(file) : fs::path(base_dir) / file;
  return fs::absolute(path, ec).string() + (name_colon(spec) == std::string::npos ? "" : ":" + name);
}

std::string kernel_impl_name(const std::string& spec) { return split_spec(spec).second; }
std::string kernel_file(const std::string& spec) { return split_spec(spec).first; }

std::string add_user_kernel(const std::string& spec, const std::string& default_op) {
  auto [file, name] = split_spec(spec);
  if (file.empty()) throw UsageError(fmt::format("kernel '{}' names no file; expected FILE.py or FILE.py:NAME", spec));
  std::error_code ec;
  fs::path path = fs::absolute(file, ec);
  if (ec) throw UsageError(fmt::format("kernel file '{}': {}", file, ec.message()));
  const auto type = fs::status(path, ec).type();
  if (type == fs::file_type::not_found) throw UsageError(fmt::format("kernel file '{}' does not exist", path.string()));
  if (type == fs::file_type::directory)
    throw UsageError(fmt::format("kernel file '{}' is a directory; expected a Python file (FILE.py or FILE.py:NAME)",
                                 path.string()));
  if (type != fs::file_type::regular)
    throw UsageError(fmt::format("kernel file '{}' is not a regular file{}", path.string(),
                                 ec ? ": " + ec.message() : std::string()));
  if (!std::regex_match(name, std::regex("[A-Za-z_][A-Za-z0-9_]*")))
    throw UsageError(fmt::format("kernel name '{}' in '{}' must be a Python identifier (FILE.py:NAME)", name, spec));
  const std::string key = path.string() + ":" + name;
  if (auto it = registered().find(name); it != registered().end()) {
    if (it->second == key) return name;
    throw UsageError(fmt::format("two kernels are named '{}': {} and {}", name, it->second, key));
  }

  nlohmann::json reply;
  try {
    reply = shared_worker().request({{"cmd", "describe"}, {"kernel", {{"file", path.string()}, {"name", name}}}},
                                    deadline_s(Wait::setup));
  } catch (const Interrupted&) {
    throw;  // Ctrl-C while the kernel's module was imported: not the kernel's fault
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("cannot read kernel '{}': {}", spec, e.what()));
  }
  if (!reply.is_object())
    throw UsageError(
        fmt::format("cannot read kernel '{}': the worker replied with {}, not a JSON object", spec, short_json(reply)));
  bool ok = false;
  std::string error;
  try {
    ok = bool_field(reply, "ok", "describe").value_or(false);
    if (!ok)
      error = string_field(reply, "error", "describe")
                  .value_or(string_field(reply, "unsupported", "describe").value_or(short_json(reply)));
  } catch (const BadReply& e) {
    throw UsageError(fmt::format("cannot read kernel '{}': {}", spec, e.what()));
  }
  if (!ok) {
    // A kernel written for PyTorch, imported by a Python without it: say how to pick another, as
    // the torch impls' skip does.
    const bool no_torch = error.find("No module named 'torch'") != std::string::npos;
    throw UsageError(fmt::format("kernel '{}': {}{}", spec, error,
                                 no_torch ? fmt::format("; set OPMETER_PYTHON to a Python that has PyTorch (the worker "
                                                        "runs {})",
                                                        worker_command().front())
                                          : std::string()));
  }

  std::string op = reply.contains("op") && reply["op"].is_string() ? reply["op"].get<std::string>() : default_op;
  if (op.empty()) throw UsageError(fmt::format("kernel '{}' names no op: set `op = \"...\"` in it", spec));
  const std::vector<DType> dtypes = declared_dtypes(spec, reply);
  const std::string summary =
      reply.contains("summary") && reply["summary"].is_string() ? reply["summary"].get<std::string>() : "";
  auto& reg = Registry::global();
  const OpDef* known = reg.op(op);
  if (known && !known->spec && !user_ops().contains(op))
    throw UsageError(
        fmt::format("kernel '{}' computes op '{}', whose inputs and check only opmeter's own impls know", spec, op));
  if (known && known->spec) {
    try {
      check_op_dtypes(op, dtypes);  // its inputs and check are the op's: of the op's forms only
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("kernel '{}': {}", spec, e.what()));
    }
  }
  if (!known) {
    const auto params = reply.contains("params") ? reply["params"] : nlohmann::json::object();
    check_user_op(spec, op, params);
    add_user_op(op, params, summary);
  }
  if (reg.impl(op, name)) throw UsageError(fmt::format("kernel '{}': {} already has an impl named '{}'", spec, op, name));

  reg.add(ImplDef{
      .op = op,
      .impl = name,
      .backends = {"cpu", "cuda"},
      .summary = summary.empty() ? fmt::format("user kernel {}", path.filename().string())
                                 : fmt::format("{} (user kernel {})", summary, path.filename().string()),
      .dtypes = dtypes,
      .make = [file = path.string(), name] { return std::make_unique<WorkerImpl>(UserKernel{file, name}); },
      .on_request = true,
  });
  registered()[name] = key;
  return name;
}

bool is_user_kernel(const std::string& impl) { return registered().contains(impl); }

}  // namespace opmeter::worker
