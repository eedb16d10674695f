#pragma once
// cuDNN 9's graph (backend) API in a few RAII types: descriptors, tensors, operations, one
// operation graph, the engines cuDNN's heuristics propose, the first execution plan that
// finalizes, and a variant pack built once and executed many times. Part of the cuDNN module
// (libopmeter_cudnn.so), never of the CUDA plugin: only the module links libcudnn.
//
// Whatever cuDNN refuses while a graph is built (a NOT_SUPPORTED status, no engine that
// finalizes) throws Unsupported with cuDNN's own reason, so the case is `skipped`; other failures
// (bad parameters, execution) throw std::runtime_error and the case is an `error`.
#include <cudnn.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "opmeter/dtype.hpp"
#include "opmeter/cuda/cudnn_engine_choice.hpp"

namespace opmeter::cudnn {

// "what: CUDNN_STATUS_... (cuDNN's last error message)".
std::string describe(cudnnStatus_t s, const std::string& what);
// Throws Unsupported when cuDNN says it cannot (a NOT_SUPPORTED status), std::runtime_error on
// any other failure.
void check(cudnnStatus_t s, const std::string& what);

// cuDNN's element type of a case's 16/32-bit float dtype.
cudnnDataType_t data_type(DType d);

// One cudnnHandle_t bound to a stream.
class Handle {
 public:
  explicit Handle(cudaStream_t stream);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

// One backend descriptor (cudnnBackendCreateDescriptor .. Destroy).
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type, std::string name);
  ~Descriptor();
  Descriptor(Descriptor&& o) noexcept : d_(o.d_), name_(std::move(o.name_)) { o.d_ = nullptr; }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

  Descriptor& set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, std::int64_t count, const void* v);
  Descriptor& set_int(cudnnBackendAttributeName_t a, std::int64_t v) { return set(a, CUDNN_TYPE_INT64, 1, &v); }
  Descriptor& set_ints(cudnnBackendAttributeName_t a, const std::vector<std::int64_t>& v) {
    return set(a, CUDNN_TYPE_INT64, std::int64_t(v.size()), v.data());
  }
  Descriptor& set_type(cudnnBackendAttributeName_t a, cudnnDataType_t v) { return set(a, CUDNN_TYPE_DATA_TYPE, 1, &v); }
  Descriptor& set_float(cudnnBackendAttributeName_t a, float v) { return set(a, CUDNN_TYPE_FLOAT, 1, &v); }
  Descriptor& set_desc(cudnnBackendAttributeName_t a, const Descriptor& d) {
    auto p = d.get();
    return set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
  }
  Descriptor& finalize();

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  std::string name_;  // for messages
};

// A tensor of the graph: its descriptor and unique id.
struct Tensor {
  const Descriptor* desc = nullptr;
  std::int64_t uid = 0;
};

// Packed strides of `dims` in the order given by `order` (innermost last), e.g. NHWC of NCHW
// dims is order {0, 2, 3, 1}.
std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& dims, const std::vector<int>& order);
std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims);

// The operations a graph is built of. Inputs and outputs are Tensors made by the same Graph.
// Moved into the Plan built from it; its Tensors stay valid (a moved deque keeps its elements
// where they are).
class Graph {
 public:
  Tensor tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides, cudnnDataType_t type);
  Tensor virtual_tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
                        cudnnDataType_t type);
  // A scalar passed by value at execution (its host address goes into the variant pack).
  Tensor scalar(int rank, cudnnDataType_t type);

  struct PointwiseOptions {
    cudnnDataType_t math = CUDNN_DATA_FLOAT;
    std::optional<std::int64_t> axis;          // GEN_INDEX
    std::optional<float> relu_upper_clip;      // relu6
    std::optional<float> relu_lower_clip_slope;  // leaky relu
    std::optional<float> swish_beta;           // silu
  };
  // y = mode(x [, b [, t]]): BINARY_SELECT is y = t ? x : b.
  void pointwise(cudnnPointwiseMode_t mode, Tensor x, std::optional<Tensor> b, std::optional<Tensor> t, Tensor y,
                 const PointwiseOptions& o);
  void pointwise(cudnnPointwiseMode_t mode, Tensor x, std::optional<Tensor> b, Tensor y) {
    pointwise(mode, x, b, std::nullopt, y, PointwiseOptions{});
  }
  void reduction(cudnnReduceTensorOp_t mode, Tensor x, Tensor y);
  // c = a b over the last two dimensions, batched over the others; fp32 accumulation.
  void matmul(Tensor a, Tensor b, Tensor c);
  // 2-D cross-correlation; fp32 accumulation. Groups follow from x's and w's channel counts.
  void conv_fprop(Tensor x, Tensor w, Tensor y, std::int64_t stride, std::int64_t pad);

  const std::deque<Descriptor>& operations() const { return ops_; }

 private:
  Tensor add_tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides, cudnnDataType_t type,
                    bool is_virtual, bool by_value);
  std::deque<Descriptor> tensors_, ops_, parts_;  // deque: addresses stay put as it grows
  std::int64_t next_uid_ = 1;
};

// The graph finalized for a handle, and the first engine configuration cuDNN's heuristics
// (mode A, then the fallback list) propose that computes in the graph's precision
// (engine_choice.hpp: no TF32 for fp32) and finalizes into an execution plan. The plan owns
// everything it was built from: the graph's operation and tensor descriptors, the operation graph
// and the engine configuration live exactly as long as the execution plan (the backend API does
// not promise that a finalized descriptor copied what it refers to; cuDNN's frontend keeps them
// alive the same way).
class Plan {
 public:
  // `dtype`: the case's data type, the precision the engines must keep.
  Plan(const Handle& handle, Graph graph, DType dtype, const std::string& what);
  std::int64_t workspace_bytes() const { return workspace_; }
  // Which engine runs it: "engine N" (cuDNN's global index), its numerical notes, and how many
  // candidates were tried.
  const std::string& engine() const { return engine_; }
  // Binds tensors (by uid) and the workspace: one variant pack, reused by every execute().
  void bind(const std::map<std::int64_t, void*>& pointers, void* workspace);
  void execute() const;

 private:
  const Handle* handle_;
  Graph graph_;  // declared first: destroyed last, after everything that refers to it
  std::optional<Descriptor> op_graph_, config_, plan_, pack_;
  std::vector<std::int64_t> uids_;
  std::vector<void*> pointers_;
  std::int64_t workspace_ = 0;
  std::string engine_, what_;
};

}  // namespace opmeter::cudnn
