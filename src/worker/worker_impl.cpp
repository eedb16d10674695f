#include "worker/worker_impl.hpp"

#include <cstring>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "opmeter/engine.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/worker_checked_spec.hpp"
#include "util/artifact_file.hpp"
#include "util/private_temp.hpp"
#include "worker/reply_fields.hpp"
#include "worker/shared_worker.hpp"

namespace opmeter::worker {
namespace {
namespace fs = std::filesystem;

// A file the worker reads, made anew: in opmeter's private directory, never through what was
// there before (a check's inputs replace the previous check's).
void write_file(const fs::path& path, const void* data, std::size_t bytes) {
  std::error_code ec;
  fs::remove(path, ec);
  write_new_file(path, data, bytes);
}

nlohmann::json describe(const TensorDesc& d) { return {{"name", d.name}, {"elem", elem_name(d.elem)}, {"count", d.count}}; }

// Samples timed where the calls run: the worker reads its clock (CPU) or its stream's events
// (GPU, after an L2 flush when cold; one graph replay of U calls with graph=U).
class WorkerTimer final : public SampleTimer {
 public:
  WorkerTimer(WorkerImpl& impl, const Case& c)
      : impl_(impl), cold_(!c.hot), graph_(static_cast<std::size_t>(c.setting_int("graph"))), device_(!c.on_host()) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>&) override {
    impl_.sync();
    auto reply = impl_.call({{"cmd", "sample"}, {"calls", calls}, {"cold", cold_}}, deadline_s(Wait::call));
    // How a GPU sample kept Python's dispatch out (worker/gpu_timing.py), counted for the details.
    if (auto hold = reply.find("hold"); hold != reply.end() && hold->is_string()) ++holds_[hold->get<std::string>()];
    return seconds_field(reply, "seconds", "sample");  // a sample of 0, -1 or 1e308 s ends the case
  }
  // A graph's launches per sample; one call per cold sample on a device (each after its flush).
  std::size_t fixed_batch() const override { return graph_ > 0 ? graph_ : device_ && cold_ ? 1 : 0; }
  std::optional<double> last_call_seconds() const override { return impl_.last_call_seconds(); }
  std::map<std::string, std::string> details() const override {
    std::map<std::string, std::string> d = {{"timer", device_ ? "worker: CUDA events" : "worker: perf_counter"}};
    if (!holds_.empty()) {
      auto count = [&](const char* k) { return holds_.contains(k) ? holds_.at(k) : std::size_t{0}; };
      d["launch_hold"] = fmt::format(
          "{} samples held behind torch.cuda._sleep until issued ({} may have run short), {} not held (more than 128 "
          "calls, or no torch.cuda._sleep)",
          count("held") + count("ran_short"), count("ran_short"), count("unheld"));
    }
    return d;
  }

 private:
  WorkerImpl& impl_;
  bool cold_;
  std::size_t graph_;
  bool device_;
  std::map<std::string, std::size_t> holds_;  // the samples' "hold" replies: held, ran_short, unheld
};

// An op opmeter cannot check alone (WorkerCheckedSpec): the output was written and finite
// (`check`); the values are judged by the worker's max_error against its tolerance.
Check with_workers_verdict(Check check, const nlohmann::json& reply) {
  if (!check.ok) return check;
  auto max_error = number_field(reply, "max_error", "check"), tolerance = number_field(reply, "tolerance", "check");
  if (!max_error || !tolerance) {
    check.ok = false;
    check.detail = "the worker sent no verdict (max_error and tolerance) for an op only it can check";
    return check;
  }
  check.max_error = *max_error;
  check.tolerance = *tolerance;
  check.detail = fmt::format("max error {:.3g} (tolerance {:.3g}), checked by the worker: {}", check.max_error,
                             check.tolerance, string_field(reply, "detail", "check").value_or("no detail"));
  check.ok = check.max_error <= check.tolerance;
  return check;
}

}  // namespace

WorkerImpl::~WorkerImpl() {
  try {
    if (worker_ && worker_->alive()) worker_->request({{"cmd", "release"}}, deadline_s(Wait::call));
  } catch (const std::exception&) {
    // A worker that fails to release is replaced at the next case; nothing to report here.
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

nlohmann::json WorkerImpl::call(const nlohmann::json& request, double deadline) {
  auto reply = worker_->request(request, deadline);
  const std::string cmd = request.value("cmd", "");
  if (!reply.is_object())
    throw BadReply(fmt::format("the worker replied to '{}' with {}, not a JSON object", cmd, short_json(reply)));
  if (bool_field(reply, "ok", cmd).value_or(false)) return reply;
  if (auto why = string_field(reply, "unsupported", cmd)) throw Unsupported(*why);
  throw std::runtime_error("the worker: " + string_field(reply, "error", cmd).value_or(short_json(reply)));
}

nlohmann::json WorkerImpl::write_tensors(const HostTensors& tensors, const std::string& prefix) {
  auto list = nlohmann::json::array();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto path = dir_ / fmt::format("{}{}", prefix, i);
    write_file(path, tensors[i].data(), tensors[i].bytes());
    auto d = describe(tensors[i].desc());
    d["path"] = path.string();
    list.push_back(d);
  }
  return list;
}

void WorkerImpl::describe_sets(nlohmann::json& request, const SetupOptions& options) {
  const auto inputs = spec_->inputs();
  const std::size_t others = options.copies - 1;
  auto tables = nlohmann::json::array(), own = nlohmann::json::array();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (spec_->is_table(i)) {
      tables.push_back(i);
      continue;
    }
    // Sets 1.. of input i, one after another in one file.
    std::vector<std::byte> all(others * inputs[i].bytes());
    for (std::size_t s = 1; s < options.copies; ++s) {
      HostTensor mine(inputs[i]);
      spec_->fill_input(mine, i, set_seed(options.seed, s));
      std::memcpy(all.data() + (s - 1) * mine.bytes(), mine.data(), mine.bytes());
    }
    const auto path = dir_ / fmt::format("sets{}", i);
    write_file(path, all.data(), all.size());
    auto d = describe(inputs[i]);
    d["input"] = i;
    d["sets"] = others;
    d["path"] = path.string();
    own.push_back(d);
  }
  request["tables"] = {{"inputs", tables}, {"copies", options.table_copies}};
  request["set_inputs"] = own;
}

void WorkerImpl::setup(const Case& c, const SetupOptions& options) {
  const OpDef* op = Registry::global().op(c.op);
  if (op && op->spec) {
    spec_ = op->spec();
    spec_->bind(c);
  }
  worker_ = &shared_worker();
  on_device_ = !c.on_host();
  dir_ = make_private_subdir("worker-");
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : c.params) params[k] = v;
  nlohmann::json request = {{"cmd", "setup"},          {"impl", c.impl},       {"op", c.op},
                            {"dtype", to_string(c.dtype)}, {"params", params},    {"device", c.device},
                            {"threads", c.threads},    {"copies", options.copies}, {"hot", c.hot},
                            {"graph", c.setting_int("graph")}};
  request["inputs"] = spec_ ? write_tensors(spec_->make_inputs(options.seed), "in") : nlohmann::json::array();
  if (spec_ && spec_->has_tables() && options.copies > 1) describe_sets(request, options);
  request["output"] = spec_ ? describe(spec_->output()) : nlohmann::json();
  if (kernel_) request["kernel"] = {{"file", kernel_->file}, {"name", kernel_->name}};
  auto reply = call(request, deadline_s(Wait::setup));
  details_.clear();
  if (auto details = reply.find("details"); details != reply.end()) {
    if (!details->is_object())
      throw BadReply(
          fmt::format("the worker's reply to 'setup' gives \"details\": {}, not an object", short_json(*details, 80)));
    for (auto& [k, v] : details->items()) details_[k] = v.is_string() ? v.get<std::string>() : short_json(v);
  }
  const auto& hello = worker_->hello();  // its types were checked when it came
  if (auto python = hello.find("python"); python != hello.end() && python->is_string())
    details_.emplace("python", *python);
}

void WorkerImpl::run(std::size_t copy) {
  if (queued_ > 0 && copy != queued_copy_) sync();
  queued_copy_ = copy;
  ++queued_;
}

void WorkerImpl::sync() {
  if (queued_ == 0) return;
  std::size_t calls = queued_;
  queued_ = 0;
  auto reply = call({{"cmd", "run"}, {"copy", queued_copy_}, {"calls", calls}}, deadline_s(Wait::call));
  if (reply.contains("seconds"))  // optional; when given, a time (the engine sizes batches by it)
    last_call_s_ = seconds_field(reply, "seconds", "run") / static_cast<double>(calls);
}

Check WorkerImpl::verify(std::uint64_t seed) {
  sync();
  if (!spec_) {  // a user kernel of its own op checks itself against its reference, if it has one
    auto reply = call({{"cmd", "check"}, {"inputs", nlohmann::json::array()}, {"output", nullptr}}, deadline_s(Wait::call));
    Check check;
    check.ok = true;
    check.unchecked = bool_field(reply, "unchecked", "check").value_or(false);
    check.max_error = number_field(reply, "max_error", "check").value_or(0.0);
    check.tolerance = number_field(reply, "tolerance", "check").value_or(0.0);
    check.detail =
        string_field(reply, "detail", "check").value_or(check.unchecked ? "no reference to check against" : "");
    if (!check.unchecked) check.ok = check.max_error <= check.tolerance;
    return check;
  }
  HostTensors inputs = spec_->make_inputs(seed);
  auto files = write_tensors(inputs, "check");
  auto paths = nlohmann::json::array();
  for (auto& f : files) paths.push_back(f["path"]);
  auto out_path = dir_ / "out";
  std::error_code ec;
  fs::remove(out_path, ec);
  auto reply = call({{"cmd", "check"}, {"inputs", paths}, {"output", out_path.string()}}, deadline_s(Wait::call));
  if (reply.contains("peak_memory_bytes") && reply["peak_memory_bytes"].is_number_unsigned())
    peak_memory_ = reply["peak_memory_bytes"].get<std::size_t>();

  HostTensor out(spec_->output());
  out.poison();  // elements the worker did not write show as such
  std::ifstream f(out_path, std::ios::binary);
  f.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(std::max<std::streamoff>(f.tellg(), 0));
  if (!f || size != out.bytes()) {
    Check bad;
    bad.detail = fmt::format("the worker wrote {} bytes of output, expected {} ({} {} elements)", size, out.bytes(),
                             out.desc().count, elem_name(out.desc().elem));
    return bad;
  }
  f.seekg(0);
  f.read(static_cast<char*>(out.data()), static_cast<std::streamsize>(out.bytes()));
  Check check = spec_->check(inputs, out, seed);
  if (dynamic_cast<const WorkerCheckedSpec*>(spec_.get())) return with_workers_verdict(std::move(check), reply);
  return check;
}

std::map<std::string, std::string> WorkerImpl::profile(const ProfileRequest& request) {
  sync();
  const fs::path trace = dir_ / "profile.trace.json", snapshot = dir_ / "profile.memory.pickle";
  std::error_code ec;
  fs::remove(trace, ec);
  fs::remove(snapshot, ec);
  const bool snap = request.memory && on_device_;
  auto reply = call({{"cmd", "profile"},
                     {"trace", request.trace ? nlohmann::json(trace.string()) : nlohmann::json()},
                     {"memory", request.memory},
                     {"snapshot", snap ? nlohmann::json(snapshot.string()) : nlohmann::json()}},
                    deadline_s(Wait::call));
  std::map<std::string, std::string> out;
  // The worker wrote into opmeter's private folder; the run's copy is made here, safely.
  auto keep = [&](const char* said, const fs::path& from, const std::string& suffix, const char* detail) {
    if (!bool_field(reply, said, "profile").value_or(false)) return;
    std::ifstream f(from, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) throw std::runtime_error(fmt::format("cannot read the worker's {}", from.string()));
    const std::string name = request.stem + suffix;
    write_private_file(request.dir, name, content);
    out[detail] = (fs::path(request.dir) / name).string();
    fs::remove(from, ec);
  };
  keep("trace", trace, ".trace.json", "profiler_trace");
  keep("snapshot", snapshot, ".memory.pickle", "memory_snapshot");
  if (reply.contains("snapshot_why") && reply["snapshot_why"].is_string())
    out["memory_snapshot"] = "not written: " + reply["snapshot_why"].get<std::string>();
  if (reply.contains("peak_memory_bytes") && reply["peak_memory_bytes"].is_number_unsigned())
    peak_memory_ = reply["peak_memory_bytes"].get<std::size_t>();
  if (reply.contains("memory_note") && reply["memory_note"].is_string()) out["peak_memory"] = reply["memory_note"].get<std::string>();
  return out;
}

std::unique_ptr<SampleTimer> WorkerImpl::own_timer(const Case& c) { return std::make_unique<WorkerTimer>(*this, c); }

}  // namespace opmeter::worker
