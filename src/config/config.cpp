// YAML configs and built-in suites -> a list of cases.
#include "config/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>

#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>

#include "config/pipeline_config.hpp"
#include "config/suites.hpp"
#include "config/torchao_config.hpp"
#include "config/yaml_reader.hpp"
#include "engine/run_settings.hpp"
#include "engine/runner.hpp"
#include "engine/stopping_settings.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/shapes.hpp"
#include "plugins/c_plugin.hpp"
#include "util/interrupt.hpp"
#include "util/text.hpp"
#include "worker/user_kernels.hpp"

namespace opmeter {
namespace {

const std::vector<std::string> kTopKeys = {"name",     "description", "ops", "impls",  "dtypes",
                                           "threads",  "stopping",    "hot", "shapes", "device",
                                           "llc_bytes", "kernels", "plugins", "pipelines", "end_to_end",
                                           "cases", "sample"};
const std::vector<std::string> kGenerators = {"custom", "pow2", "pow2_extended", "sweep", "llama", "random"};
constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;
constexpr int kMaxPower = 20;

std::pair<int, int> power_range(const YamlReader& r, const YAML::Node& g, const std::string& name, int def_min,
                                int def_max) {
  int lo = g["min_power"] ? static_cast<int>(r.integer(g["min_power"], name + ".min_power", 0, kMaxPower)) : def_min;
  int hi = g["max_power"] ? static_cast<int>(r.integer(g["max_power"], name + ".max_power", 0, kMaxPower)) : def_max;
  if (lo > hi)
    r.fail(g, fmt::format("{}: empty sweep, min_power {}{} is greater than max_power {}{}", name, lo,
                          g["min_power"] ? "" : " (the default)", hi, g["max_power"] ? "" : " (the default)"));
  return {lo, hi};
}

}  // namespace

std::vector<MatShape> read_shapes(const YamlReader& r, const YAML::Node& list, std::vector<YAML::Node>* nodes) {
  if (!list.IsSequence() || list.size() == 0)
    r.fail(list, "shapes: expected a non-empty list of generators, e.g. [{name: pow2, min_power: 10, max_power: 12}]");
  std::vector<MatShape> out;
  for (const auto& g : list) {
    r.expect_map(g, "shapes entry");
    if (!g["name"]) r.fail(g, fmt::format("shapes entry: missing 'name' (one of {})", fmt::join(kGenerators, ", ")));
    auto name = r.text(g["name"], "shapes.name");
    std::vector<MatShape> shapes;
    if (name == "custom") {
      r.check_keys(g, {"name", "shapes"}, "a custom shapes entry");
      auto s = g["shapes"];
      if (!s || !s.IsSequence() || s.size() == 0)
        r.fail(s ? YAML::Node(s) : YAML::Node(g), "custom: 'shapes' must be a non-empty list of [m, k, n]");
      for (const auto& one : s) {
        if (!one.IsSequence() || one.size() != 3) r.fail(one, "custom: each shape must be a list [m, k, n] of three integers");
        shapes.push_back({r.integer(one[0], "shape m", 1, kMaxDim), r.integer(one[1], "shape k", 1, kMaxDim),
                          r.integer(one[2], "shape n", 1, kMaxDim), {}});
        if (nodes) nodes->push_back(one);
      }
    } else if (name == "pow2" || name == "pow2_extended") {
      r.check_keys(g, {"name", "min_power", "max_power"}, "a " + name + " shapes entry");
      auto [lo, hi] = power_range(r, g, name, 10, 14);
      shapes = name == "pow2" ? pow2_shapes(lo, hi) : pow2_extended_shapes(lo, hi);
    } else if (name == "sweep") {
      r.check_keys(g, {"name", "min_power", "max_power"}, "a sweep shapes entry");
      auto [lo, hi] = power_range(r, g, name, 8, 15);
      shapes = sweep_shapes(lo, hi);
    } else if (name == "random") {
      r.check_keys(g, {"name", "count", "min", "max", "seed", "multiple_of", "max_macs"}, "a random shapes entry");
      if (!g["count"]) r.fail(g, "random: 'count' says how many shapes to draw");
      auto count = static_cast<int>(r.integer(g["count"], "random.count", 1, 100000));
      auto lo = g["min"] ? r.integer(g["min"], "random.min", 1, kMaxDim) : 16;
      auto hi = g["max"] ? r.integer(g["max"], "random.max", 1, kMaxDim) : 4096;
      if (lo > hi) r.fail(g, fmt::format("random: empty range, min {} is greater than max {}", lo, hi));
      auto seed = g["seed"] ? r.integer(g["seed"], "random.seed", 0, std::numeric_limits<std::int64_t>::max()) : 1;
      auto multiple = g["multiple_of"] ? r.integer(g["multiple_of"], "random.multiple_of", 1, kMaxDim) : 1;
      if ((lo + multiple - 1) / multiple * multiple > hi)  // the dimensions are multiples within [min, max]
        r.fail(g["multiple_of"],
               fmt::format("random: no multiple of {} lies in [min, max] = [{}, {}]", multiple, lo, hi));
      double max_macs = g["max_macs"] ? r.number(g["max_macs"], "random.max_macs", 1, 1e18) : 0;
      if (max_macs > 0 && max_macs < static_cast<double>(lo) * static_cast<double>(lo) * static_cast<double>(lo))
        r.fail(g["max_macs"], fmt::format("random: max_macs {:g} is below the smallest shape, min^3 = {:g}", max_macs,
                                          static_cast<double>(lo) * static_cast<double>(lo) * static_cast<double>(lo)));
      shapes = random_shapes(count, lo, hi, static_cast<std::uint64_t>(seed), multiple, max_macs);
    } else if (name == "llama") {
      r.check_keys(g, {"name", "tokens"}, "a llama shapes entry");
      auto tokens = g["tokens"] ? r.integer(g["tokens"], "llama.tokens", 1, kMaxDim) : 4 * 4096;
      shapes = llama_shapes(tokens);
    } else {
      r.fail(g["name"], unknown_name("shape generator", name, kGenerators));
    }
    if (nodes) nodes->resize(out.size() + shapes.size(), g);  // a generator's shapes: its entry
    out.insert(out.end(), shapes.begin(), shapes.end());
    if (out.size() > kMaxConfigShapes)
      r.fail(g, fmt::format("shapes: {} shapes in all by this entry, more than the {} one list may give (random's "
                            "largest count): split the config",
                            out.size(), kMaxConfigShapes));
    throw_if_interrupted();
  }
  return out;
}

void check_plan_size(const YamlReader& r, const YAML::Node& at, std::size_t planned) {
  if (planned % 1024 == 0) throw_if_interrupted();
  if (planned > kMaxPlannedCases)
    r.fail(at,
           fmt::format("the config expands to more than {} cases (before any `sample:`): split it", kMaxPlannedCases));
}

namespace {


Stopping read_stopping(const YamlReader& r, const YAML::Node& n, Stopping s) {
  r.expect_map(n, "stopping");
  r.check_keys(n, stopping_config_keys(), "stopping");
  for (auto& setting : stopping_settings()) {
    auto value = n[setting.config_key];
    if (!value) continue;
    auto what = fmt::format("stopping.{}{}", setting.config_key, setting.config_note);
    auto [lo, hi] = setting.config_range;
    setting.set(s, setting.is_integer() ? static_cast<double>(r.integer(value, what, static_cast<std::int64_t>(lo),
                                                                        static_cast<std::int64_t>(hi)))
                                        : r.number(value, what, lo, hi));
  }
  return s;
}

// Whether `shapes:` ([m, k, n] and its generators) sizes the op: the linear family maps them to its
// parameters, gemm expands them itself (M, N, K in its view).
bool takes_matrix_shapes(const OpDef& op) { return op.from_matrix_shape || (op.expand && op.gemm_view); }

// Whether an op's default value is an integer: then the parameter takes integers only (act and
// stage take names).
bool integer_text(const std::string& value) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  return !value.empty() && ec == std::errc() && end == value.data() + value.size();
}

// Every parameter of an op with sweep axes: the config's list for it, else the op's default.
// Matrix shapes, when the op takes them and the config has `shapes`, set the parameters they map to.
std::vector<ParamSet> sweep_params(const YamlReader& r, const YAML::Node& root, const OpDef& op) {
  std::vector<ParamSet> shaped = {{}};
  if (op.from_matrix_shape && root["shapes"]) {
    shaped.clear();
    for (auto& s : read_shapes(r, root["shapes"])) shaped.push_back({op.from_matrix_shape(s.m, s.k, s.n), s.label});
  }
  std::vector<ParamSet> out;
  for (auto& [fixed, label] : shaped) {
    std::vector<Params> partial = {{}};
    for (auto& [key, def] : op.defaults) {
      auto given = std::find_if(fixed.begin(), fixed.end(), [&](auto& kv) { return kv.first == key; });
      std::vector<std::string> values;
      if (given != fixed.end()) values = {given->second};
      else if (root[key]) {
        values = integer_text(def) ? r.integer_text_list(root[key], key) : r.text_list(root[key], key);
        for (std::size_t i = 0; i < values.size(); ++i) {
          try {
            check_canonical_integer(key, values[i]);
          } catch (const CaseError& e) {
            r.fail(root[key].IsSequence() ? root[key][i] : root[key], e.what());
          }
        }
      } else values = {def};
      std::vector<Params> next;
      for (auto& p : partial)
        for (auto& v : values) {
          next.push_back(p);
          next.back().emplace_back(key, v);
        }
      partial = std::move(next);
    }
    for (auto& p : partial) out.push_back({std::move(p), label});
  }
  return out;
}

// What an op reads from the config: a view of the config's root for its own keys.
class YamlOpConfig final : public OpConfig {
 public:
  YamlOpConfig(const YamlReader& r, YAML::Node node, std::string prefix, std::size_t llc)
      : r_(r), node_(std::move(node)), prefix_(std::move(prefix)), llc_(llc) {}
  bool has(const std::string& key) const override { return static_cast<bool>(node_[key]); }
  std::vector<std::string> texts(const std::string& key, const std::string& what) const override {
    return r_.text_list(node_[key], what);
  }
  std::vector<std::int64_t> integers(const std::string& key, const std::string& what, std::int64_t lo,
                                     std::int64_t hi) const override {
    return r_.integer_list(node_[key], what, lo, hi);
  }
  std::unique_ptr<OpConfig> section(const std::string& key, const std::vector<std::string>& allowed) const override {
    auto n = node_[key];
    r_.expect_map(n, prefix_ + key);
    r_.check_keys(n, allowed, prefix_ + key);
    return std::make_unique<YamlOpConfig>(r_, n, prefix_ + key + ".", llc_);
  }
  std::vector<MatShape> shapes() const override {
    if (!node_["shapes"]) r_.fail(node_, "there is no 'shapes' list to say which sizes");
    return read_shapes(r_, node_["shapes"]);
  }
  std::size_t llc_bytes() const override { return llc_; }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const override {
    r_.fail(node_[key] ? YAML::Node(node_[key]) : node_, message);
  }
  [[noreturn]] void fail_at(const std::string& key, std::size_t index, const std::string& message) const override {
    auto n = node_[key];
    r_.fail(n && n.IsSequence() && index < n.size() ? YAML::Node(n[index]) : n ? YAML::Node(n) : node_, message);
  }

 private:
  const YamlReader& r_;
  YAML::Node node_;
  std::string prefix_;
  std::size_t llc_;
};

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// Parameter sets of an op from the config: its own expansion, else its sweep axes, else one
// empty set.
std::vector<ParamSet> base_params(const YamlReader& r, const YAML::Node& root, const OpDef& op, std::size_t llc) {
  if (op.expand) return op.expand(YamlOpConfig(r, root, "", llc));
  if (!op.defaults.empty()) return sweep_params(r, root, op);
  return {ParamSet{}};
}

// The values a config gives an optional parameter (its absent value when none), each checked
// against the values the op allows.
std::vector<std::string> optional_values(const YamlReader& r, const YAML::Node& root, const OptionalParam& o) {
  auto node = root[o.config_key];
  if (!node) return {o.absent};
  // Numbers as numbers (a quoted "4" is a string, as PyYAML reads it), and 0 / 1 not yes / no,
  // where the parameter's values are integers (passes, fast_accum).
  const bool integers =
      integer_text(o.absent) || (!o.values.empty() && std::all_of(o.values.begin(), o.values.end(), integer_text));
  auto values = integers ? r.integer_text_list(node, o.config_key) : r.text_list(node, o.config_key);
  for (std::size_t i = 0; !integers && i < values.size(); ++i) {  // a number among names (ksplit: auto or 4)
    const YAML::Node item = node.IsSequence() ? node[i] : node;
    if (item.IsScalar() && item.Tag() == "!" && integer_text(values[i]))
      r.fail(item, fmt::format("{}: expected a number, got the string \"{}\" (write it without quotes)", o.config_key,
                               values[i]));
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!o.values.empty() && std::find(o.values.begin(), o.values.end(), values[i]) == o.values.end())
      r.fail(node.IsSequence() ? node[i] : node, unknown_name(o.config_key + " value", values[i], o.values));
  return values;
}

// The op's parameter sets, each once per value of its optional parameters (a recipe, a mode); a
// value equal to the parameter's absent one leaves it out of the case.
std::vector<ParamSet> op_params(const YamlReader& r, const YAML::Node& root, const OpDef& op, std::size_t llc) {
  auto sets = base_params(r, root, op, llc);
  for (auto& o : op.optional_params) {
    const auto values = optional_values(r, root, o);  // read and checked once, not per set
    std::vector<ParamSet> next;
    for (auto& set : sets)
      for (auto& value : values) {
        next.push_back(set);
        if (value != o.absent) next.back().params.emplace_back(o.key, value);
      }
    sets = std::move(next);
  }
  return sets;
}

// A case's parameters split into its shape (the op's own) and the optional values it carries.
std::pair<Params, Params> shape_and_optional(const OpDef& op, const Params& params) {
  std::pair<Params, Params> out;
  for (auto& kv : params)
    (std::any_of(op.optional_params.begin(), op.optional_params.end(),
                 [&](const OptionalParam& o) { return o.key == kv.first; })
         ? out.second
         : out.first)
        .push_back(kv);
  return out;
}

// How none_runs begins where the listed impls each need a value the config does not give: such a
// message is placed at `impls:`.
constexpr std::string_view kNoListedImpl = "no listed impl of";

// Why none of `impls` runs an op's parameter set: the optional values it carries that no impl
// runs together, and which impls run each of them alone. Empty when one of them runs it.
std::string none_runs(const OpDef& op, const std::vector<std::string>& impls, const Case& like, const Params& params) {
  auto& reg = Registry::global();
  Case c = like;
  c.op = op.name;
  c.params = params;
  auto runners = [&](const Case& k) {
    std::vector<std::string> out;
    for (auto& name : impls)
      if (takes_optional_params(*reg.impl(op.name, name), k).ok) out.push_back(name);
    return out;
  };
  // Where no listed impl runs a value: the op's impls that do, on any backend (named where it is
  // not this one's: float8 training runs only on a GPU).
  const std::string here = backend_of(like).name();
  auto elsewhere = [&](const Case& k) {
    std::vector<std::string> out;
    for (auto* impl : reg.impls_of(op.name))
      if (takes_optional_params(*impl, k).ok)
        out.push_back(impl->runs_on(here) ? impl->impl : fmt::format("{} (on {})", impl->impl, impl->backends_text()));
    return out.empty() ? std::string("none") : fmt::format("none listed; {} do", fmt::join(out, ", "));
  };
  if (!runners(c).empty()) return "";
  std::vector<std::string> carried, alone;
  for (auto& o : op.optional_params)
    if (c.has(o.key)) carried.push_back(o.key);
  if (carried.empty()) {  // the listed impls each need a value the config does not give
    std::vector<std::string> needs;
    for (auto& name : impls)
      for (auto& key : reg.impl(op.name, name)->needs)
        for (auto& o : op.optional_params) {
          if (o.key != key) continue;
          std::vector<std::string> given;  // the values that carry the key
          for (auto& v : o.values)
            if (v != o.absent) given.push_back(v);
          needs.push_back(
              given.size() == 1
                  ? fmt::format("{} runs only {}={} (add `{}: [{}]`)", name, key, given[0], o.config_key, given[0])
                  : fmt::format("{} runs only cases with {} (add `{}:`)", name, key, o.config_key));
        }
    return needs.empty() ? "" : fmt::format("{} {} runs its cases: {}", kNoListedImpl, op.name, fmt::join(needs, "; "));
  }
  // Each value alone, but with the mode: a phase or a float8 knob has a meaning only in a training
  // step, so alone it would name the impls that take it in inference (none, or the wrong ones).
  const std::string mode = "mode";
  for (auto& key : carried) {
    Case one = c;
    std::erase_if(one.params, [&](auto& kv) {
      return kv.first != key && kv.first != mode && std::find(carried.begin(), carried.end(), kv.first) != carried.end();
    });
    auto who = runners(one);
    alone.push_back(fmt::format("{}={}: {}", key, c.get(key), who.empty() ? elsewhere(one) : fmt::format("{}", fmt::join(who, ", "))));
  }
  std::vector<std::string> values;
  for (auto& key : carried) values.push_back(key + "=" + c.get(key));
  // The listed impls run none of them together; other impls may (on another backend).
  if (carried.size() > 1)
    if (auto together = elsewhere(c); together != "none") alone.insert(alone.begin(), "them together: " + together);
  return fmt::format("no impl of {} runs {}{}", op.name, fmt::join(values, " with "),
                     carried.size() > 1 || !alone.empty() ? fmt::format(" (impls that run {})", fmt::join(alone, "; ")) : "");
}

// Whether a case carrying several optional parameters is valid with each of them alone.
bool valid_apart(const OpDef& op, const Case& c) {
  std::vector<std::string> carried;
  for (auto& o : op.optional_params)
    if (c.has(o.key)) carried.push_back(o.key);
  if (carried.size() < 2) return false;
  for (auto& keep : carried) {
    Case alone = c;
    std::erase_if(alone.params, [&](auto& kv) { return kv.first != keep && std::find(carried.begin(), carried.end(), kv.first) != carried.end(); });
    try {
      op.validate(alone);
    } catch (const CaseError&) {
      return false;
    }
  }
  return true;
}

// The entry of `shapes:` a case's dimensions came from (a custom [m, k, n], else its generator),
// and the parameters it set; none when the op takes no matrix shapes or the config has none.
struct ShapePlace {
  YAML::Node node;
  std::vector<std::string> keys;
  bool one_of_several = false;  // the shapes list expands to more than this one shape
};
ShapePlace shape_place(const YamlReader& r, const YAML::Node& root, const OpDef& op, const Case& c) {
  if (!root["shapes"] || !takes_matrix_shapes(op)) return {};
  std::vector<YAML::Node> nodes;
  const auto shapes = read_shapes(r, root["shapes"], &nodes);  // read before: cannot fail here
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    std::vector<std::string> keys;
    if (op.from_matrix_shape) {
      auto set = op.from_matrix_shape(s.m, s.k, s.n);
      if (!std::all_of(set.begin(), set.end(),
                       [&](auto& kv) { return c.has(kv.first) && c.get(kv.first) == kv.second; }))
        continue;
      for (auto& kv : set) keys.push_back(kv.first);
    } else {
      auto view = op.gemm_view(c);
      if (!view || view->count != 1 || view->m != double(s.m) || view->n != double(s.n) || view->k != double(s.k))
        continue;
      for (auto& kv : c.params)
        if (!root[kv.first]) keys.push_back(kv.first);
    }
    return {nodes[i], std::move(keys), shapes.size() > 1};
  }
  return {};
}

// The config's place of the parameter that made a case invalid. The parameters the message names
// (batch=-7 out of range; hidden=96 is not divisible by heads=5; int8 gemm K must be < 65536), in
// the order it names them, each at its own place: a sweep value or an optional value at its item in
// its list (or its scalar), a dimension at its `shapes:` entry. Of those, the first that is one
// value of several (heads: [4, 5] beside hidden: 96: the 5, the value only this case has), else
// the first. A message that names none of the config's: the case's shape entry, else its optional
// value, else `ops`.
YAML::Node invalid_case_node(const YamlReader& r, const YAML::Node& root, const OpDef& op, const Case& c,
                             const std::string& message) {
  // Where the message names `key` as a whole word: `key=value` of this case, or the bare name
  // (K must be...). n=64 is not in hidden=64, nor `out` in `out_channels`.
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  auto named_at = [&](const std::string& key, const std::string& value, bool bare) {
    for (auto at = message.find(key); at != std::string::npos; at = message.find(key, at + 1)) {
      if (at > 0 && word(message[at - 1])) continue;
      const auto after = at + key.size(), end = after + value.size() + 1;
      if (bare ? after == message.size() || (!word(message[after]) && message[after] != '=')
               : message.compare(after, value.size() + 1, "=" + value) == 0 &&
                     (end == message.size() || !word(message[end])))
        return at;
    }
    return std::string::npos;
  };
  auto item = [](const YAML::Node& list, const std::string& value) -> std::pair<YAML::Node, bool> {
    if (list.IsScalar() && list.Scalar() == value) return {list, false};
    if (list.IsSequence())
      for (const auto& one : list)
        if (one.IsScalar() && one.Scalar() == value) return {one, list.size() > 1};
    return {YAML::Node(), false};
  };
  if (message.starts_with(kNoListedImpl) && root["impls"]) return root["impls"];
  const ShapePlace shape = shape_place(r, root, op, c);
  struct Place {
    std::size_t at;
    YAML::Node node;
    bool one_of_several;
  };
  std::vector<Place> places;
  // key=value where the message names any; else bare names (not `out` in "hidden=0 out of range").
  for (int bare = 0; bare < 2 && places.empty(); ++bare)
    for (auto& [key, value] : c.params) {
      const auto at = named_at(key, value, bare == 1);
      if (at == std::string::npos) continue;
      auto optional =
          std::find_if(op.optional_params.begin(), op.optional_params.end(), [&](auto& o) { return o.key == key; });
      const std::string config_key = optional != op.optional_params.end() ? optional->config_key : key;
      if (root[config_key]) {
        if (auto [node, several] = item(root[config_key], value); node) places.push_back({at, node, several});
      } else if (std::find(shape.keys.begin(), shape.keys.end(), key) != shape.keys.end()) {
        places.push_back({at, shape.node, shape.one_of_several});
      }
    }
  // In the order the message names them; indices, as assigning a YAML::Node rewrites the node it
  // refers to (yaml-cpp), which sorting the places would do.
  std::vector<std::size_t> order(places.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return places[a].at < places[b].at; });
  for (auto i : order)
    if (places[i].one_of_several) return places[i].node;
  if (!order.empty()) return places[order.front()].node;
  if (shape.node) return shape.node;
  for (auto& o : op.optional_params)
    if (c.has(o.key) && root[o.config_key]) {
      const YAML::Node node = item(root[o.config_key], c.get(o.key)).first;
      return node ? node : root[o.config_key];
    }
  return root["ops"];
}

// The dtypes any of these impls of the op take, in the impls' order.
std::vector<DType> impl_dtypes(const std::vector<std::string>& impls, const std::string& op) {
  std::vector<DType> taken;
  for (auto& name : impls)
    for (auto d : Registry::global().impl(op, name)->dtypes)
      if (std::find(taken.begin(), taken.end(), d) == taken.end()) taken.push_back(d);
  return taken;
}

// The dtypes asked for that the op's impls take. An op measured in none of them runs in its own
// first dtype rather than silently vanishing, where the dtype does not change what it measures
// (bandwidth when only bf16 is asked) or where none was asked; otherwise (`dtypes: [int8]` for
// linear) it is the config's error, not an fp32 run under the user's dtype: UsageError naming the
// op, the dtypes and what its impls take.
std::vector<DType> op_dtypes(const std::vector<std::string>& impls, const std::string& op, const std::vector<DType>& wanted,
                             bool dtypes_given) {
  const std::vector<DType> taken = impl_dtypes(impls, op);
  std::vector<DType> out;
  for (auto d : wanted)
    if (std::find(taken.begin(), taken.end(), d) != taken.end()) out.push_back(d);
  if (!out.empty() || taken.empty()) return out;
  if (!dtypes_given || ceiling_of(op) == CeilingKind::memory) return {taken.front()};
  auto names = [](const std::vector<DType>& ds) {
    std::vector<std::string> n;
    for (auto d : ds) n.emplace_back(to_string(d));
    return fmt::format("{}", fmt::join(n, ", "));
  };
  throw UsageError(fmt::format("{} has no {} impl: its impls ({}) take {}", op, names(wanted), fmt::join(impls, ", "),
                               names(taken)));
}

// `plugins: [path, ...]`, each relative to the config file's folder: their impls are known before
// the config names them. Unless `code` is skip: then they are only checked to exist, and returned.
std::vector<std::string> load_config_plugins(const YamlReader& r, const YAML::Node& list, const std::string& source,
                                             ConfigCode code) {
  auto paths = r.text_list(list, "plugins");
  auto folder = std::filesystem::path(source).parent_path();
  std::vector<std::string> skipped;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string path = (folder / paths[i]).string();  // an absolute path stays as it is
    try {
      std::error_code ec;
      if (code == ConfigCode::load) load_plugin(path);
      else if (!std::filesystem::exists(path, ec)) throw UsageError(fmt::format("plugin {}: no such file", path));
      else skipped.push_back(path);
    } catch (const UsageError& e) {
      r.fail(list.IsSequence() ? list[i] : list, e.what());
    }
  }
  return skipped;
}

// A user's Python kernel a config names, its path relative to the config's folder: registered,
// and kept (absolute) in `kernels` for isolated children. Returns its impl name. Unless `code` is
// skip: then the file is only checked to exist (the worker would import it).
std::string load_config_kernel(const YamlReader& r, const YAML::Node& node, const std::string& spec,
                               const std::string& source, const std::string& default_op, std::vector<std::string>& kernels,
                               ConfigCode code) {
  const std::string absolute = worker::absolute_kernel_spec(spec, std::filesystem::path(source).parent_path().string());
  try {
    std::string name;
    if (code == ConfigCode::load) {
      name = worker::add_user_kernel(absolute, default_op);
    } else {
      const std::string file = worker::kernel_file(absolute);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) throw UsageError(fmt::format("kernel file '{}' does not exist", file));
      name = worker::kernel_impl_name(absolute);
    }
    kernels.push_back(absolute);
    return name;
  } catch (const UsageError& e) {
    r.fail(node, e.what());
  }
}

// `sample: {count: N, seed: S, max_gflop: G}`: N of the cases the ops expand to, drawn at random
// (a sweep's subset that still spans its ranges), in their order; cases over G GFLOP per call are
// left out first (a grid's corners can take minutes).
void sample_cases(const YamlReader& r, const YAML::Node& n, std::vector<Case>& cases) {
  r.expect_map(n, "sample");
  r.check_keys(n, {"count", "seed", "max_gflop"}, "sample");
  if (!n["count"]) r.fail(n, "sample: 'count' says how many of the cases to keep");
  auto count = static_cast<std::size_t>(r.integer(n["count"], "sample.count", 1, 10000000));
  auto seed = n["seed"] ? r.integer(n["seed"], "sample.seed", 0, std::numeric_limits<std::int64_t>::max()) : 1;
  if (n["max_gflop"]) {
    double cap = r.number(n["max_gflop"], "sample.max_gflop", 1e-9, 1e12) * 1e9;
    std::erase_if(cases, [&](const Case& c) { return Registry::global().op(c.op)->work(c).flops > cap; });
    if (cases.empty()) r.fail(n["max_gflop"], "sample.max_gflop: every case of the sweep does more work than this");
  }
  std::vector<Case> kept;
  for (auto i : sample_indices(cases.size(), count, static_cast<std::uint64_t>(seed))) kept.push_back(cases[i]);
  cases = std::move(kept);
}

// `cases: [CASE, ...]`: canonical case strings (what results and `opmeter predict plan` print),
// each checked as `--case` checks one.
// The same case planned twice (a shape listed twice, or generators that overlap: pow2 and
// pow2_extended share their powers of two) would be measured twice under one case string, which
// --resume and compare take as one: each is kept once, in its first place, and a note says so.
void drop_repeated_cases(Plan& plan) {
  std::set<std::string> have;
  std::string first;
  const auto dropped = std::erase_if(plan.cases, [&](const Case& c) {
    std::string s = c.to_string();
    if (have.insert(s).second) return false;
    if (first.empty()) first = std::move(s);
    return true;
  });
  if (dropped == 0) return;
  plan.notes.push_back(fmt::format("{} case{} planned twice (a shape listed twice, or shape generators that overlap; "
                                   "e.g. {}): measured once each",
                                   dropped, dropped == 1 ? " was" : "s were", first));
}

void add_listed_cases(const YamlReader& r, const YAML::Node& list, std::vector<Case>& cases) {
  auto texts = r.text_list(list, "cases");
  std::set<std::string> have;
  for (auto& c : cases) have.insert(c.to_string());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const YAML::Node at = list.IsSequence() ? YAML::Node(list[i]) : list;
    try {
      Case c = parse_case(texts[i]);
      validate_case(c);
      if (have.insert(c.to_string()).second) cases.push_back(c);
    } catch (const UsageError& e) {
      r.fail(at, fmt::format("cases: {}", e.what()));
    }
  }
}

}  // namespace

namespace {
double four_llc(std::size_t llc) { return 4.0 * static_cast<double>(llc ? llc : std::size_t{32} << 20); }
std::string mib(double bytes) { return fmt::format("{:.0f} MiB", bytes / (1 << 20)); }
}  // namespace

std::size_t default_bandwidth_elements(std::size_t llc) {
  // Four times the last-level cache per array so every pass streams from memory; capped so that
  // a misreported LLC cannot make a run take minutes, and so three arrays fit in free memory.
  double bytes = std::max(four_llc(llc), 64.0 * (1 << 20));
  bytes = std::min(bytes, static_cast<double>(kMaxDefaultArrayBytes));
  bytes = std::min(bytes, static_cast<double>(available_memory_bytes()) / 8);
  return static_cast<std::size_t>(bytes / sizeof(float)) / 16 * 16;
}

std::string bandwidth_cap_note(std::size_t llc) {
  double want = four_llc(llc), got = static_cast<double>(default_bandwidth_elements(llc)) * sizeof(float);
  if (got >= want) return "";
  return fmt::format(
      "bandwidth arrays of {} (4x the last-level cache of {} would be {}); "
      "--llc-bytes or llc_bytes size them otherwise, and so does bandwidth.sizes_mib where a case "
      "moves {:.0f} MiB or more (smaller ones are measured beside them, not as the ceiling)",
      mib(got), mib(static_cast<double>(llc)), mib(want), kMemoryCeilingMinBytes / (1 << 20));
}

namespace {

// Where a config's cases run: the device, its backend's settings, threads, hot or cold.
struct Where {
  Case like;  // device and backend settings; every case starts from it
  Backend* backend = nullptr;
  std::vector<std::int64_t> threads;
  bool hot = false;
};

// The impls a config names, and the code it names that brings impls (plugins, Python kernels).
struct NamedCode {
  std::vector<std::string> impls;  // `impls:`, a kernel file's entry replaced by its impl's name
  std::vector<std::string> unloaded_plugins;
  bool unloaded = false;  // code named but not run by this command: its impls are unknown here
};

// The YAML document, which must be a map.
YAML::Node parse_config(const YamlReader& r, const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    // Every document is parsed: a second one (after ---) would otherwise be ignored unread.
    auto docs = YAML::LoadAll(yaml);
    std::erase_if(docs, [](const YAML::Node& d) { return !d || d.IsNull(); });  // a trailing --- holds nothing
    if (docs.size() > 1) {
      const auto at = docs[1].Mark();
      throw ConfigError(source, at.line >= 0 ? at.line + 1 : 0, at.column + 1,
                        fmt::format("the file holds {} YAML documents (separated by ---): a config is one", docs.size()));
    }
    if (!docs.empty()) root = docs.front();
  } catch (const YAML::DeepRecursion& e) {  // its message is "bad file"
    throw ConfigError(source, e.mark.line + 1, e.mark.column + 1,
                      "malformed YAML: nested deeper than the reader allows (a config is a few levels deep)");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source, e.mark.line + 1, e.mark.column + 1, "malformed YAML: " + e.msg);
  }
  if (!root || root.IsNull()) throw ConfigError(source, 0, 0, "the config is empty: expected at least 'ops: [...]'");
  r.expect_map(root, "the config");
  r.reject_duplicate_keys(root);
  r.resolve_merge_keys(root);
  return root;
}

// Keys: ours, plus every sweep axis, optional parameter and own key an op declares (batch, seq,
// quantization, bandwidth, ...) and every backend setting (graph).
void check_top_keys(const YamlReader& r, const YAML::Node& root) {
  auto top_keys = kTopKeys;
  auto allow = [&](const std::string& key) {
    if (std::find(top_keys.begin(), top_keys.end(), key) == top_keys.end()) top_keys.push_back(key);
  };
  for (auto* o : Registry::global().ops()) {
    for (auto& [key, def] : o->defaults) allow(key);
    for (auto& optional : o->optional_params) allow(optional.config_key);
    for (auto& key : o->config_keys) allow(key);
  }
  for (auto* b : backends())
    for (auto& setting : b->settings()) allow(setting.name);
  for (auto& key : run_setting_config_keys()) allow(key);
  r.check_keys(root, top_keys, "the config");
}

// Keys of ops (a sweep axis, an optional parameter, an op's own section) that none of the
// config's ops takes would be ignored, their values unchecked: a mistake (`heads:` beside
// `ops: [add]`), stopped at the key. Keys that are also ours, a backend's or a run setting's stay.
void check_op_keys_taken(const YamlReader& r, const YAML::Node& root, const std::vector<std::string>& ops) {
  std::map<std::string, std::vector<std::string>> owners;  // key -> the ops that take it
  for (auto* o : Registry::global().ops()) {
    std::set<std::string> keys;
    for (auto& [key, def] : o->defaults) keys.insert(key);
    for (auto& optional : o->optional_params) keys.insert(optional.config_key);
    for (auto& key : o->config_keys) keys.insert(key);
    for (auto& key : keys) owners[key].push_back(o->name);
  }
  std::set<std::string> shared(kTopKeys.begin(), kTopKeys.end());
  for (auto* b : backends())
    for (auto& setting : b->settings()) shared.insert(setting.name);
  for (auto& key : run_setting_config_keys()) shared.insert(key);
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>("");
    auto it = owners.find(key);
    if (it == owners.end() || shared.count(key)) continue;
    if (std::any_of(it->second.begin(), it->second.end(),
                    [&](const std::string& op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); }))
      continue;
    constexpr std::size_t kNamed = 6;
    std::vector<std::string> some(it->second.begin(),
                                  it->second.begin() + std::ptrdiff_t(std::min(kNamed, it->second.size())));
    r.fail(entry.first,
           fmt::format("'{}' is a parameter of {}{}: none of this config's ops ({}) takes it, so it would be "
                       "ignored (remove it, or add such an op to ops)",
                       key, fmt::join(some, ", "), it->second.size() > kNamed ? ", ..." : "",
                       ops.empty() ? "none" : fmt::format("{}", fmt::join(ops, ", "))));
  }
  // `shapes:` is a top-level key of its own, taken by the ops that read matrix shapes only.
  if (!root["shapes"]) return;
  std::vector<std::string> takers;
  for (auto* o : Registry::global().ops())
    if (takes_matrix_shapes(*o)) takers.push_back(o->name);
  if (std::any_of(ops.begin(), ops.end(),
                  [&](const std::string& op) { return std::find(takers.begin(), takers.end(), op) != takers.end(); }))
    return;
  for (const auto& entry : root)
    if (entry.first.as<std::string>("") == "shapes")
      r.fail(entry.first, fmt::format("'shapes' sizes {} as [m, k, n]: none of this config's ops ({}) takes it, so it "
                                      "would be ignored (size the others by their parameters, e.g. batch: [8], "
                                      "hidden: [1024]; `opmeter list` shows each op's)",
                                      fmt::join(takers, ", "), fmt::join(ops, ", ")));
}

// Users' Python kernels, before the ops are checked: a kernel may bring an op of its own. An
// `impls` entry naming a file (my_kernels.py:my_add) is one too, and stands for its impl.
NamedCode load_kernels(const YamlReader& r, const YAML::Node& root, const std::string& source, ConfigCode code,
                       const std::vector<std::string>& ops, std::vector<std::string> unloaded_plugins, Plan& plan) {
  NamedCode named;
  named.unloaded_plugins = std::move(unloaded_plugins);
  const std::string kernel_op = ops.size() == 1 ? ops[0] : "";  // a kernel's op when it names none
  auto add_kernel = [&](const YAML::Node& node, const std::string& spec) {
    return load_config_kernel(r, node, spec, source, kernel_op, plan.kernels, code);
  };
  if (root["kernels"]) {
    auto list = r.text_list(root["kernels"], "kernels");
    for (std::size_t i = 0; i < list.size(); ++i)
      add_kernel(root["kernels"].IsSequence() ? root["kernels"][i] : root["kernels"], list[i]);
  }
  auto& impls = named.impls;
  if (root["impls"]) {
    impls = r.text_list(root["impls"], "impls");
    for (std::size_t i = 0; i < impls.size(); ++i)
      if (impls[i].find(".py") != std::string::npos)
        impls[i] = add_kernel(root["impls"].IsSequence() ? root["impls"][i] : root["impls"], impls[i]);
  }

  // Code the config names but this command does not run: the impls (and a kernel's own op) it
  // would bring are unknown here, and left out.
  const auto& plugins = named.unloaded_plugins;
  named.unloaded = code == ConfigCode::skip && (!plugins.empty() || !plan.kernels.empty());
  plan.plugins_not_loaded = plugins;
  if (named.unloaded)
    plan.notes.push_back(fmt::format("{}{}{} not loaded: a command that only reads a config runs none of its code; the "
                                     "cases of their impls are listed only by a run that measures",
                                     plugins.empty() ? "" : "plugins " + fmt::format("{}", fmt::join(plugins, ", ")),
                                     !plugins.empty() && !plan.kernels.empty() ? " and " : "",
                                     plan.kernels.empty() ? "" : "kernels " + fmt::format("{}", fmt::join(plan.kernels, ", "))));
  return named;
}

// The ops and impls named must exist (or may come with code not loaded); unknown ops are dropped.
void check_names(const YamlReader& r, const YAML::Node& root, std::vector<std::string>& ops, const NamedCode& named,
                 const Plan& plan) {
  auto& reg = Registry::global();
  const bool unloaded = named.unloaded;
  // Which impls a plugin brings only loading it tells; a kernel's impl is named in its spec.
  auto unloaded_may_bring = [&](const std::string& impl) {
    return unloaded && (!named.unloaded_plugins.empty() || std::any_of(plan.kernels.begin(), plan.kernels.end(), [&](const std::string& k) {
                          return worker::kernel_impl_name(k) == impl;
                        }));
  };
  std::vector<std::string> op_names;
  for (auto* o : reg.ops()) op_names.push_back(o->name);
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!reg.op(ops[i]) && !(unloaded && !plan.kernels.empty()))  // a kernel may bring its op
      r.fail(root["ops"].IsSequence() ? root["ops"][i] : root["ops"], unknown_name("op", ops[i], op_names));
  std::erase_if(ops, [&](const std::string& op) { return !reg.op(op); });

  if (root["impls"]) {
    const auto& impls = named.impls;
    auto known = reg.impl_names();
    for (std::size_t i = 0; i < impls.size(); ++i)
      if (std::find(known.begin(), known.end(), impls[i]) == known.end() && !unloaded_may_bring(impls[i]))
        r.fail(root["impls"].IsSequence() ? root["impls"][i] : root["impls"], unknown_name("impl", impls[i], known));
  }
}

// `dtypes:`, fp32 when absent.
std::vector<DType> read_dtypes(const YamlReader& r, const YAML::Node& root) {
  std::vector<DType> dtypes = {DType::fp32};
  if (root["dtypes"]) {
    dtypes.clear();
    std::vector<std::string> names;
    for (auto d : all_dtypes()) names.emplace_back(to_string(d));
    auto list = r.text_list(root["dtypes"], "dtypes");
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto d = parse_dtype(list[i]);
      if (!d) r.fail(root["dtypes"].IsSequence() ? root["dtypes"][i] : root["dtypes"], unknown_name("dtype", list[i], names));
      dtypes.push_back(*d);
    }
  }
  return dtypes;
}

// `device:` (the command line's wins), its backend's settings, `threads:` and `hot:`.
Where read_where(const YamlReader& r, const YAML::Node& root, int default_threads, const std::string& device_override) {
  Where where;
  where.threads = {default_threads};
  if (root["threads"]) where.threads = r.integer_list(root["threads"], "threads", 1, 4096);
  where.hot = root["hot"] ? r.boolean(root["hot"], "hot") : false;
  std::string device = kHostDevice;
  if (root["device"]) {
    device = r.text(root["device"], "device");
    try {
      check_device(device);
    } catch (const UsageError& e) {
      r.fail(root["device"], e.what());
    }
  }
  if (!device_override.empty()) device = device_override;  // the command line wins
  Backend& backend = backend_of(device);
  where.backend = &backend;
  Case& like = where.like;  // where the cases run
  like.device = device;
  // A backend's own settings (CUDA's graph: launches per graph) as config keys of the same name.
  for (auto* b : backends())
    for (auto& setting : b->settings()) {
      auto node = root[setting.name];
      if (!node) continue;
      auto value = r.text(node, setting.name);
      if (value == "0") continue;  // 0: off
      if (b != &backend)
        r.fail(node, fmt::format("{} needs {}: device: {}", setting.help, b->description(), b->device_grammar()));
      try {
        if (setting.check) setting.check(value);
      } catch (const UsageError& e) {
        r.fail(node, e.what());
      }
      like.set_setting(setting.name, value);
    }
  if (!like.on_host()) where.threads = {1};
  return where;
}

// Why an op's parameter set runs nowhere (none_runs), and a case of that set: where the config
// says so is looked up (invalid_case_node) only if the config expands to no cases at all.
struct NotRun {
  std::string why;
  const OpDef* op;
  Case kase;
};

// The ops' cases: each op's impls here x dtypes x parameter sets x threads. Returns, for ops
// whose optional values no impl runs together, why (none_runs).
std::vector<NotRun> expand_ops(const YamlReader& r, const YAML::Node& root, const std::vector<std::string>& ops,
                               const std::vector<std::string>& impls, const std::vector<DType>& dtypes,
                               const Where& where, std::size_t llc, Plan& plan) {
  auto& reg = Registry::global();
  // Listed impls that code not loaded here may bring: an op with none of the known ones may be
  // theirs (then it runs them alone) or keep its own; which, only loading the code tells.
  std::vector<std::string> unknown_listed;
  const auto known = reg.impl_names();
  for (auto& name : impls)
    if (!std::binary_search(known.begin(), known.end(), name)) unknown_listed.push_back(name);
  const Backend& backend = *where.backend;
  const Case& like = where.like;
  const std::string& device = like.device;
  std::vector<NotRun> not_run;  // optional values no impl of the op runs (none_runs)
  // Cases invalid with optional values that may each be valid elsewhere in the sweep (phase=forward
  // beside mode: [inference, train]; quant=int8dq on a transformer_block beside a linear): decided
  // once every op is expanded.
  struct Refused {
    const OpDef* op;
    Case kase;
    std::string why;
    Params shape, optional;  // the case's own parameters, and the optional values it carries
  };
  std::vector<Refused> refused;
  for (auto& op : ops) {
    // The impls list filters the ops it names impls of; an op with none of them keeps all its own
    // (so `impls: [onednn]` still measures bandwidth and peak with opmeter's kernels).
    std::vector<const ImplDef*> here;  // the op's impls for this device's backend
    for (auto* impl : reg.impls_of(op))
      if (impl->runs_on(backend.name())) here.push_back(impl);
    std::vector<std::string> op_impls, on_request;
    for (auto* impl : here)
      if (std::find(impls.begin(), impls.end(), impl->impl) != impls.end()) op_impls.push_back(impl->impl);
    if (op_impls.empty() && !unknown_listed.empty()) {
      plan.notes.push_back(
          fmt::format("{}: left out, as its impls may be {}, which a command that only reads the "
                      "config does not load (a run that measures lists its cases)",
                      op, fmt::join(unknown_listed, ", ")));
      continue;
    }
    if (op_impls.empty())  // impls that start a worker run only when named
      for (auto* impl : here) (impl->on_request ? on_request : op_impls).push_back(impl->impl);
    if (op_impls.empty()) {
      plan.notes.push_back(fmt::format("{} has no {} impl yet{}: left out on {}", op, backend.name(),
                                       on_request.empty() ? "" : fmt::format(" but {}, run when named in impls", fmt::join(on_request, ", ")),
                                       device));
      continue;
    }
    const OpDef& def = *reg.op(op);
    std::vector<DType> op_dtype_list;
    try {
      op_dtype_list = op_dtypes(op_impls, op, dtypes, bool(root["dtypes"]));
    } catch (const UsageError& e) {
      r.fail(root["dtypes"], e.what());
    }
    if (root["dtypes"] && ceiling_of(op) != CeilingKind::memory) {  // dtypes asked that this op's impls lack
      std::vector<std::string> lacked, measured;
      for (auto d : dtypes)
        if (std::find(op_dtype_list.begin(), op_dtype_list.end(), d) == op_dtype_list.end()) lacked.emplace_back(to_string(d));
      for (auto d : op_dtype_list) measured.emplace_back(to_string(d));
      if (!lacked.empty() && !measured.empty())
        plan.notes.push_back(fmt::format("{} has no {} impl here: measured in {} only", op, fmt::join(lacked, ", "),
                                         fmt::join(measured, ", ")));
    }
    for (auto& set : op_params(r, root, def, llc)) {
      if (auto why = none_runs(def, op_impls, like, set.params); !why.empty()) {
        // Values the op refuses together (phase without mode=train, a recipe without a training
        // step) say the rule they break, rather than which impls run each.
        Case c = like;
        c.op = op;
        c.impl = op_impls.front();
        c.dtype = op_dtype_list.empty() ? like.dtype : op_dtype_list.front();
        c.params = set.params;
        try {
          def.validate(c);
        } catch (const CaseError& e) {
          why = e.what();
        }
        if (std::none_of(not_run.begin(), not_run.end(), [&](const NotRun& n) { return n.why == why; }))
          not_run.push_back({why, &def, c});
      }
      for (auto& impl : op_impls)
        for (auto d : op_dtype_list)
          for (auto& params : def.variants ? def.variants(set.params, d, like) : std::vector<Params>{set.params})
            for (auto t : where.threads) {
              Case c = like;
              c.op = op;
              c.impl = impl;
              c.dtype = d;
              c.params = params;
              c.label = set.label;
              c.threads = static_cast<int>(t);
              c.hot = where.hot;
              if (!takes_optional_params(*reg.impl(op, impl), c).ok) continue;  // a recipe only its impls run
              try {
                def.validate(c);
              } catch (const CaseError& e) {
                // Two optional values that each hold alone but not together (a recipe without a
                // training step, in train mode) leave the pair out; so do values that other cases
                // of the sweep take (below); anything else is the config's error.
                if (!valid_apart(def, c)) {
                  auto [shape, optional] = shape_and_optional(def, c.params);
                  if (optional.empty()) r.fail(invalid_case_node(r, root, def, c, e.what()), e.what());
                  refused.push_back({&def, c, e.what(), std::move(shape), std::move(optional)});
                  continue;
                }
                if (std::find(plan.notes.begin(), plan.notes.end(), e.what()) == plan.notes.end())
                  plan.notes.push_back(e.what());
                continue;
              }
              plan.cases.push_back(c);
              check_plan_size(r, root["ops"], plan.cases.size());
            }
    }
  }
  // A refused case whose shape a planned case of its op has, and whose every optional value some
  // planned case takes, is a combination the sweep's lists made: left out with a note. A shape or a
  // value no case takes is the config's error, at its place.
  // Looked up in sets made once: a plan may hold millions of cases, and the refused as many.
  if (refused.empty()) return not_run;
  auto shape_key = [](const std::string& op, const Params& shape) {
    std::string k = op;
    for (auto& [key, value] : shape) k += "," + key + "=" + value;
    return k;
  };
  std::set<std::string> taken, shapes;  // key=value of every planned case; op and shape of each
  for (auto& c : plan.cases) {
    for (auto& [key, value] : c.params) taken.insert(key + "=" + value);
    if (const OpDef* def = reg.op(c.op)) shapes.insert(shape_key(c.op, shape_and_optional(*def, c.params).first));
  }
  for (auto& x : refused) {
    const bool values_taken = std::all_of(x.optional.begin(), x.optional.end(),
                                          [&](auto& kv) { return taken.count(kv.first + "=" + kv.second) > 0; });
    if (!shapes.count(shape_key(x.op->name, x.shape)) || !values_taken)
      r.fail(invalid_case_node(r, root, *x.op, x.kase, x.why), x.why);
    const auto note = x.why + ": left out";
    if (std::find(plan.notes.begin(), plan.notes.end(), note) == plan.notes.end()) plan.notes.push_back(note);
  }
  return not_run;
}

// `pipelines:` (per dtype), their layers' cases added to the plan's once each.
void add_pipelines(const YamlReader& r, const YAML::Node& root, const std::vector<std::string>& impls,
                   const std::vector<DType>& dtypes, const Where& at, Plan& plan) {
  const bool end_to_end = root["end_to_end"] ? r.boolean(root["end_to_end"], "end_to_end") : true;
  std::set<std::string> given;  // settings the config names: no pipeline default overrides them
  for (const auto& setting : at.backend->settings())
    if (root[setting.name]) given.insert(setting.name);
  const Case where = pipelines_where(at.like, static_cast<int>(at.threads.front()), at.hot, given);
  if (at.threads.size() > 1)  // a pipeline is one set of layers at one thread count
    plan.notes.push_back(
        fmt::format("pipelines run with threads={}, the first of threads: [{}]; a pipeline at another "
                    "count is a run of its own (--threads N)",
                    at.threads.front(), fmt::join(at.threads, ", ")));
  for (auto d : dtypes)
    for (auto& p : read_pipelines(r, root["pipelines"], d)) {
      try {
        plan.pipelines.push_back(pipeline::plan_pipeline(std::move(p), where, impls, end_to_end));
      } catch (const CaseError& e) {
        r.fail(root["pipelines"], e.what());
      }
    }
  std::set<std::string> have;
  for (auto& c : plan.cases) have.insert(c.to_string());
  for (auto& c : pipeline::pipeline_cases(plan.pipelines)) {
    if (have.insert(c.to_string()).second) plan.cases.push_back(c);
    check_plan_size(r, root["pipelines"], plan.cases.size());
  }
}

}  // namespace

Plan load_config_text(const std::string& yaml, const std::string& source, int default_threads,
                      const std::string& device_override, ConfigCode code) {
  YamlReader r(source);
  const YAML::Node root = parse_config(r, yaml, source);
  if (is_torchao_config(root)) return load_torchao_config(r, root, default_threads, device_override);
  check_top_keys(r, root);
  const auto unloaded_plugins =
      root["plugins"] ? load_config_plugins(r, root["plugins"], source, code) : std::vector<std::string>{};
  if (!root["ops"] && !root["pipelines"] && !root["cases"])
    r.fail(root, "missing 'ops': say which ops to measure, e.g. ops: [gemm, bandwidth, peak] (or pipelines: [resnet18], "
                 "or cases: [CASE, ...])");

  auto ops = root["ops"] ? r.text_list(root["ops"], "ops") : std::vector<std::string>{};
  Plan plan;
  const NamedCode named = load_kernels(r, root, source, code, ops, unloaded_plugins, plan);
  check_names(r, root, ops, named, plan);
  if (!ops.empty()) check_op_keys_taken(r, root, ops);  // pipelines and cases alone take none of them
  const std::vector<DType> dtypes = read_dtypes(r, root);
  const Where where = read_where(r, root, default_threads, device_override);

  plan.source = source;
  if (root["stopping"]) plan.stopping = read_stopping(r, root["stopping"], plan.stopping);
  for (auto& setting : run_setting_table())
    if (auto node = root[setting.key]; node && !setting.is_case_setting())  // case settings: read with the device
      plan.run_settings[setting.key] = r.number(node, setting.key, setting.lo, setting.hi);
  if (root["llc_bytes"])
    plan.llc_bytes = static_cast<std::size_t>(r.integer(root["llc_bytes"], "llc_bytes (bytes)", 1 << 16, std::int64_t{1} << 40));
  // --llc-bytes (already set) wins over the config's.
  const std::size_t llc = plan.llc_bytes && !llc_bytes_overridden() ? plan.llc_bytes : llc_bytes();

  const auto not_run = expand_ops(r, root, ops, named.impls, dtypes, where, llc, plan);
  drop_repeated_cases(plan);
  // Ops whose optional values no impl runs together: say which, and who runs each, at the
  // parameter the first reason names (phase: forward without mode: train), not at `ops:`. An op its
  // values leave with no case is as wrong as a config with none (`ops: [linear, add]` with
  // `ksplit: 3` would otherwise measure `add` alone, with a note). Listed cases and pipelines may be
  // the point of a config: then they are notes.
  if (!named.unloaded && !root["cases"] && !root["pipelines"]) {
    std::set<std::string> planned_ops;
    for (auto& c : plan.cases) planned_ops.insert(c.op);
    for (auto& n : not_run) {
      if (planned_ops.count(n.op->name)) continue;
      std::vector<std::string> whys;  // the whole config's, or this op's
      for (auto& m : not_run)
        if (plan.cases.empty() || m.op == n.op) whys.push_back(m.why);
      r.fail(invalid_case_node(r, root, *n.op, n.kase, n.why),
             fmt::format("the config expands to no {}cases: {}", plan.cases.empty() ? "" : n.op->name + " ",
                         fmt::join(whys, "; ")));
    }
  }
  for (auto& n : not_run) plan.notes.push_back(n.why + ": left out");  // beside cases that do run
  if (root["sample"]) sample_cases(r, root["sample"], plan.cases);
  if (root["cases"]) add_listed_cases(r, root["cases"], plan.cases);
  if (root["pipelines"]) add_pipelines(r, root, named.impls, dtypes, where, plan);
  if (plan.cases.empty() && !named.unloaded)  // all of them may be the unloaded code's
    r.fail(root["ops"] ? root["ops"] : root,
           where.like.on_host() ? std::string("the config expands to no cases")
                                : fmt::format("the config expands to no cases on {}: none of its ops has a {} impl",
                                              where.like.device, upper(where.backend->name())));
  return plan;
}

Plan load_config_file(const std::string& path, int default_threads, const std::string& device, ConfigCode code) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path, 0, 0, "is a directory, not a config file");
  std::ifstream f(path, std::ios::binary);
  throw_if_interrupted();  // Ctrl-C or SIGTERM while a pipe waited for its writer: 130 / 143, not a bad file
  if (!f) throw ConfigError(path, 0, 0, "cannot open the config file (does it exist and is it readable?)");
  // Read up to a cap, whatever the file is (a pipe, /dev/stdin): /dev/zero would never end, and
  // the largest config of ours is a few KiB.
  constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxConfigBytes && f.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(f.gcount()));
  throw_if_interrupted();
  if (text.size() > kMaxConfigBytes)
    throw ConfigError(path, 0, 0, fmt::format("holds more than {} MiB: a config is a YAML file of a few KiB", kMaxConfigBytes >> 20));
  return load_config_text(text, path, default_threads, device, code);
}

Plan load_suite(const std::string& name, int default_threads, const std::string& device) {
  auto& suites = builtin_suites();
  auto it = suites.find(name);
  if (it == suites.end()) {
    std::vector<std::string> names;
    for (auto& [n, text] : suites) names.push_back(n);
    throw UsageError(unknown_name("suite", name, names));
  }
  return load_config_text(it->second, "suite:" + name, default_threads, device);
}

}  // namespace opmeter
