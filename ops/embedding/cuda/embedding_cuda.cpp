// impl `cuda`: the embedding spec's host inputs (ids and table) uploaded, our gather kernel
// (embedding_kernel.cu), the output brought back for the spec's check.
#include <fmt/format.h>

#include "ops/embedding/cuda/embedding_kernel.hpp"
#include "ops/embedding/embedding.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::embedding {
namespace {

class CudaEmbedding : public cuda::DeviceImpl<EmbeddingOp> {
 public:
  bool rotates_inputs(const Case&) const override { return true; }  // launch() reads them through in()
  std::map<std::string, std::string> details() const override {
    return {{"kernel", fmt::format("row gather, {}-byte copies", access_width())}};
  }

 private:
  std::int64_t row_bytes() const { return static_cast<std::int64_t>(out_cols() * elem_bytes(act())); }
  int access_width() const { return row_bytes() % 16 == 0 ? 16 : int(elem_bytes(act())); }
  void launch() override {
    launch_gather(static_cast<const std::int32_t*>(in(kIds)), in(kTable), out(),
                           static_cast<std::int64_t>(out_rows()), row_bytes(), static_cast<std::int64_t>(elem_bytes(act())),
                           static_cast<std::int64_t>(vocab()), stream());
  }
};

}  // namespace

// The plugin's half of this impl, named by its declaration in embedding_cuda_impls.cpp.
cuda::Factory cuda_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps& p) { return cuda::own_kernels_run_on(p); },
      .make = [] { return std::make_unique<CudaEmbedding>(); },
  };
}

}  // namespace opmeter::embedding
