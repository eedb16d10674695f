#include <gtest/gtest.h>

#include "opmeter/backend.hpp"
#include "opmeter/case.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/pipeline.hpp"
#include "config/config.hpp"
#include "config/pipeline_flags.hpp"
#include "config/suites.hpp"

using namespace opmeter;

TEST(CaseString, RoundTrips) {
  Case c;
  c.op = "gemm";
  c.impl = "onednn";
  c.dtype = DType::bf16;
  c.set("M", 4096).set("N", 2048).set("K", 1024);
  c.threads = 2;
  EXPECT_EQ(c.to_string(), "gemm/onednn/bf16/M=4096,N=2048,K=1024/threads=2");
  EXPECT_EQ(parse_case(c.to_string()), c);
  c.hot = true;
  EXPECT_EQ(c.to_string(), "gemm/onednn/bf16/M=4096,N=2048,K=1024/threads=2,hot");
  EXPECT_EQ(parse_case(c.to_string()), c);
}

TEST(CaseString, ParametersComeOutInTheOpsOrderHoweverTheyWereWritten) {
  Case c = parse_case("gemm/onednn/fp32/K=64,M=16,N=32/threads=1");
  EXPECT_EQ(c.to_string(), "gemm/onednn/fp32/M=16,N=32,K=64/threads=1");
  EXPECT_EQ(c, parse_case("gemm/onednn/fp32/N=32,K=64,M=16/threads=1"));
  // Optional parameters after the op's own, whatever came first.
  EXPECT_EQ(parse_case("linear/opmeter/bf16/quant=int8wo,batch=1,seq=1,hidden=64,out=32/threads=1").to_string(),
            "linear/opmeter/bf16/batch=1,seq=1,hidden=64,out=32,quant=int8wo/threads=1");
  // An op opmeter does not know keeps the order it was given.
  EXPECT_EQ(parse_case("nosuchop/x/fp32/b=1,a=2/threads=1").to_string(), "nosuchop/x/fp32/b=1,a=2/threads=1");
}

TEST(CaseString, EverySuitesAndPipelinesCaseStringRoundTrips) {
  for (const std::string device : {"cpu", "cuda:0"}) {
    std::vector<Plan> plans;
    for (auto& [name, text] : builtin_suites()) plans.push_back(load_suite(name, 2, device));
    for (auto* p : pipeline::Registry::global().all()) plans.push_back(load_pipeline_flags({p->name}, 2, device));
    std::size_t checked = 0;
    for (auto& plan : plans)
      for (auto& c : plan.cases) {
        ASSERT_EQ(parse_case(c.to_string()).to_string(), c.to_string()) << device;
        ++checked;
      }
    EXPECT_GT(checked, 100u) << device;
  }
}

TEST(CaseString, BadStringsSayWhatIsWrong) {
  auto message = [](const std::string& s) {
    try {
      parse_case(s);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("gemm/onednn/fp32").find("must have 5 parts"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp33/M=1,N=1,K=1/threads=1").find("unknown dtype 'fp33'"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M1/threads=1").find("'M1' is not key=value"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=1,N=1,K=1/threads=0").find("threads must be"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=1,N=1,K=1/fast").find("unknown setting 'fast'"), std::string::npos);
  // CUDA settings.
  EXPECT_NE(message("gemm/cublas/fp32/M=1,N=1,K=1/device=gpu0").find("unknown device 'gpu0' (expected cpu or cuda:N"),
            std::string::npos);
  EXPECT_NE(message("gemm/cublas/fp32/M=1,N=1,K=1/device=cuda:0,threads=2").find("threads=N is for CPU cases"),
            std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=1,N=1,K=1/threads=2,graph=10").find("graph=N (CUDA Graph mode) needs device=cuda:N"),
            std::string::npos);
  EXPECT_NE(message("gemm/cublas/fp32/M=1,N=1,K=1/device=cuda:0,graph=0").find("graph must be"), std::string::npos);
  // A setting twice: which one holds is not the parser's to choose.
  EXPECT_NE(message("gemm/onednn/fp32/M=1,N=1,K=1/threads=1,threads=2").find("setting 'threads' is given twice"),
            std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=1,N=1,K=1/threads=1,hot,hot").find("setting 'hot' is given twice"), std::string::npos);
}

TEST(CaseValidation, UnknownOpImplAndParameters) {
  auto message = [](const std::string& s) {
    try {
      validate_case(parse_case(s));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("gemm/onednn/fp32/M=8,N=8,K=8/threads=1"), "no error");
  EXPECT_NE(message("gemn/onednn/fp32/M=8,N=8,K=8/threads=1").find("unknown op 'gemn'"), std::string::npos);
  EXPECT_NE(message("gemm/mkl/fp32/M=8,N=8,K=8/threads=1").find("has no impl 'mkl'"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=8,N=8/threads=1").find("lacks parameter 'K'"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=8,N=8,K=8,X=1/threads=1").find("no parameter 'X'"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=0,N=8,K=8/threads=1").find("M=0 out of range"), std::string::npos);
  EXPECT_NE(message("gemm/onednn/fp32/M=x,N=8,K=8/threads=1").find("M=x is not an integer"), std::string::npos);
  EXPECT_NE(message("bandwidth/opmeter/fp32/kernel=copi,n=64/threads=1").find("kernel 'copi' unknown"), std::string::npos);
  EXPECT_NE(message("peak/opmeter/fp32/kernel=add/threads=1").find("expected fma"), std::string::npos);
}

TEST(CaseValidation, EveryOpsExampleIsAValidCase) {
  for (auto* op : Registry::global().ops())
    for (auto* impl : Registry::global().impls_of(op->name)) {
      Case c;
      c.op = op->name;
      c.impl = impl->impl;
      c.params = op->example;
      if (Backend* b = backend_named(impl->backends.front())) c.device = b->first_device();
      EXPECT_NO_THROW(validate_case(c)) << op->name << "/" << impl->impl;
    }
}
