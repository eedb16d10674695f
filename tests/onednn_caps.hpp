#pragma once
// What this CPU's oneDNN runs: bf16 primitives need AVX-512 (a plain AVX2 machine has none), and
// the tests of bf16 cases that go through oneDNN skip there, saying why. Matmul is asked; in
// oneDNN 2.6 its convolution, pooling and reorders of bf16 share the same avx512_core gate.
#include <gtest/gtest.h>

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "opmeter/result.hpp"

namespace opmeter::testing {

inline bool onednn_has_bf16() {
  static const bool yes = [] {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    try {
      dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      dnnl::memory::desc a({8, 8}, dt::bf16, tag::ab), c({8, 8}, dt::f32, tag::ab);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, c), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return yes;
}

// Whether `r` is a bf16 case of oneDNN's that this CPU cannot run: then it must be `skipped`,
// saying oneDNN has none (checked here), and the caller moves on.
inline bool skipped_for_want_of_onednn_bf16(const Result& r, bool uses_onednn, bool bf16) {
  if (!uses_onednn || !bf16 || onednn_has_bf16()) return false;
  EXPECT_EQ(r.status, Status::skipped) << r.case_string << ": " << r.reason;
  EXPECT_NE(r.reason.find("oneDNN has no"), std::string::npos) << r.reason;
  return true;
}

inline const char* kNoOnednnBf16 = "oneDNN has no bf16 matmul on this CPU (it needs AVX-512): its bf16 cases are skipped here";

}  // namespace opmeter::testing

#define REQUIRE_ONEDNN_BF16() \
  if (!opmeter::testing::onednn_has_bf16()) GTEST_SKIP() << opmeter::testing::kNoOnednnBf16
