// One declaration per CUDA impl (include/opmeter/cuda/cuda_impl.hpp): opmeter and the CUDA plugin know the
// same impls, with the same dtypes, summaries and optional parameters, because both compile the
// same declarations; these tests fail if any impl is known to one side only.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/cuda/cuda_impl.hpp"
#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/registry.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {

ImplDef def(std::string op, std::string impl, std::vector<DType> dtypes) {
  return {.op = std::move(op), .impl = std::move(impl), .backends = {"cuda"}, .summary = "s", .dtypes = std::move(dtypes)};
}

// The CUDA impls opmeter declares: on the cuda backend, made by the plugin (not by a worker or a
// C plugin, which bring their own `make`).
[[maybe_unused]] std::vector<ImplDef> host_cuda_impls(bool with_cudnn) {
  std::vector<ImplDef> out;
  for (auto* op : Registry::global().ops())
    for (auto* impl : Registry::global().impls_of(op->name)) {
      if (!impl->runs_on("cuda") || impl->make || !impl->plugin.empty()) continue;
      if (!with_cudnn && (impl->impl == "cudnn" || impl->impl.starts_with("cudnn_"))) continue;
      out.push_back(*impl);
    }
  return out;
}

}  // namespace

TEST(CudaImplTables, AgreeingTablesHaveNoMismatch) {
  std::vector<ImplDef> t = {def("gemm", "cublas", {DType::fp32}), def("add", "cuda", {DType::fp16, DType::bf16})};
  EXPECT_TRUE(cuda::impl_table_mismatches(t, t).empty());
}

TEST(CudaImplTables, AnImplOnOneSideOnlyIsAMismatch) {
  std::vector<ImplDef> host = {def("gemm", "cublas", {DType::fp32}), def("gemm", "cuda", {DType::fp32})};
  std::vector<ImplDef> plugin = {def("gemm", "cublas", {DType::fp32}), def("add", "cuda", {DType::fp32})};
  auto m = cuda::impl_table_mismatches(host, plugin);
  ASSERT_EQ(m.size(), 2u) << fmt::format("{}", fmt::join(m, "\n"));
  EXPECT_EQ(m[0], "gemm/cuda: declared in opmeter, not in the plugin");
  EXPECT_EQ(m[1], "add/cuda: in the plugin, not declared in opmeter");
}

TEST(CudaImplTables, DifferentDtypesOrSummariesAreMismatches) {
  std::vector<ImplDef> host = {def("gemm", "cublas", {DType::fp32, DType::bf16}), def("add", "cuda", {DType::fp32})};
  std::vector<ImplDef> plugin = {def("gemm", "cublas", {DType::fp32}), def("add", "cuda", {DType::fp32})};
  plugin[1].summary = "another summary";
  auto m = cuda::impl_table_mismatches(host, plugin);
  ASSERT_EQ(m.size(), 2u) << fmt::format("{}", fmt::join(m, "\n"));
  EXPECT_EQ(m[0], "gemm/cublas: dtypes fp32,bf16 in opmeter, fp32 in the plugin");
  EXPECT_NE(m[1].find("add/cuda: summary"), std::string::npos) << m[1];
}

TEST(CudaImplTables, ADeclarationBecomesAHostImplOnTheCudaBackend) {
  auto d = cuda::host_def({.op = "add", .impl = "cuda", .summary = "k", .dtypes = {DType::fp32}, .needs = {"quant"}});
  EXPECT_EQ(d.backends, std::vector<std::string>{"cuda"});
  EXPECT_FALSE(d.make);  // the plugin makes it
  EXPECT_EQ(d.needs, std::vector<std::string>{"quant"});
  ASSERT_TRUE(d.supports);  // none declared: every case, as for any ImplDef
  EXPECT_TRUE(d.supports(Case{}).ok);
}

// The real tables: the plugin loads without a GPU (it needs the CUDA runtime libraries, not a
// driver), so a CUDA build checks them on every machine.
TEST(CudaImplTables, OpmeterAndThePluginKnowTheSameCudaImpls) {
#ifndef OPMETER_HAVE_CUDA
  GTEST_SKIP() << "this opmeter was built without CUDA: no plugin to compare with";
#else
  auto* p = cuda::plugin();
  ASSERT_NE(p, nullptr) << cuda::load_reason();
  // cuDNN's impls are the cuDNN module's: compared where it loads (it needs libcudnn.so.9).
  const bool cudnn = p->versions().contains("cudnn");
  auto host = host_cuda_impls(cudnn);
  auto plugin = p->impls();
  EXPECT_GT(host.size(), 20u);  // the check compares something
  auto m = cuda::impl_table_mismatches(host, plugin);
  EXPECT_TRUE(m.empty()) << fmt::format("{}", fmt::join(m, "\n"));
  if (!cudnn) GTEST_SKIP() << "cuDNN's impls not compared: " << p->versions().value("cudnn_unavailable", "");
#endif
}

// The declarations are compiled into opmeter, so a machine where the plugin does not load (no
// CUDA libraries, or a build without CUDA) still lists every CUDA impl, with the reason.
TEST(CudaImplTables, WithoutThePluginOpmeterStillListsEveryCudaImpl) {
  const std::string cmd = "env OPMETER_CUDA_PLUGIN=/nonexistent/libopmeter_cuda.so " + std::string(opmeter_testbin()) + " list 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) text += buf.data();
  ASSERT_EQ(WEXITSTATUS(pclose(p)), 0) << text;
  auto host = host_cuda_impls(true);
  EXPECT_GT(host.size(), 20u);
  for (auto& impl : host)
    EXPECT_NE(text.find("[cuda] " + impl.summary), std::string::npos) << impl.op << "/" << impl.impl << " is not listed";
#ifdef OPMETER_HAVE_CUDA
  EXPECT_NE(text.find("unavailable here: the CUDA plugin was not found"), std::string::npos) << text.substr(0, 2000);
#endif
}
