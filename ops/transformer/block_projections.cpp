#include "ops/transformer/block_projections.hpp"

#include <algorithm>

#include "ops/transformer/transformer_onednn.hpp"

namespace opmeter::transformer {

void BlockProjections::prepare(const Shape& s, DType dtype, std::size_t copies, ProjectionSteps steps,
                               const InputOf& input) {
  steps_ = std::move(steps);
  seq_.clear();
  const std::size_t r = s.rows(), h = s.hidden, m = s.mlp;
  on_amx_ = dtype == DType::bf16 && tensor::AmxProjection::fits(r, h, m);
  if (on_amx_) return amx_.prepare(r, {h, m}, h * std::max(3 * h, m));
  const OnednnDescs md(s, dtype);
  for (auto p : {proj_qkv, proj_o, proj_w1, proj_w2}) add_block_projection(seq_, copies, md, p, steps_, input);
}

void BlockProjections::run(BlockProjection p, std::size_t copy, const HostTensors& in) {
  if (!on_amx_) return seq_.run_step(p, copy);
  const ProjectionStep st = steps_(p, copy);
  amx_.run(st.a, in[st.w].data(), in[st.bias].as<float>(), st.y, st.in, st.out, st.act, st.residual);
}

std::map<std::string, std::string> BlockProjections::onednn_details() const {
  return on_amx_ ? std::map<std::string, std::string>{} : seq_.details();
}

}  // namespace opmeter::transformer
