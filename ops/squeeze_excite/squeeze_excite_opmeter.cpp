// impl `opmeter` of squeeze_excite: the CPU kernel of squeeze_excite_cpu.hpp on the spec's host inputs.
#include "ops/squeeze_excite/squeeze_excite_cpu.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::squeeze_excite {
namespace {

class OpmeterSqueezeExcite : public HostImpl<SqueezeExciteOp> {
 public:
  void prepare() override { scratch_.assign(cpu_scratch_floats(shape_of(case_)), 0.0f); }
  void run(std::size_t copy) override {
    const HostTensors& set = host_inputs(copy);
    run_cpu({.bf16 = bf16(),
             .x = in(copy, kX),
             .y = out(copy),
             .w1 = vec(set, kW1),
             .b1 = vec(set, kB1),
             .w2 = vec(set, kW2),
             .b2 = vec(set, kB2),
             .shape = shape_of(case_)},
            scratch_.data());
  }
  std::map<std::string, std::string> details() const override {
    return {{"kernel", "per sample: channel means, fp32 FCs, planes scaled; OpenMP over channels, omp-simd sweeps"}};
  }

 private:
  std::vector<float> scratch_;
};

const ImplRegistrar reg({
    .op = "squeeze_excite",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "opmeter's kernel: channel means, the two FCs in fp32, planes scaled while still in cache",
    .dtypes = {DType::fp32, DType::bf16},
    .make = [] { return std::make_unique<OpmeterSqueezeExcite>(); },
});

}  // namespace
}  // namespace opmeter::squeeze_excite
