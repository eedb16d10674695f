// The bandwidth op and its impl `opmeter`: our own OpenMP kernels, one contiguous range per thread.
#include "ops/bandwidth/bandwidth.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/backend.hpp"
#include "opmeter/buffer.hpp"
#include "config/config.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"

namespace opmeter::bandwidth {

namespace {
struct Named {
  const char* name;
  KernelSpec spec;
};
const Named kKernels[] = {
    {"copy", {Kind::copy, false, 2, 1, 1}},      {"scale", {Kind::scale, false, 2, 1, 1}},
    {"add", {Kind::add, false, 3, 2, 1}},        {"triad", {Kind::triad, false, 3, 2, 1}},
    {"read", {Kind::read, false, 1, 1, 0}},      {"write", {Kind::write, false, 1, 0, 1}},
    {"copy_nt", {Kind::copy, true, 2, 1, 1}},    {"scale_nt", {Kind::scale, true, 2, 1, 1}},
    {"add_nt", {Kind::add, true, 3, 2, 1}},      {"triad_nt", {Kind::triad, true, 3, 2, 1}},
    {"write_nt", {Kind::write, true, 1, 0, 1}},
};
}  // namespace

std::optional<KernelSpec> parse_kernel(const std::string& name) {
  for (auto& k : kKernels)
    if (name == k.name) return k.spec;
  return std::nullopt;
}

const std::vector<std::string>& kernel_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (auto& k : kKernels) v.push_back(k.name);
    return v;
  }();
  return names;
}

void fill_check_inputs(const KernelSpec& spec, float* const* arrays, std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  for (int a = 0; a < spec.arrays; ++a)
    for (std::size_t i = 0; i < n; ++i) arrays[a][i] = static_cast<float>(1 + rng.next() % 4);
  // The array the kernel writes starts as NaN, so elements it skips show.
  if (int out = output_array(spec); out >= 0) std::fill(arrays[out], arrays[out] + n, std::numeric_limits<float>::quiet_NaN());
}

std::vector<std::vector<float>> check_inputs(const KernelSpec& spec, std::size_t n, std::uint64_t seed) {
  std::vector<std::vector<float>> arrays(static_cast<std::size_t>(spec.arrays), std::vector<float>(n));
  std::vector<float*> p;
  for (auto& arr : arrays) p.push_back(arr.data());
  fill_check_inputs(spec, p.data(), n, seed);
  return arrays;
}

int output_array(const KernelSpec& spec) {
  switch (spec.kind) {
    case Kind::copy: case Kind::scale: return 1;
    case Kind::add: return 2;
    case Kind::triad: case Kind::write: return 0;
    case Kind::read: return -1;
  }
  return -1;
}

Check check_output(const KernelSpec& spec, const float* const* in, const float* out, std::size_t n) {
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float want = 0;
    switch (spec.kind) {
      case Kind::copy: want = in[0][i]; break;
      case Kind::scale: want = kScalar * in[0][i]; break;
      case Kind::add: want = in[0][i] + in[1][i]; break;
      case Kind::triad: want = in[1][i] + kScalar * in[2][i]; break;
      case Kind::write: want = kWriteValue; break;
      case Kind::read: break;
    }
    if (!(out[i] == want) && wrong++ == 0) first = i;
  }
  Check check;
  check.tolerance = 0;
  check.max_error = static_cast<double>(wrong) / static_cast<double>(n);
  check.ok = wrong == 0;
  check.detail = wrong ? fmt::format("{} of {} elements wrong, first at {} ({} instead of expected)", wrong, n, first, out[first])
                       : fmt::format("all {} elements exact", n);
  return check;
}

Check check_output(const KernelSpec& spec, const std::vector<std::vector<float>>& in, const float* out, std::size_t n) {
  std::vector<const float*> p;
  for (auto& arr : in) p.push_back(arr.data());
  return check_output(spec, p.data(), out, n);
}

Check check_sum(const float* input, std::size_t n, double got) {
  double expected = 0;
  for (std::size_t i = 0; i < n; ++i) expected += input[i];
  Check check;
  check.tolerance = 0;
  check.max_error = std::fabs(got - expected) / expected;
  check.ok = check.max_error == 0;
  check.detail = fmt::format("sum {} expected {}", got, expected);
  return check;
}

Check check_sum(const std::vector<float>& input, double got) { return check_sum(input.data(), input.size(), got); }

Kernels select_kernels() {
  if (cpu_info().has("avx512f")) return avx512_kernels();
  return cpu_info().has("avx2") ? avx2_kernels() : base_kernels();
}

std::int64_t passes_of(const Case& c) { return c.has(kPasses) ? c.get_int(kPasses) : 1; }

namespace {

class BandwidthImpl : public Impl {
 public:
  void setup(const Case& c, const SetupOptions& options) override {
    spec_ = *parse_kernel(c.get("kernel"));
    n_ = static_cast<std::size_t>(c.get_int("n"));
    passes_ = static_cast<int>(passes_of(c));
    threads_ = c.threads;
    kernels_ = select_kernels();
    sums_.assign(static_cast<std::size_t>(threads_) * 8, 0.0);  // one cache line per thread
    sets_.clear();
    for (std::size_t i = 0; i < options.copies; ++i) {
      std::vector<Buffer> arrays;
      for (int a = 0; a < spec_.arrays; ++a) arrays.emplace_back(n_ * sizeof(float));
      sets_.push_back(std::move(arrays));
    }
    Rng rng(options.seed);
    for (auto& set : sets_)
      for (auto& arr : set) fill_uniform_tiled(arr.span<float>(), rng, 0.5f, 1.5f);
  }

  void run(std::size_t copy) override {
    auto& s = sets_[copy];
    auto p = [&](int i) { return s[static_cast<std::size_t>(i)].as<float>(); };
#pragma omp parallel num_threads(threads_)
    {
      // Contiguous ranges whose starts are 64-byte aligned.
      std::size_t t = static_cast<std::size_t>(omp_get_thread_num()), nt = static_cast<std::size_t>(omp_get_num_threads());
      std::size_t chunk = (n_ / nt + 15) / 16 * 16;
      std::size_t begin = std::min(n_, t * chunk), end = t + 1 == nt ? n_ : std::min(n_, begin + chunk);
      std::size_t len = end - begin;
      double sum = 0;
      for (int pass = 0; pass < passes_; ++pass) {  // each thread over its own range again: no barrier
        switch (spec_.kind) {
          case Kind::copy: kernels_.copy(p(0) + begin, p(1) + begin, len, spec_.nt); break;
          case Kind::scale: kernels_.scale(p(0) + begin, p(1) + begin, len, spec_.nt); break;
          case Kind::add: kernels_.add(p(0) + begin, p(1) + begin, p(2) + begin, len, spec_.nt); break;
          case Kind::triad: kernels_.triad(p(0) + begin, p(1) + begin, p(2) + begin, len, spec_.nt); break;
          case Kind::write: kernels_.write(p(0) + begin, kWriteValue, len, spec_.nt); break;
          case Kind::read: sum += kernels_.read(p(0) + begin, len); break;
        }
      }
      if (spec_.kind == Kind::read) sums_[t * 8] = sum;
    }
  }

  Check verify(std::uint64_t seed) override {
    // The check's inputs go straight into the first set's buffers; the kernel leaves them intact
    // but for its output array.
    std::vector<float*> arrays;
    for (auto& buf : sets_.at(0)) arrays.push_back(buf.as<float>());
    fill_check_inputs(spec_, arrays.data(), n_, seed);
    std::fill(sums_.begin(), sums_.end(), 0.0);
    run(0);
    if (spec_.kind == Kind::read) {
      double got = 0;
      for (std::size_t t = 0; t < sums_.size(); t += 8) got += sums_[t];
      return check_sum(arrays[0], n_, got / passes_);  // each pass's sum is exact: so is their mean
    }
    std::vector<const float*> in(arrays.begin(), arrays.end());
    return check_output(spec_, in.data(), arrays[static_cast<std::size_t>(output_array(spec_))], n_);
  }

  std::map<std::string, std::string> details() const override { return {{"isa", kernels_.isa}}; }

 private:
  KernelSpec spec_{};
  std::size_t n_ = 0;
  int passes_ = 1;
  int threads_ = 1;
  Kernels kernels_{};
  std::vector<std::vector<Buffer>> sets_;
  std::vector<double> sums_;
};

Work bandwidth_work(const Case& c) {
  auto spec = parse_kernel(c.get("kernel"));
  double bytes = static_cast<double>(c.get_int("n")) * sizeof(float) * static_cast<double>(passes_of(c));
  if (!spec) return {};
  return {0, spec->reads * bytes, spec->writes * bytes};
}

// 1 GiB fp32 arrays: 20x the largest GPU L2 (50 MiB on an H100), where the device copy's rate
// has settled (3012 GB/s on an H100 at 1 GiB, docs/BENCHMARKS.md).
constexpr std::size_t kDeviceCeilingElements = std::size_t{1} << 28;

// The memory ceiling where `like` runs: a copy and a read by this op's impl on like's backend, of
// `elements` fp32 elements on the host (sized by its caches) and of kDeviceCeilingElements on a
// device. The ceiling is the faster (Ceilings::learn), as a calibration profile's is the fastest of
// its kernels: a layer that only reads its weights (a GEMV at decode) reads at a read's speed,
// above a copy's, and against a copy alone it showed over 100% of the bandwidth.
std::vector<Case> memory_ceiling_cases(DType, const Case& like, std::size_t elements) {
  const std::string backend = backend_of(like).name();
  if (!like.on_host()) elements = kDeviceCeilingElements;
  for (auto* impl : Registry::global().impls_of("bandwidth")) {
    if (!impl->runs_on(backend) || impl->on_request || elements == 0) continue;
    std::vector<Case> cases;
    for (const char* kernel : {"copy", "read"}) {
      Case c =
          ceiling_case("bandwidth", DType::fp32, {{"kernel", kernel}, {"n", std::to_string(elements)}}, like.threads);
      c.impl = impl->impl;
      c.device = like.device;
      cases.push_back(c);
    }
    return cases;
  }
  return {};
}

// Kernels and sizes from a config's `bandwidth:` section; by default every kernel on arrays
// sized to stream from memory.
std::vector<ParamSet> bandwidth_expand(const OpConfig& config) {
  std::vector<std::string> kernels = {"copy", "scale", "add", "triad", "read", "write"};
  std::vector<std::int64_t> sizes = {static_cast<std::int64_t>(default_bandwidth_elements(config.llc_bytes()))};
  if (config.has("bandwidth")) {
    auto b = config.section("bandwidth", {"kernels", "sizes_mib"});
    if (b->has("kernels")) {
      kernels = b->texts("kernels", "bandwidth.kernels");
      for (std::size_t i = 0; i < kernels.size(); ++i)
        if (!parse_kernel(kernels[i]))
          b->fail_at("kernels", i, unknown_name("bandwidth kernel", kernels[i], kernel_names()));
    }
    if (b->has("sizes_mib")) {
      sizes.clear();
      for (auto mib : b->integers("sizes_mib", "bandwidth.sizes_mib (MiB per array)", 1, 1 << 20))
        sizes.push_back(mib * (1 << 20) / static_cast<std::int64_t>(sizeof(float)));
    }
  }
  std::vector<ParamSet> out;
  for (auto& k : kernels)
    for (auto n : sizes) out.push_back({{{"kernel", k}, {"n", std::to_string(n)}}, ""});
  return out;
}

// `opmeter check`: every kernel on a prime n (a tail in every thread's share and vector), then
// on one element and on 2^16 + 1.
std::vector<Params> check_shapes() {
  std::vector<Params> out;
  for (auto n : {"1031", "1", "65537"})
    for (auto& k : kernel_names()) out.push_back({{"kernel", k}, {"n", n}});
  return out;
}

OpRegistrar reg_op({
    .name = "bandwidth",
    .summary = "memory bandwidth: copy, scale, add, triad, read, write (+ _nt non-temporal stores)",
    .params = {"kernel", "n"},
    .example = {{"kernel", "copy"}, {"n", "1024"}},
    .optional_params = {{.key = kPasses,
                         .config_key = kPasses,
                         .absent = "1",
                         .help = "times the kernel goes over its arrays in one call (cache levels: a call of a few KB "
                                 "would be its fixed cost)"}},
    .work = bandwidth_work,
    .footprint =
        [](const Case& c) {
          auto spec = parse_kernel(c.get("kernel"));
          return spec ? spec->arrays * static_cast<double>(c.get_int("n")) * sizeof(float) : 0.0;
        },
    .validate =
        [](const Case& c) {
          if (!parse_kernel(c.get("kernel")))
            throw CaseError(fmt::format("bandwidth kernel '{}' unknown: expected one of {}", c.get("kernel"),
                                        fmt::join(kernel_names(), ", ")));
          auto n = c.get_int("n");
          if (n < 1 || n > (std::int64_t{1} << 36))
            throw CaseError(fmt::format("bandwidth n={} out of range 1..2^36", n));
          if (c.has(kPasses)) {
            const auto passes = c.get_int(kPasses);
            if (passes < 1 || passes > (1 << 20))
              throw CaseError(fmt::format("bandwidth passes={} out of range 1..2^20", passes));
          }
        },
    .uses_memory = true,
    .peak_dtype = {},
    .ceiling = CeilingKind::memory,
    .ceiling_cases = memory_ceiling_cases,
    .config_keys = {"bandwidth"},
    .expand = bandwidth_expand,
    .check_shapes = check_shapes(),
});

ImplRegistrar reg_impl({
    .op = "bandwidth",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "opmeter's own OpenMP vector kernels (AVX-512, AVX2 or SSE2), optional non-temporal stores",
    .dtypes = {DType::fp32},
    .make = [] { return std::make_unique<BandwidthImpl>(); },
    .accepts = {kPasses},
});

}  // namespace
}  // namespace opmeter::bandwidth
