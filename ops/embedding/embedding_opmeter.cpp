// impl `opmeter`: rows spread over OpenMP threads, each gathered with one memcpy.
#include <cstdint>
#include <cstring>

#include "opmeter/registry.hpp"
#include "ops/embedding/embedding.hpp"

namespace opmeter::embedding {
namespace {

class OpmeterEmbedding : public HostImpl<EmbeddingOp> {
 public:
  void run(std::size_t copy) override {
    const auto rows = static_cast<std::int64_t>(out_rows());
    const std::size_t row_bytes = out_cols() * elem_bytes(act());
    const auto vocab_size = static_cast<std::int64_t>(vocab());
    const auto* ids = static_cast<const std::int32_t*>(in(copy, kIds));
    const auto* table = static_cast<const char*>(in(copy, kTable));
    auto* y = static_cast<char*>(out(copy));
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t id = ids[r];
      // An id outside the table leaves its row unwritten: the check reports it, nothing reads past the table.
      if (id < 0 || id >= vocab_size) continue;
      std::memcpy(y + std::size_t(r) * row_bytes, table + std::size_t(id) * row_bytes, row_bytes);
    }
  }
};

ImplRegistrar reg({
    .op = "embedding",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "OpenMP over rows, one memcpy per gathered row",
    .dtypes = {DType::fp32, DType::bf16},
    .make = [] { return std::make_unique<OpmeterEmbedding>(); },
});

}  // namespace
}  // namespace opmeter::embedding
