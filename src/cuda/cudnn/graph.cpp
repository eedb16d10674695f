#include "opmeter/cuda/cudnn_graph.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "opmeter/op.hpp"

namespace opmeter::cudnn {

std::string describe(cudnnStatus_t s, const std::string& what) {
  char last[1024] = {};
  cudnnGetLastErrorString(last, sizeof last);
  std::string text = fmt::format("cuDNN {}: {}", what, cudnnGetErrorString(s));
  if (last[0]) text += fmt::format(" ({})", last);
  return text;
}

void check(cudnnStatus_t s, const std::string& what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  // cuDNN 9 groups its statuses by thousands: 3xxx say "this is not supported".
  if (int(s) / 1000 == int(CUDNN_STATUS_NOT_SUPPORTED) / 1000) throw Unsupported(describe(s, what));
  throw std::runtime_error(describe(s, what));
}

cudnnDataType_t data_type(DType d) {
  switch (d) {
    case DType::fp16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::fp32: return CUDNN_DATA_FLOAT;
    default: throw Unsupported(fmt::format("cuDNN impls take fp32, fp16 and bf16, not {}", to_string(d)));
  }
}

Handle::Handle(cudaStream_t stream) {
  check(cudnnCreate(&h_), "cudnnCreate");
  if (auto s = cudnnSetStream(h_, stream); s != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(h_);
    check(s, "cudnnSetStream");
  }
}

Handle::~Handle() {
  if (h_) cudnnDestroy(h_);
}

Descriptor::Descriptor(cudnnBackendDescriptorType_t type, std::string name) : name_(std::move(name)) {
  check(cudnnBackendCreateDescriptor(type, &d_), "create " + name_);
}

Descriptor::~Descriptor() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

Descriptor& Descriptor::set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, std::int64_t count,
                            const void* v) {
  check(cudnnBackendSetAttribute(d_, a, t, count, v), fmt::format("{}: attribute {}", name_, int(a)));
  return *this;
}

Descriptor& Descriptor::finalize() {
  check(cudnnBackendFinalize(d_), "finalize " + name_);
  return *this;
}

std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& dims, const std::vector<int>& order) {
  std::vector<std::int64_t> strides(dims.size());
  std::int64_t s = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides.at(std::size_t(*it)) = s;
    s *= dims.at(std::size_t(*it));
  }
  return strides;
}

std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims) {
  std::vector<int> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  return strides_for(dims, order);
}

Tensor Graph::add_tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
                         cudnnDataType_t type, bool is_virtual, bool by_value) {
  const std::int64_t uid = next_uid_++;
  Descriptor& d = tensors_.emplace_back(CUDNN_BACKEND_TENSOR_DESCRIPTOR, fmt::format("tensor {}", uid));
  d.set_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
      .set_ints(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
      .set_ints(CUDNN_ATTR_TENSOR_STRIDES, strides)
      .set_int(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
      .set_int(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);
  if (is_virtual) {
    bool v = true;
    d.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
  }
  if (by_value) {
    bool v = true;
    d.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &v);
  }
  d.finalize();
  return {&d, uid};
}

Tensor Graph::tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides, cudnnDataType_t type) {
  return add_tensor(dims, strides, type, false, false);
}

Tensor Graph::virtual_tensor(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
                             cudnnDataType_t type) {
  return add_tensor(dims, strides, type, true, false);
}

Tensor Graph::scalar(int rank, cudnnDataType_t type) {
  std::vector<std::int64_t> ones(std::size_t(rank), 1);
  return add_tensor(ones, ones, type, false, true);
}

void Graph::pointwise(cudnnPointwiseMode_t mode, Tensor x, std::optional<Tensor> b, std::optional<Tensor> t, Tensor y,
                      const PointwiseOptions& o) {
  Descriptor& pw = parts_.emplace_back(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, fmt::format("pointwise mode {}", int(mode)));
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode).set_type(CUDNN_ATTR_POINTWISE_MATH_PREC, o.math);
  if (o.axis) pw.set_int(CUDNN_ATTR_POINTWISE_AXIS, *o.axis);
  if (o.relu_upper_clip) pw.set_float(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, *o.relu_upper_clip);
  if (o.relu_lower_clip_slope) pw.set_float(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, *o.relu_lower_clip_slope);
  if (o.swish_beta) pw.set_float(CUDNN_ATTR_POINTWISE_SWISH_BETA, *o.swish_beta);
  pw.finalize();
  Descriptor& op = ops_.emplace_back(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, fmt::format("pointwise op {}", int(mode)));
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *x.desc)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *y.desc);
  if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b->desc);
  if (t) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t->desc);
  op.finalize();
}

void Graph::reduction(cudnnReduceTensorOp_t mode, Tensor x, Tensor y) {
  Descriptor& r = parts_.emplace_back(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, fmt::format("reduction {}", int(mode)));
  r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode)
      .set_type(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
      .finalize();
  ops_.emplace_back(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, fmt::format("reduction op {}", int(mode)))
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r)
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, *x.desc)
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, *y.desc)
      .finalize();
}

void Graph::matmul(Tensor a, Tensor b, Tensor c) {
  Descriptor& m = parts_.emplace_back(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
  m.set_type(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
  ops_.emplace_back(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op")
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, *a.desc)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, *b.desc)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, *c.desc)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, m)
      .finalize();
}

void Graph::conv_fprop(Tensor x, Tensor w, Tensor y, std::int64_t stride, std::int64_t pad) {
  Descriptor& conv = parts_.emplace_back(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution");
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set_type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set_int(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2)
      .set_ints(CUDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1})
      .set_ints(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {stride, stride})
      .set_ints(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {pad, pad})
      .set_ints(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {pad, pad})
      .finalize();
  ops_.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "convolution forward op")
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x.desc)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w.desc)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *y.desc)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f)
      .set_float(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f)
      .finalize();
}

namespace {

// The engine configurations cuDNN's heuristics propose for a finalized graph in `mode`.
// Only the first `valid` of them were filled in.
std::vector<Descriptor> engine_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode, std::size_t& valid) {
  valid = 0;
  Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph).set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heur.finalize();
  std::int64_t count = 0;
  check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
        "engine heuristics: count");
  std::vector<Descriptor> configs;
  if (count <= 0) return configs;
  configs.reserve(std::size_t(count));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) raw.push_back(configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config").get());
  std::int64_t got = 0;
  check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                 raw.data()),
        "engine heuristics: results");
  valid = std::size_t(std::max<std::int64_t>(0, std::min(got, count)));
  return configs;
}

// What a finalized engine configuration's engine is: cuDNN's global index (-1 when unknown) and
// its numerical notes (none when cuDNN does not say).
struct EngineInfo {
  std::int64_t index = -1;
  std::optional<EngineNotes> notes;
};

EngineInfo engine_info(const Descriptor& config) {
  EngineInfo info;
  try {
    Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
    auto raw = engine.get();
    std::int64_t n = 0;
    if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw) !=
        CUDNN_STATUS_SUCCESS)
      return info;
    std::int64_t index = -1;
    if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) == CUDNN_STATUS_SUCCESS)
      info.index = index;
    std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
    std::int64_t count = 0;
    if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 std::int64_t(notes.size()), &count, notes.data()) != CUDNN_STATUS_SUCCESS)
      return info;
    EngineNotes e;
    for (std::int64_t i = 0; i < std::min<std::int64_t>(count, std::int64_t(notes.size())); ++i) {
      e.tensor_core |= notes[std::size_t(i)] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
      e.down_convert_inputs |= notes[std::size_t(i)] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
      e.reduced_precision_reduction |= notes[std::size_t(i)] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
    }
    info.notes = e;
  } catch (const std::exception&) {
  }
  return info;
}

}  // namespace

Plan::Plan(const Handle& handle, Graph graph, DType dtype, const std::string& what)
    : handle_(&handle), graph_(std::move(graph)), what_(what) {
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const Descriptor& op : graph_.operations()) ops.push_back(op.get());
  auto h = handle.get();
  op_graph_.emplace(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what + " operation graph");
  op_graph_->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
      .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::int64_t(ops.size()), ops.data());
  // A graph cuDNN does not take is refused, whatever the status says.
  if (auto s = cudnnBackendFinalize(op_graph_->get()); s != CUDNN_STATUS_SUCCESS)
    throw Unsupported(describe(s, "finalize " + what + " operation graph"));

  std::string last_refusal = "its heuristics proposed no engine";
  int tried = 0, imprecise = 0;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<Descriptor> configs;
    std::size_t valid = 0;
    try {
      configs = engine_configs(*op_graph_, mode, valid);
    } catch (const std::runtime_error& e) {  // Unsupported too: no configs in this mode
      last_refusal = e.what();
      continue;
    }
    for (std::size_t i = 0; i < valid; ++i) {
      Descriptor& config = configs[i];
      ++tried;
      const EngineInfo info = engine_info(config);
      // Unknown notes are no proof of fp32: only an engine that says what it does is taken for it.
      const std::string refusal = info.notes ? precision_refusal(dtype, *info.notes)
                                  : dtype == DType::fp32 ? "cuDNN does not say whether it uses tensor cores"
                                                         : "";
      if (!refusal.empty()) {
        ++imprecise;
        last_refusal = fmt::format("engine {}: {}", info.index, refusal);
        continue;
      }
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what + " execution plan");
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
          .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
      if (auto s = cudnnBackendFinalize(plan.get()); s != CUDNN_STATUS_SUCCESS) {
        last_refusal = describe(s, "finalize " + what + " execution plan");
        continue;
      }
      std::int64_t n = 0;
      check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &workspace_),
            "execution plan workspace size");
      engine_ = fmt::format("engine {} (candidate {} of cuDNN's heuristics; numerical notes: {}", info.index, tried,
                            info.notes ? notes_text(*info.notes) : "unknown");
      if (imprecise > 0) engine_ += fmt::format("; {} engine{} not {} skipped", imprecise, imprecise == 1 ? "" : "s", to_string(dtype));
      engine_ += ")";
      config_.emplace(std::move(config));
      plan_.emplace(std::move(plan));
      return;
    }
  }
  if (imprecise > 0 && imprecise == tried)
    throw Unsupported(fmt::format("cuDNN has no engine that computes {} in {} ({} candidate{}, each refused; last: {}); "
                                  "opmeter does not report a TF32 result as fp32",
                                  what, to_string(dtype), tried, tried == 1 ? "" : "s", last_refusal));
  throw Unsupported(fmt::format("cuDNN has no engine for {} ({} candidate{} tried{}): {}", what, tried,
                                tried == 1 ? "" : "s",
                                imprecise > 0 ? fmt::format(", {} of them not {}", imprecise, to_string(dtype)) : "",
                                last_refusal));
}

void Plan::bind(const std::map<std::int64_t, void*>& pointers, void* workspace) {
  uids_.clear();
  pointers_.clear();
  for (auto& [uid, p] : pointers) {
    uids_.push_back(uid);
    pointers_.push_back(p);
  }
  pack_.reset();
  pack_.emplace(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, what_ + " variant pack");
  pack_->set_ints(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids_)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, std::int64_t(pointers_.size()), pointers_.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
      .finalize();
}

void Plan::execute() const {
  if (!pack_) throw std::logic_error("cuDNN plan executed before bind()");
  // A NOT_SUPPORTED status here is cuDNN refusing the plan after all (skipped), anything else an error.
  check(cudnnBackendExecute(handle_->get(), plan_->get(), pack_->get()), "execute " + what_);
}

}  // namespace opmeter::cudnn
