#pragma once
// An impl whose calls run in the worker process (PyTorch eager, torch.compile, our Triton kernels,
// a user's Python kernel). Its inputs come from the op's spec, written to files the worker reads,
// so it computes on exactly what every other impl gets; its output comes back the same way for the
// spec's fp64 check. Samples are timed inside the worker (own_timer), so the pipe's round trip
// stays out of them.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/profile_request.hpp"
#include "opmeter/op_spec.hpp"

namespace opmeter::worker {

class WorkerProcess;

// A user's Python kernel: the file and the name of its kernel object.
struct UserKernel {
  std::string file;
  std::string name;
};

class WorkerImpl final : public Impl, public ProfiledImpl {
 public:
  explicit WorkerImpl(std::optional<UserKernel> kernel = std::nullopt) : kernel_(std::move(kernel)) {}
  ~WorkerImpl() override;
  void setup(const Case& c, const SetupOptions& options) override;
  void run(std::size_t copy) override;
  void sync() override;
  Check verify(std::uint64_t seed) override;
  std::map<std::string, std::string> details() const override { return details_; }
  std::unique_ptr<SampleTimer> own_timer(const Case& c) override;
  // The worker draws `copies` input sets and its calls (and graphs) go over them in turn; a
  // whole model's copies share its weights (worker/model_case.py), and a user kernel's copies
  // may share its state: there only x rotates.
  bool rotates_inputs(const Case& c) const override { return c.op != "model" && !kernel_; }
  // An op with lookup tables: sets 1.. get their own indices and share the tables in turn
  // (`set_inputs`, `tables`); a user kernel's copies are its own affair.
  bool shares_tables() const override { return !kernel_; }
  // The worker's framework counts its device allocations (CUDA); elsewhere: unknown.
  bool allocates_elsewhere() const override { return true; }
  std::optional<std::size_t> own_peak_memory() override { return peak_memory_; }
  // The worker's untimed pass (worker/case_profile.py): a PyTorch profiler trace, the case's
  // peak memory, on CUDA a memory snapshot; written to the request's folder.
  std::map<std::string, std::string> profile(const ProfileRequest& request) override;

  // A request to the worker: the reply when it is ok; Unsupported for an `unsupported` reply,
  // std::runtime_error for an `error` one.
  nlohmann::json call(const nlohmann::json& request, double deadline_s);
  // Seconds per call of the last `run` request, timed in the worker.
  std::optional<double> last_call_seconds() const { return last_call_s_; }

 private:
  // Writes `tensors` to files in dir_ (names prefixed `prefix`); their descriptions for a request.
  nlohmann::json write_tensors(const HostTensors& tensors, const std::string& prefix);
  // An op with tables: each set's own draw of the other inputs, in files, and which are tables.
  void describe_sets(nlohmann::json& request, const SetupOptions& options);

  std::optional<UserKernel> kernel_;
  std::unique_ptr<OpSpec> spec_;  // null for a user kernel of an op opmeter does not know
  std::filesystem::path dir_;     // the tensor files
  WorkerProcess* worker_ = nullptr;
  std::size_t queued_ = 0, queued_copy_ = 0;  // calls run() asked for, sent at sync()
  std::optional<double> last_call_s_;
  std::optional<std::size_t> peak_memory_;  // from the worker's last check (or profile) reply
  bool on_device_ = false;                  // the case runs on a GPU
  std::map<std::string, std::string> details_;
};

}  // namespace opmeter::worker
