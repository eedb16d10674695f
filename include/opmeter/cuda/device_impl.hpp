#pragma once
// A CUDA impl of any op with a spec: one device buffer per input tensor of the spec and one for
// its output, the spec's host inputs uploaded at setup, and the check through the spec on the
// output brought back (verify_on_device). Derive from DeviceImpl<TheOpSpec> and implement
// launch(): enqueue the op's kernels on stream() reading in(i) and writing out().
//
//   class CudaGelu : public cuda::DeviceImpl<activation::ActivationOp> {
//     void launch() override { gelu<<<grid, block, 0, stream()>>>(in(0), out(), n); }
//   };
//
// An impl that reads its inputs only through in() in launch() and prepare() may say so
// (rotates_inputs): cold cases in graph mode then get copies of the inputs, and each call reads
// the next (the output is shared: a cold sample is about what the op reads). An op with lookup
// tables: each set's own indices, tables shared as SetupOptions::table_copies says.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "opmeter/op_spec.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::cuda {

template <class Spec>
class DeviceImpl : public Impl, public Spec {
 public:
  using Spec::Spec;
  void setup(const Case& c, const SetupOptions& options) override {
    this->bind(c);
    device_ = c.device_index();
    stream_ = cuda::stream(device_);
    inputs_.clear();
    for (const TensorDesc& t : this->inputs()) inputs_.emplace_back(t.bytes());
    output_ = DeviceBuffer(this->output().bytes());
    upload_inputs(*this, options.seed, io());
    set_ = 0;
    copies_.clear();
    table_copies_ = options.table_copies;
    const bool tables = this->has_tables();
    for (std::size_t s = 1; s < options.copies && this->rotates_inputs(c); ++s) {
      auto& set = copies_.emplace_back();
      for (std::size_t i = 0; i < inputs_.size(); ++i) {
        if (tables && this->is_table(i) && table_owner(s, table_copies_) != s) {
          set.emplace_back();  // read from the owner's copy (in())
        } else if (tables && !this->is_table(i)) {
          HostTensor mine(this->inputs()[i]);  // the set's own indices
          this->fill_input(mine, i, set_seed(options.seed, s));
          set.emplace_back(mine.bytes());
          upload(set.back().data(), mine.data(), mine.bytes(), stream_);
          check(cudaStreamSynchronize(stream_), "upload");  // `mine` is freed on return
        } else {
          set.push_back(copy_of(inputs_[i], stream_));
        }
      }
    }
    prepare();
  }
  bool shares_tables() const override { return true; }
  void run(std::size_t copy) override {
    set_ = copy <= copies_.size() ? copy : 0;
    launch();
    check(cudaGetLastError(), "kernel launch");
  }
  void sync() override { check(cudaStreamSynchronize(stream_), "kernel"); }
  Check verify(std::uint64_t seed) override {
    set_ = 0;  // the check's inputs go to set 0, and prepare() reads them there
    return verify_on_device(*this, seed, io(), [this] {
      prepare();  // impls that transform inputs once (folded or reordered weights) see the new ones
      run(0);
      sync();
    });
  }

 protected:
  // Enqueues one call of the op on stream(); no synchronization.
  virtual void launch() = 0;
  // After the inputs are on the device: in setup and again before each check (handles, plans,
  // transformed weights).
  virtual void prepare() {}

  // Input i of the set the current call reads (set 0 outside timing).
  void* in(std::size_t i) const {
    const std::size_t s = this->is_table(i) ? table_owner(set_, table_copies_) : set_;
    return (s == 0 ? inputs_ : copies_[s - 1]).at(i).data();
  }
  void* out() const { return output_.data(); }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

 private:
  DeviceIo io() {
    return {.upload = [this](std::size_t i, const HostTensor& t) { upload(inputs_.at(i).data(), t.data(), t.bytes(), stream_); },
            .fill_output = [this](int byte) { fill(output_.data(), byte, output_.bytes(), stream_); },
            .download_output = [this](HostTensor& t) { download(t.data(), output_.data(), t.bytes(), stream_); }};
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::vector<DeviceBuffer> inputs_;                // set 0: what the spec's inputs are uploaded to
  std::vector<std::vector<DeviceBuffer>> copies_;   // sets 1.. of a rotating impl's cold case
  std::size_t table_copies_ = 0;                    // sets share tables (OpSpec::is_table): table_owner
  std::size_t set_ = 0;
  DeviceBuffer output_;
};

}  // namespace opmeter::cuda
