// impl `opmeter`: one OpenMP pass over the elements, a loop the compiler vectorizes (bf16 is
// widened to fp32 and rounded back in registers).
#include <cstdint>

#include "opmeter/registry.hpp"
#include "ops/add/add.hpp"

namespace opmeter::add {
namespace {

class OpmeterAdd : public HostImpl<AddSpec> {
 public:
  void run(std::size_t copy) override {
    const auto n = static_cast<std::int64_t>(n_);
    if (elem_ == Elem::bf16) {
      const auto* a = static_cast<const std::uint16_t*>(in(copy, kA));
      const auto* b = static_cast<const std::uint16_t*>(in(copy, kB));
      auto* c = static_cast<std::uint16_t*>(out(copy));
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < n; ++i) c[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
    } else {
      const auto* a = static_cast<const float*>(in(copy, kA));
      const auto* b = static_cast<const float*>(in(copy, kB));
      auto* c = static_cast<float*>(out(copy));
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
    }
  }
};

ImplRegistrar reg({
    .op = "add",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "OpenMP loop over the elements, vectorized by the compiler",
    .dtypes = {DType::fp32, DType::bf16},
    .make = [] { return std::make_unique<OpmeterAdd>(); },
});

}  // namespace
}  // namespace opmeter::add
