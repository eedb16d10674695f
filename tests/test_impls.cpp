// Impls registered only in test binaries: they prove the correctness gate and isolation work.
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <thread>

#include "opmeter/registry.hpp"
#include "ops/gemm/gemm.hpp"

namespace opmeter::testing {
namespace {

// Computes C = A*B^T correctly except one element: the gate must catch a single wrong value.
class WrongGemm : public gemm::GemmImpl {
 public:
  void run(std::size_t copy) override {
    auto* A = static_cast<float*>(a(copy));
    auto* B = static_cast<float*>(b(copy));
    auto* C = static_cast<float*>(c(copy));
    for (std::int64_t i = 0; i < d_.M; ++i)
      for (std::int64_t j = 0; j < d_.N; ++j) {
        float acc = 0;
        for (std::int64_t k = 0; k < d_.K; ++k) acc += A[i * d_.K + k] * B[j * d_.K + k];
        C[i * d_.N + j] = acc;
      }
    C[0] += 0.5f;
  }
};

// Leaves the last row of C unwritten: the poisoned output must give it away.
class LazyGemm : public WrongGemm {
 public:
  void run(std::size_t copy) override {
    auto saved = d_.M;
    d_.M -= 1;
    WrongGemm::run(copy);
    static_cast<float*>(c(copy))[0] -= 0.5f;
    d_.M = saved;
  }
};

class CrashingGemm : public WrongGemm {
 public:
  void run(std::size_t) override { std::raise(SIGSEGV); }
};

class HangingGemm : public WrongGemm {
 public:
  void run(std::size_t) override {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
};

// Cannot set up (a library refusing mid-way): the case is `error`, and the next case runs.
class ThrowingGemm : public WrongGemm {
 public:
  void setup(const Case&, const SetupOptions&) override { throw std::runtime_error("test: setup went wrong"); }
};

}  // namespace

// Calls of CountingGemm::run since the start: how often a check calls the impl.
std::size_t counting_gemm_calls = 0;

namespace {

// A correct GEMM that counts its calls.
class CountingGemm : public WrongGemm {
 public:
  void run(std::size_t copy) override {
    ++counting_gemm_calls;
    WrongGemm::run(copy);
    static_cast<float*>(c(copy))[0] -= 0.5f;
  }
};

template <class T>
ImplDef test_impl(const char* name) {
  return {.op = "gemm", .impl = name, .summary = "test only", .dtypes = {DType::fp32},
          .make = [] { return std::make_unique<T>(); }};
}

ImplRegistrar reg_wrong(test_impl<WrongGemm>("test_wrong"));
ImplRegistrar reg_lazy(test_impl<LazyGemm>("test_lazy"));
ImplRegistrar reg_crash(test_impl<CrashingGemm>("test_crash"));
ImplRegistrar reg_hang(test_impl<HangingGemm>("test_hang"));
ImplRegistrar reg_throw(test_impl<ThrowingGemm>("test_throw"));
ImplRegistrar reg_count(test_impl<CountingGemm>("test_count"));

// An op with a CPU impl only, for the tests of what a CUDA run says about ops it cannot run
// (every real op may get a CUDA impl some day). No defaults: sweeping tests leave it out.
const bool cpu_only_op = [] {
  Registry::global().add(OpDef{.name = "test_cpu_only",
                               .summary = "test only: an op without a CUDA impl",
                               .params = {"n"},
                               .example = {{"n", "8"}},
                               .work = [](const Case&) { return Work{}; },
                               .footprint = [](const Case&) { return 0.0; }});
  Registry::global().add(ImplDef{.op = "test_cpu_only", .impl = "test_cpu", .summary = "test only", .dtypes = {DType::fp32},
                                 .make = [] { return std::make_unique<WrongGemm>(); }});
  return true;
}();

}  // namespace
}  // namespace opmeter::testing
