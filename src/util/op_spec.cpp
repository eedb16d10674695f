// Element encodings, random inputs, host sets and the two verify flows of op_spec.hpp.
#include "opmeter/op_spec.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <limits>
#include <list>
#include <mutex>
#include <tuple>
#include <vector>

#include "opmeter/context.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter {
namespace {
constexpr std::uint32_t kS32Poison = 0x7f7f7f7f;
constexpr std::size_t kChunk = std::size_t{1} << 20;

// An independent stream per (seed, index): splitmix64 of the pair, as Rng itself mixes.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t index) {
  Rng mix(seed ^ (0x9E3779B97F4A7C15ull * (index + 1)));
  return mix.next();
}

// One draw of d's distribution (see TensorDesc::normal): Box-Muller for the normal one.
double draw(const TensorDesc& d, Rng& rng) {
  if (!d.normal) return rng.uniform(d.lo, d.hi);
  const double u = 1.0 - rng.uniform(0, 1), v = rng.uniform(0, 1);  // u in (0, 1]: log(u) finite
  return 0.5 * (d.lo + d.hi) + 0.5 * (d.hi - d.lo) * std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

template <class T, class Encode>
void fill_floats(T* out, std::size_t begin, std::size_t end, Rng& rng, const TensorDesc& d, Encode encode) {
  for (std::size_t i = begin; i < end; ++i) out[i] = encode(static_cast<float>(draw(d, rng)));
}

template <class T>
void fill_integers(T* out, std::size_t begin, std::size_t end, Rng& rng, double lo, double hi) {
  const auto base = static_cast<std::int64_t>(lo);
  const auto span = static_cast<std::uint64_t>(std::max<std::int64_t>(1, static_cast<std::int64_t>(hi) - base));
  for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<T>(base + static_cast<std::int64_t>(rng.next() % span));
}

void fill_range(const TensorDesc& d, void* p, std::size_t begin, std::size_t end, Rng& rng) {
  switch (d.elem) {
    case Elem::f64:
      for (std::size_t i = begin; i < end; ++i) static_cast<double*>(p)[i] = draw(d, rng);
      break;
    case Elem::f32: fill_floats(static_cast<float*>(p), begin, end, rng, d, [](float x) { return x; }); break;
    case Elem::f16: fill_floats(static_cast<std::uint16_t*>(p), begin, end, rng, d, to_fp16); break;
    case Elem::bf16: fill_floats(static_cast<std::uint16_t*>(p), begin, end, rng, d, to_bf16); break;
    case Elem::fp8_e4m3: fill_floats(static_cast<std::uint8_t*>(p), begin, end, rng, d, to_fp8_e4m3); break;
    case Elem::s8: fill_integers(static_cast<std::int8_t*>(p), begin, end, rng, d.lo, d.hi); break;
    case Elem::u8: fill_integers(static_cast<std::uint8_t*>(p), begin, end, rng, d.lo, d.hi); break;
    case Elem::s32: fill_integers(static_cast<std::int32_t*>(p), begin, end, rng, d.lo, d.hi); break;
  }
}
}  // namespace

double unit_roundoff(Elem e) {
  switch (e) {
    case Elem::f16: return 0x1p-11;
    case Elem::bf16: return 0x1p-8;
    case Elem::fp8_e4m3: return 0x1p-4;
    default: return 0x1p-24;
  }
}

std::size_t elem_bytes(Elem e) {
  switch (e) {
    case Elem::f64: return 8;
    case Elem::f32: case Elem::s32: return 4;
    case Elem::f16: case Elem::bf16: return 2;
    case Elem::fp8_e4m3: case Elem::s8: case Elem::u8: return 1;
  }
  return 0;
}

double load(Elem e, const void* p, std::size_t i) {
  switch (e) {
    case Elem::f64: return static_cast<const double*>(p)[i];
    case Elem::f32: return static_cast<const float*>(p)[i];
    case Elem::f16: return from_fp16(static_cast<const std::uint16_t*>(p)[i]);
    case Elem::bf16: return from_bf16(static_cast<const std::uint16_t*>(p)[i]);
    case Elem::fp8_e4m3: return from_fp8_e4m3(static_cast<const std::uint8_t*>(p)[i]);
    case Elem::s8: return static_cast<const std::int8_t*>(p)[i];
    case Elem::u8: return static_cast<const std::uint8_t*>(p)[i];
    case Elem::s32: {
      auto v = static_cast<const std::int32_t*>(p)[i];
      return std::bit_cast<std::uint32_t>(v) == kS32Poison ? std::numeric_limits<double>::quiet_NaN() : v;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void store(Elem e, void* p, std::size_t i, double v) {
  switch (e) {
    case Elem::f64: static_cast<double*>(p)[i] = v; break;
    case Elem::f32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case Elem::f16: static_cast<std::uint16_t*>(p)[i] = to_fp16(static_cast<float>(v)); break;
    case Elem::bf16: static_cast<std::uint16_t*>(p)[i] = to_bf16(static_cast<float>(v)); break;
    case Elem::fp8_e4m3: static_cast<std::uint8_t*>(p)[i] = to_fp8_e4m3(static_cast<float>(v)); break;
    case Elem::s8: static_cast<std::int8_t*>(p)[i] = static_cast<std::int8_t>(v); break;
    case Elem::u8: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(v); break;
    case Elem::s32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
  }
}

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::f64: return "f64";
    case Elem::f32: return "f32";
    case Elem::f16: return "f16";
    case Elem::bf16: return "bf16";
    case Elem::fp8_e4m3: return "fp8_e4m3";
    case Elem::s8: return "s8";
    case Elem::u8: return "u8";
    case Elem::s32: return "s32";
  }
  return "?";
}

int poison_byte(Elem e) { return e == Elem::s32 ? 0x7f : 0xff; }

HostTensor::HostTensor(TensorDesc desc)
    : desc_(std::move(desc)), buffer_(std::make_shared<Buffer>(std::max<std::size_t>(1, desc_.bytes()))) {}

void HostTensor::poison() { std::memset(buffer_->data(), poison_byte(desc_.elem), bytes()); }

void fill_random(const TensorDesc& desc, void* p, std::uint64_t seed) {
  const auto chunks = static_cast<std::int64_t>((desc.count + kChunk - 1) / kChunk);
#pragma omp parallel for num_threads(std::max(1, std::min<int>(default_threads(), static_cast<int>(chunks)))) schedule(dynamic)
  for (std::int64_t c = 0; c < chunks; ++c) {
    Rng rng(stream_seed(seed, static_cast<std::uint64_t>(c)));
    const auto begin = static_cast<std::size_t>(c) * kChunk;
    fill_range(desc, p, begin, std::min(desc.count, begin + kChunk), rng);
  }
}

HostTensors OpSpec::make_inputs(std::uint64_t seed) const {
  HostTensors in;
  for (auto& d : inputs()) in.emplace_back(d);
  fill_inputs(in, seed);
  return in;
}

namespace {

// The inputs same_in_every_set() names, as last drawn: a case draws them for its timed inputs and
// again for each check, and drawing a large layer's weights (Box-Muller) takes longer than
// copying them. The most recent first, kFixedBudget bytes in all.
class FixedDraws {
 public:
  void fill(const TensorDesc& d, void* p, std::uint64_t stream) {
    const Key key{stream, d.elem, d.count, d.lo, d.hi, d.normal};
    {
      std::lock_guard lock(mutex_);
      for (auto it = recent_.begin(); it != recent_.end(); ++it)
        if (it->first == key) {
          std::memcpy(p, it->second.data(), d.bytes());
          recent_.splice(recent_.begin(), recent_, it);
          return;
        }
    }
    fill_random(d, p, stream);
    if (d.bytes() > kFixedBudget) return;
    std::vector<std::byte> copy(d.bytes());
    std::memcpy(copy.data(), p, d.bytes());
    std::lock_guard lock(mutex_);
    recent_.emplace_front(key, std::move(copy));
    std::size_t total = 0;
    for (auto it = recent_.begin(); it != recent_.end();) {
      total += it->second.size();
      it = total > kFixedBudget ? recent_.erase(it) : std::next(it);
    }
  }

 private:
  using Key = std::tuple<std::uint64_t, Elem, std::size_t, double, double, bool>;
  static constexpr std::size_t kFixedBudget = std::size_t{1} << 30;
  std::mutex mutex_;
  std::list<std::pair<Key, std::vector<std::byte>>> recent_;
};

FixedDraws& fixed_draws() {
  static FixedDraws draws;
  return draws;
}

}  // namespace

void OpSpec::fill_input(HostTensor& in, std::size_t k, std::uint64_t seed) const {
  if (same_in_every_set(k)) fixed_draws().fill(in.desc(), in.data(), stream_seed(0, 2000 + k));
  else fill_random(in.desc(), in.data(), stream_seed(seed, 1000 + k));
}

void OpSpec::fill_inputs(HostTensors& in, std::uint64_t seed) const {
  for (std::size_t k = 0; k < in.size(); ++k) fill_input(in[k], k, seed);
}

bool OpSpec::has_tables() const {
  for (std::size_t k = 0, n = inputs().size(); k < n; ++k)
    if (is_table(k)) return true;
  return false;
}

double OpSpec::table_bytes() const {
  double bytes = 0;
  const auto in = inputs();
  for (std::size_t k = 0; k < in.size(); ++k)
    if (is_table(k)) bytes += double(in[k].bytes());
  return bytes;
}

std::uint64_t set_seed(std::uint64_t seed, std::size_t set) { return set == 0 ? seed : stream_seed(seed, 5000 + set); }

std::vector<HostSet> make_host_sets(const OpSpec& spec, const SetupOptions& options) {
  std::vector<HostSet> sets;
  sets.push_back({spec.make_inputs(options.seed), HostTensor(spec.output())});
  const bool tables = spec.has_tables();
  for (std::size_t s = 1; s < options.copies; ++s) {
    HostSet set{{}, HostTensor(spec.output())};
    for (std::size_t k = 0; k < sets[0].inputs.size(); ++k) {
      const HostTensor& first = sets[0].inputs[k];
      if (spec.kept_for_checks(k)) {
        set.inputs.push_back(first.share());
        continue;
      }
      if (tables && spec.is_table(k) && table_owner(s, options.table_copies) != s) {
        set.inputs.push_back(sets[table_owner(s, options.table_copies)].inputs[k].share());
        continue;
      }
      set.inputs.emplace_back(first.desc());
      if (tables && !spec.is_table(k)) spec.fill_input(set.inputs.back(), k, set_seed(options.seed, s));
      else std::memcpy(set.inputs.back().data(), first.data(), first.bytes());
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

Check verify_on_host(const OpSpec& spec, HostSet& set, std::uint64_t seed, const std::function<void()>& run) {
  spec.fill_inputs(set.inputs, seed);
  set.output.poison();
  run();
  return spec.check(set.inputs, set.output, seed);
}

void upload_inputs(const OpSpec& spec, std::uint64_t seed, const DeviceIo& io) {
  auto in = spec.make_inputs(seed);
  for (std::size_t k = 0; k < in.size(); ++k) io.upload(k, in[k]);
}

Check verify_on_device(const OpSpec& spec, std::uint64_t seed, const DeviceIo& io, const std::function<void()>& run) {
  auto in = spec.make_inputs(seed);
  for (std::size_t k = 0; k < in.size(); ++k) io.upload(k, in[k]);
  HostTensor out(spec.output());
  io.fill_output(poison_byte(out.desc().elem));
  run();
  io.download_output(out);
  return spec.check(in, out, seed);
}

}  // namespace opmeter
