// torchao's microbenchmark configs -> opmeter's plan (see torchao_config.hpp). Each torchao key is
// read here once and mapped; docs/guide/quantization.md is the user's table of the same mapping.
#include "config/torchao_config.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/stopping_settings.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "ops/linear/linear.hpp"
#include "ops/linear/quant/recipe.hpp"
#include "util/did_you_mean.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

const std::vector<std::string> kTopKeys = {
    "benchmark_mode",     "quantization_config_recipe_names", "sparsity_config_recipe_names", "output_dir",
    "model_params",       "scaling_type_input",               "scaling_type_weight",          "scaling_type_grad_output",
    "scaling_granularity", "use_fast_accum",                  "repeat_n"};
// Keys opmeter's own configs never have: any of them makes a config torchao's.
const std::vector<std::string> kTorchaoOnly = {"benchmark_mode", "quantization_config_recipe_names", "model_params"};
const std::vector<std::string> kModelKeys = {"name",
                                             "matrix_shapes",
                                             "high_precision_dtype",
                                             "compile",
                                             "use_torch_compile",
                                             "torch_compile_mode",
                                             "device",
                                             "model_type",
                                             "enable_profiler",
                                             "enable_memory_profiler",
                                             "sparsity"};

// The plan's notes, each once, and where the config says the first thing left out: a config
// that expands to no cases is reported there (as opmeter's own configs are at the value).
class Notes {
 public:
  explicit Notes(std::vector<std::string>& out) : out_(out) {}
  void add(const std::string& note) {
    if (std::find(out_.begin(), out_.end(), note) == out_.end()) out_.push_back(note);
  }
  // A note saying that what the config writes at `at` is left out.
  void leave_out(const YAML::Node& at, const std::string& note) {
    if (!first_left_out_) first_left_out_ = at;
    add(note);
  }
  const std::optional<YAML::Node>& first_left_out() const { return first_left_out_; }

 private:
  std::vector<std::string>& out_;
  std::optional<YAML::Node> first_left_out_;
};

// Item i of a scalar-or-list node, for messages at its line.
YAML::Node item(const YAML::Node& n, std::size_t i) { return n.IsSequence() ? YAML::Node(n[i]) : n; }

// --- recipes ---

// opmeter's recipe for a torchao recipe name: the same name where opmeter has it (baseline, int8wo,
// int8dq, float8wo, float8dq-tensor, float8dq-row, int4wo-G), int4wo-G-hqq -> hqq-int4-G, float8dq
// -> float8dq-tensor (torchao's default granularity). "" for a recipe of torchao's that opmeter
// lacks (another int4 group size), with `why`; nullopt for a name neither knows.
std::optional<std::string> opmeter_recipe(const std::string& name, std::string& why) {
  if (quant::parse_recipe(name)) return name;
  if (name == "float8dq") {
    why = "recipe float8dq runs as float8dq-tensor (torchao's default granularity: one scale per tensor)";
    return "float8dq-tensor";
  }
  static const std::regex int4(R"(int4wo-(\d+)(-hqq)?)");
  std::smatch m;
  if (!std::regex_match(name, m, int4)) return std::nullopt;
  const std::string ours = (m[2].matched ? "hqq-int4-" : "int4wo-") + m[1].str();
  if (quant::parse_recipe(ours)) return ours;
  std::vector<std::string> groups;
  for (auto& r : quant::recipe_names())
    if (r.starts_with("int4wo-")) groups.push_back(r.substr(7));
  why = fmt::format("recipe {}: opmeter's int4 recipes take groups of {}; left out", name, fmt::join(groups, ", "));
  return "";
}

// A recipe of torchao's benchmark (its string_to_config and calibration recipes) that opmeter has
// no counterpart for: its family's name, else "".
std::string torchao_only_family(const std::string& name) {
  static const std::vector<std::pair<std::regex, std::string>> families = {
      {std::regex(R"(int8dq_prefill_wo_decode)"), "int8 dynamic activations with weight-only decode"},
      {std::regex(R"(int8adq-int4w-symm)"), "int8 dynamic activations x int4 weights (CUTLASS)"},
      {std::regex(R"(marlin(-qqq)?)"), "Marlin int4"},
      {std::regex(R"(fp6)"), "fp6 weight-only"},
      {std::regex(R"(uintx-\d+-\d+(-hqq)?)"), "uintx weight-only"},
      {std::regex(R"(int8_dynamic_activation_intx_weight-.*)"), "int8 dynamic activations x intx weights"},
      {std::regex(R"(float8_a1x128_w128x128)"), "blockwise float8"},
      {std::regex(R"(gemlitewo(-\d+){0,2})"), "GemLite weight-only"},
      {std::regex(R"(codebook(-\d+)?)"), "codebook weight-only"},
      {std::regex(R"(int4wo-\d+-gptq)"), "GPTQ int4 (calibrated)"},
      {std::regex(R"((autoround|awq-uintx|smoothquant|spinquant)(-.*)?)"), "calibrated or rotated"}};
  for (auto& [re, family] : families)
    if (std::regex_match(name, re)) return family;
  return "";
}

// The torchao spellings of opmeter's recipes, for "did you mean".
std::vector<std::string> torchao_recipe_names() {
  std::vector<std::string> out = {"float8dq"};
  for (auto& r : quant::recipe_names())
    out.push_back(r.starts_with("hqq-int4-") ? "int4wo-" + r.substr(9) + "-hqq" : r);
  return out;
}

// Sparsity recipes: torchao's list may hold null (None: no sparsity) and is empty by default.
// Noted whether or not quantization recipes are named.
void note_sparsity(const YamlReader& r, const YAML::Node& root, Notes& notes) {
  auto sparse = root["sparsity_config_recipe_names"];
  if (!sparse) return;
  std::vector<std::string> named;
  if (sparse.IsSequence()) {
    for (std::size_t i = 0; i < sparse.size(); ++i)
      if (!sparse[i].IsNull()) named.push_back(r.text(sparse[i], "sparsity_config_recipe_names"));
  } else if (!sparse.IsNull()) {
    named = r.text_list(sparse, "sparsity_config_recipe_names");
  }
  if (!named.empty())
    notes.add(fmt::format("sparsity_config_recipe_names ({}): opmeter has no sparsity recipes; left out",
                          fmt::join(named, ", ")));
}

std::vector<std::string> read_recipes(const YamlReader& r, const YAML::Node& root, Notes& notes) {
  note_sparsity(r, root, notes);
  const auto node = root["quantization_config_recipe_names"];
  if (!node) {
    notes.add("quantization_config_recipe_names is not given: the baseline (no quantization) alone is measured");
    return {quant::kBaseline};
  }
  // torchao's runner measures the baseline whether or not the list names it (its speedups are
  // against it); so does opmeter, first.
  std::vector<std::string> out = {quant::kBaseline};
  if (!(node.IsSequence() && node.size() == 0)) {
    auto names = r.text_list(node, "quantization_config_recipe_names");
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::string why;
      auto ours = opmeter_recipe(names[i], why);
      if (!ours) {
        if (auto family = torchao_only_family(names[i]); !family.empty()) {
          notes.add(fmt::format("recipe {} ({}) is torchao's: opmeter has no such recipe; left out", names[i], family));
          continue;
        }
        if (names[i] == "int4wo" || names[i] == "int4wo-hqq")
          r.fail(item(node, i), fmt::format("quantization recipe '{}' needs its group size, e.g. int4wo-64 or "
                                            "int4wo-128{}",
                                            names[i], names[i] == "int4wo-hqq" ? "-hqq" : ""));
        r.fail(item(node, i), unknown_name("quantization recipe", names[i], torchao_recipe_names()));
      }
      if (!why.empty()) notes.add(why);
      if (!ours->empty() && std::find(out.begin(), out.end(), *ours) == out.end()) out.push_back(*ours);
    }
    if (std::find(names.begin(), names.end(), quant::kBaseline) == names.end())
      notes.add(
          "quantization_config_recipe_names has no baseline: measured anyway, as torchao's runner does, for the "
          "speedups");
  } else {
    notes.add("quantization_config_recipe_names is empty: the baseline (no quantization) alone is measured");
  }
  return out;
}

// --- models ---

// The opmeter op of a torchao model_type; nullopt for one opmeter lacks.
std::optional<std::string> model_op(const std::string& type) {
  if (type == "linear" || type == "transformer_block") return type;
  if (type == "ln_linear") return "ln_linear_relu";  // torchao's activation when none is named
  if (!type.starts_with("ln_linear_")) return std::nullopt;
  std::string act = type.substr(10);
  for (auto& ch : act) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));  // torchao lowers it
  if (act == "leakyrelu") act = "leaky_relu";  // torchao's spelling
  const std::string op = "ln_linear_" + act;
  if (!Registry::global().op(op)) return std::nullopt;
  return op;
}

// A torchao shape [m, k, n] as the op's parameters (torchao's create_model_and_input_data):
// linear and ln_linear_<act> take x (m x k) and W (n x k); transformer_block takes x of batch m,
// 16 tokens, hidden k, 8 heads and an MLP of 4k, GELU (n is unused).
Params shape_params(const OpDef& op, const MatShape& s) {
  std::vector<std::pair<std::string, std::string>> given;
  if (op.name == "transformer_block")
    given = {{"batch", std::to_string(s.m)}, {"seq", "16"}, {"hidden", std::to_string(s.k)}, {"heads", "8"}, {"mlp", "0"},
             {"act", "gelu"},                {"causal", "0"}};
  else if (op.from_matrix_shape)
    given = op.from_matrix_shape(s.m, s.k, s.n);
  Params p;
  for (auto& [key, def] : op.defaults) {
    auto it = std::find_if(given.begin(), given.end(), [&](auto& kv) { return kv.first == key; });
    p.emplace_back(key, it != given.end() ? it->second : def);
  }
  return p;
}

DType read_dtype(const YamlReader& r, const YAML::Node& n) {
  static const std::vector<std::pair<std::string, DType>> names = {
      {"torch.bfloat16", DType::bf16}, {"torch.float16", DType::fp16}, {"torch.half", DType::fp16},
      {"torch.float32", DType::fp32},  {"torch.float", DType::fp32}};
  const auto name = r.text(n, "high_precision_dtype");
  for (auto& [torch_name, d] : names)
    if (name == torch_name) return d;
  std::vector<std::string> known;
  for (auto& [torch_name, d] : names) known.push_back(torch_name);
  r.fail(n, "high_precision_dtype: " + unknown_name("dtype", name, known));
}

// opmeter's device for torchao's (cuda -> cuda:0); "" for one opmeter does not measure (mps, xpu).
std::string read_device(const YamlReader& r, const YAML::Node& n) {
  const auto name = r.text(n, "device");
  if (name == "mps" || name == "xpu") return "";
  const std::string device = name == "cuda" ? "cuda:0" : name;
  try {
    check_device(device);
  } catch (const UsageError&) {
    r.fail(n, fmt::format("device: '{}' unknown: expected cuda, cuda:N or cpu (mps and xpu are left out with a note)",
                          name));
  }
  return device;
}

// The worker impl of a torch.compile mode; "" for no compilation.
std::string compile_impl(const YamlReader& r, const YAML::Node& n, const std::string& what, Notes& notes) {
  const auto mode = r.text(n, what);
  if (mode == "false" || mode == "False") return "";
  if (mode == "true" || mode == "True" || mode == "default") return "torch_compile";
  if (mode == "max-autotune-no-cudagraphs") return "torch_compile_max";
  if (mode == "max-autotune") {
    notes.add(fmt::format("{}: max-autotune runs as impl torch_compile_max, max-autotune without CUDA graphs of its "
                          "own (opmeter captures CUDA graphs itself: graph: N)", what));
    return "torch_compile_max";
  }
  if (mode == "reduce-overhead") {
    notes.add(fmt::format("{}: reduce-overhead runs as impl torch_compile (default mode; opmeter captures CUDA graphs "
                          "itself: graph: N)", what));
    return "torch_compile";
  }
  r.fail(n, fmt::format("{}: '{}' is not a torch.compile mode: expected default, max-autotune, "
                        "max-autotune-no-cudagraphs, reduce-overhead or false", what, mode));
}

// --- float8 training keys ---

// A torchao float8 training key and the linear case parameter it sets.
struct Knob {
  const char* torchao;
  const char* param;
  std::vector<std::string> values;  // empty: a boolean, 1 / 0
};
const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = {
      {"scaling_type_input", linear::kScalingInput, {"dynamic", "disabled"}},
      {"scaling_type_weight", linear::kScalingWeight, {"dynamic", "disabled"}},
      {"scaling_type_grad_output", linear::kScalingGrad, {"dynamic", "disabled"}},
      {"scaling_granularity", linear::kGranularity, {"tensorwise", "rowwise"}},
      {"use_fast_accum", linear::kFastAccum, {}},
  };
  return table;
}

// The knobs' case parameters a config gives (training only: in inference each is noted).
Params read_knobs(const YamlReader& r, const YAML::Node& root, bool training, Notes& notes) {
  Params out;
  for (auto& k : knobs()) {
    const auto n = root[k.torchao];
    if (!n) continue;
    std::string value;
    if (k.values.empty()) {
      value = r.boolean(n, k.torchao) ? "1" : "0";
    } else {
      value = r.text(n, k.torchao);
      if (value == "columnwise") {
        notes.add(fmt::format("{}: columnwise is not run by opmeter's float8 training (tensorwise, rowwise): the "
                              "recipes' own granularity is used", k.torchao));
        continue;
      }
      if (std::find(k.values.begin(), k.values.end(), value) == k.values.end())
        r.fail(n, fmt::format("{}: '{}' unknown: expected {}", k.torchao, value, fmt::join(k.values, " or ")));
    }
    if (!training) {
      notes.add(fmt::format("{} applies to float8 training: ignored with benchmark_mode: inference", k.torchao));
      continue;
    }
    out.emplace_back(k.param, value);
  }
  return out;
}

const OptionalParam* optional_param(const OpDef& op, const std::string& key) {
  for (auto& o : op.optional_params)
    if (o.key == key) return &o;
  return nullptr;
}

// Whether the op refuses the case with its recipe and mode alone (noted at the shape's entry, as
// at the full check).
bool recipe_refused(const OpDef& op, const Case& c, const Params& extra, const MatShape& shape, const YAML::Node& at,
                    Notes& notes) {
  Case k = c;
  for (auto& [key, value] : extra)
    if (!optional_param(op, key)) return false;  // said, and left out, where the knobs are added
  k.params.insert(k.params.end(), extra.begin(), extra.end());
  try {
    op.validate(k);
  } catch (const CaseError& e) {
    notes.leave_out(
        at, fmt::format("{} of shape [{}, {}, {}]: {}: left out", op.name, shape.m, shape.k, shape.n, e.what()));
    return true;
  }
  return false;
}

// The phases a case is timed in: torchao's training benchmark reports fwd, bwd and total, so a
// training case runs as phase=forward, phase=backward and the whole step (phase absent: step),
// the rows of the report's training table. Inference: the one call ("").
std::vector<std::string> phases_of(const OpDef& op, bool training) {
  if (!training || !optional_param(op, linear::kPhase)) return {""};
  return {"forward", "backward", ""};
}

// --- the plan ---

struct Settings {
  bool training = false;
  std::vector<std::string> recipes;
  Params knobs;
  int threads = 1;
  std::string device_override;
};

// The cases of one model_params entry.
void add_model(const YamlReader& r, const YAML::Node& entry, const std::string& name, const Settings& s, Plan& plan,
               std::set<std::string>& have, Notes& notes) {
  r.expect_map(entry, "model_params entry");
  r.check_keys(entry, kModelKeys, "model_params");
  const std::string where = name.empty() ? "model_params" : "model_params " + name;  // in notes
  if (!entry["matrix_shapes"])
    r.fail(entry, "model_params: missing 'matrix_shapes', e.g. [{name: custom, shapes: [[1024, 1024, 1024]]}]");
  std::vector<YAML::Node> shape_nodes;  // each shape's entry (its [m, k, n], else its generator)
  const auto shapes = read_shapes(r, entry["matrix_shapes"], &shape_nodes);
  auto list = [&](const char* key, const std::string& absent) {
    return entry[key] ? r.text_list(entry[key], key) : std::vector<std::string>{absent};
  };
  std::vector<DType> dtypes;
  if (auto n = entry["high_precision_dtype"]) {
    auto names = r.text_list(n, "high_precision_dtype");
    for (std::size_t i = 0; i < names.size(); ++i) dtypes.push_back(read_dtype(r, item(n, i)));
  } else {
    dtypes = {DType::bf16};  // torchao's default
  }
  std::vector<std::string> devices;
  if (!s.device_override.empty()) {
    devices = {s.device_override};
  } else if (auto n = entry["device"]) {
    auto names = r.text_list(n, "device");
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto d = read_device(r, item(n, i));
      if (d.empty())
        notes.leave_out(item(n, i),
                        fmt::format("{}: device {} is not measured by opmeter (cpu, cuda): left out", where, names[i]));
      else devices.push_back(d);
    }
  } else {
    devices = {kHostDevice};
  }
  std::vector<std::string> compiled;  // worker impls torch.compile runs as
  if (entry["compile"] && entry["use_torch_compile"])
    r.fail(entry["use_torch_compile"], "give either compile or use_torch_compile (with torch_compile_mode), not both");
  if (auto n = entry["compile"]) {
    if (auto impl = compile_impl(r, n, "compile", notes); !impl.empty()) compiled.push_back(impl);
  } else if (auto u = entry["use_torch_compile"]; u && r.boolean(u, "use_torch_compile")) {
    auto mode = entry["torch_compile_mode"];
    compiled.push_back(mode ? compile_impl(r, mode, "torch_compile_mode", notes) : "torch_compile");
    if (compiled.back().empty()) compiled.clear();
  } else if (entry["torch_compile_mode"]) {
    notes.add(fmt::format("{}: torch_compile_mode without use_torch_compile: true compiles nothing", where));
  }
  if (auto n = entry["sparsity"]; n && !n.IsNull()) {
    const auto kind = r.text(n, "sparsity");
    if (kind != "None" && kind != "none")
      notes.add(
          fmt::format("{}: sparsity {}: opmeter has no sparse kernels; its cases are measured dense (torchao "
                      "would sparsify the weights)",
                      where, kind));
  }
  if (entry["enable_profiler"] && r.boolean(entry["enable_profiler"], "enable_profiler")) {
    plan.profile = true;
    notes.add("enable_profiler: runs as --profile: each case is measured as usual, then one untimed call runs in the "
              "profiler's capture range (nsys, ncu), and the worker's impls write a PyTorch profiler trace per case "
              "(OUT/profiles/CASE.trace.json)");
  }
  if (entry["enable_memory_profiler"] && r.boolean(entry["enable_memory_profiler"], "enable_memory_profiler")) {
    plan.memory_profile = true;
    notes.add("enable_memory_profiler: runs as --memory-profile: each case's peak memory (peak_memory_bytes, how it "
              "was measured in the details) and, for the worker's impls on CUDA, a memory snapshot for PyTorch's "
              "memory visualizer (OUT/profiles/CASE.memory.pickle), in an untimed pass");
  }

  auto& reg = Registry::global();
  const auto types = list("model_type", "linear");
  std::size_t twice = 0;  // cases planned again (by this entry's shapes, or an earlier entry), measured once
  std::string first_twice;
  bool block_twice = false;  // the first of them a transformer_block's, which has no n
  std::set<std::string> noted_here;  // op|dtype|recipe that no impl here runs, noted once
  for (std::size_t t = 0; t < types.size(); ++t) {
    auto op_name = model_op(types[t]);
    if (!op_name) {
      // A misspelt model type (linaer) is the config's error, and so is an ln_linear_<act> of an
      // activation opmeter lacks: torchao has none other (it refuses it too). Another model of
      // torchao's that opmeter lacks is left out, with a note.
      std::vector<std::string> ours = {"linear", "ln_linear", "transformer_block"};
      for (auto* op : reg.ops())
        if (op->name.starts_with("ln_linear_"))
          ours.push_back(op->name == "ln_linear_leaky_relu" ? "ln_linear_leakyrelu" : op->name);
      if (types[t].starts_with("ln_linear_") || nearest(types[t], ours))
        r.fail(item(entry["model_type"], t), unknown_name("model_type", types[t], ours));
      notes.leave_out(item(entry["model_type"], t), fmt::format("{}: model_type {} has no opmeter op (linear, "
                                                                "ln_linear_<act>, transformer_block): left out",
                                                                where, types[t]));
      continue;
    }
    if (types[t] == "ln_linear")
      notes.add(fmt::format("{}: model_type ln_linear runs as ln_linear_relu (torchao's activation when none is named)",
                            where));
    const OpDef& op = *reg.op(*op_name);
    for (auto& device : devices) {
      Case like;
      like.device = device;
      const Backend& backend = backend_of(device);
      std::vector<std::string> own;  // the op's impls a config measures by default on this backend
      for (auto* impl : reg.impls_of(op.name))
        if (impl->runs_on(backend.name()) && !impl->on_request) own.push_back(impl->impl);
      for (auto d : dtypes)
        for (std::size_t i = 0; i < shapes.size(); ++i)
          for (auto& recipe : s.recipes) {
            const MatShape& shape = shapes[i];
            Case c = like;
            c.op = op.name;
            c.dtype = d;
            c.label = shape.label;
            c.threads = like.on_host() ? s.threads : 1;
            c.params = shape_params(op, shape);
            Params extra;
            if (recipe != quant::kBaseline) extra.emplace_back(linear::kQuant, recipe);
            if (s.training) extra.emplace_back(linear::kMode, linear::kTrain);
            // A recipe the op does not take (a block's float8dq) is left out before its knobs,
            // which would otherwise each get a note for cases that never run.
            if (recipe_refused(op, c, extra, shape, shape_nodes[i], notes)) continue;
            if (s.training && recipe.starts_with("float8dq"))
              for (auto& [key, value] : s.knobs) {
                if (key == std::string(linear::kGranularity)) {
                  // The recipe's name says its scales (float8dq-row: per row); another granularity
                  // would make it the other recipe.
                  const std::string own = recipe == "float8dq-row" ? "rowwise" : "tensorwise";
                  if (value != own)
                    notes.add(fmt::format("scaling_granularity: {} keeps its {} scales (the recipe names the "
                                          "granularity: float8dq-tensor, float8dq-row)", recipe, own));
                  continue;
                }
                auto* o = optional_param(op, key);
                if (!o) {
                  notes.add(fmt::format("{}={} (from torchao's float8 training keys): {} takes no {} in this build; its "
                                        "cases run without it", key, value, op.name, key));
                  continue;
                }
                if (value != o->absent) extra.emplace_back(key, value);
              }
            bool declared = true;
            for (auto& [key, value] : extra)
              if (!optional_param(op, key)) {
                notes.leave_out(entry, fmt::format("{} takes no {} in this build: its {}={} cases are left out",
                                                   op.name, key, key, value));
                declared = false;
              }
            if (!declared) continue;
            c.params.insert(c.params.end(), extra.begin(), extra.end());
            try {
              op.validate(c);
            } catch (const CaseError& e) {
              notes.leave_out(shape_nodes[i], fmt::format("{} of shape [{}, {}, {}]: {}: left out", op.name, shape.m,
                                                          shape.k, shape.n, e.what()));
              continue;
            }
            // opmeter's impls that run the case, else the first of them (the case is then
            // `skipped`, saying which impls run it); and torch.compile's when asked. On the host,
            // which is the machine the plan runs on, an impl that refuses the case here (an ISA
            // or size it lacks) is left out too, with a note saying why; a GPU's refusals need
            // its device, so they stay.
            std::vector<std::string> impls;
            for (auto& name : own) {
              Case k = c;
              k.impl = name;
              const ImplDef& def = *reg.impl(op.name, name);
              if (!takes_optional_params(def, k).ok || std::find(def.dtypes.begin(), def.dtypes.end(), d) == def.dtypes.end())
                continue;
              if (k.on_host())
                if (auto here = def.supports(k); !here.ok) {
                  notes.add(fmt::format("{} left out here: {}", name, here.reason));
                  continue;
                }
              impls.push_back(name);
            }
            // None runs it here: the first that takes its recipe and mode (the skip then names
            // what that impl lacks, e.g. the dtype), else the first of them.
            if (impls.empty() && !own.empty() && compiled.empty()) {
              auto takes = std::find_if(own.begin(), own.end(), [&](const std::string& name) {
                Case k = c;
                k.impl = name;
                return takes_optional_params(*reg.impl(op.name, name), k).ok;
              });
              impls.push_back(takes != own.end() ? *takes : own.front());
              // Said when planned, not only by each case's skip; once for the op, dtype and recipe,
              // not for each of its shapes.
              const std::string said = fmt::format("{}|{}|{}", op.name, to_string(d), recipe);
              if (c.on_host() && noted_here.insert(said).second) {
                std::vector<std::string> elsewhere;
                for (auto* impl : reg.impls_of(op.name)) {
                  Case k = c;
                  k.impl = impl->impl;
                  const bool here = impl->runs_on(backend.name());
                  if (takes_optional_params(*impl, k).ok &&
                      std::find(impl->dtypes.begin(), impl->dtypes.end(), d) != impl->dtypes.end() &&
                      // not one of opmeter's just refused here (no fp8 GEMM on CPUs); the worker's
                      // are not asked while planning
                      !(here && !impl->on_request && !impl->supports(k).ok))
                    elsewhere.push_back(here ? impl->impl
                                             : fmt::format("{} (on {})", impl->impl, impl->backends_text()));
                }
                notes.add(fmt::format(
                    "{}: no {} impl runs {}{}{} here: its cases are planned and skipped ({})", where, op.name,
                    to_string(d), recipe == quant::kBaseline ? "" : " " + recipe, s.training ? " training" : "",
                    elsewhere.empty() ? std::string("no impl runs it")
                                      : fmt::format("impls that run it: {}", fmt::join(elsewhere, ", "))));
              }
            }
            for (auto& name : compiled)
              if (reg.impl(op.name, name)) impls.push_back(name);
            for (auto& phase : phases_of(op, s.training))
              for (auto& name : impls) {
                Case k = c;
                k.impl = name;
                if (!phase.empty()) {  // after mode, in the op's order of its parameters
                  auto mode = std::find_if(k.params.begin(), k.params.end(), [](auto& kv) { return kv.first == linear::kMode; });
                  k.params.insert(mode == k.params.end() ? mode : mode + 1, {linear::kPhase, phase});
                }
                if (have.insert(k.to_string()).second) plan.cases.push_back(k);
                else if (++twice == 1) first_twice = k.to_string(), block_twice = op.name == "transformer_block";
                check_plan_size(r, entry, plan.cases.size());
              }
          }
    }
  }
  if (twice > 0)
    notes.add(
        fmt::format("{}: {} case{} planned again (shapes or entries that give the same case, e.g. {}): measured "
                    "once{}",
                    where, twice, twice == 1 ? "" : "s", first_twice,
                    block_twice ? " (transformer_block takes a shape's m as its batch and k as its hidden size, "
                                  "with 16 tokens, 8 heads and an MLP of 4k: n is unused)"
                                : ""));
}

}  // namespace

bool is_torchao_config(const YAML::Node& root) {
  if (!root.IsMap()) return false;
  for (auto& key : kTorchaoOnly)
    if (root[key]) return true;
  return false;
}

Plan load_torchao_config(const YamlReader& r, const YAML::Node& root, int default_threads, const std::string& device_override) {
  r.check_keys(root, kTopKeys, "the torchao config");
  Plan plan;
  plan.source = r.file();
  Notes notes(plan.notes);
  notes.add(fmt::format("{} is a torchao microbenchmark config: read with opmeter's mapping of its keys "
                        "(docs/guide/quantization.md)", r.file()));
  Settings s;
  s.threads = default_threads;
  s.device_override = device_override;
  if (auto n = root["benchmark_mode"]) {
    const auto mode = r.text(n, "benchmark_mode");
    if (mode != "inference" && mode != "training")
      r.fail(n, fmt::format("benchmark_mode: '{}' unknown: expected inference or training", mode));
    s.training = mode == "training";
  }
  if (s.training)
    notes.add("benchmark_mode: training: each case is timed as phase=forward, phase=backward and the whole step, the "
              "fwd, bwd and total columns of the report's training table");
  s.recipes = read_recipes(r, root, notes);
  s.knobs = read_knobs(r, root, s.training, notes);
  if (auto n = root["output_dir"]) {
    plan.output_root = r.text(n, "output_dir");
    if (auto hidden = hidden_character(plan.output_root); !hidden.empty())
      r.fail(n, fmt::format("output_dir holds a control or invisible character ({}): a folder name is one line of "
                            "printable text",
                            hidden));
  }
  if (auto n = root["repeat_n"])
    for (auto& setting : stopping_settings())
      if (setting.config_key == std::string("min_samples")) {
        auto [lo, hi] = setting.config_range;
        // torchao times repeat_n calls; opmeter needs two samples for a median's spread, so a
        // valid 1 is raised to that, with a note.
        auto v = r.integer(n, "repeat_n (the minimum number of samples)", 1, static_cast<std::int64_t>(hi));
        if (v < static_cast<std::int64_t>(lo)) {
          notes.add(fmt::format("repeat_n: {}: opmeter takes at least {} samples (the median's spread needs them)", v, lo));
          v = static_cast<std::int64_t>(lo);
        }
        setting.set(plan.stopping, static_cast<double>(v));
      }

  const auto models = root["model_params"];
  if (!models) r.fail(root, "missing 'model_params': the models and matrix_shapes to measure");
  std::set<std::string> have;
  if (models.IsSequence()) {
    if (models.size() == 0) r.fail(models, "model_params: the list is empty");
    for (std::size_t i = 0; i < models.size(); ++i) {
      const auto entry = models[i];
      const std::string name = entry.IsMap() && entry["name"] ? r.text(entry["name"], "model_params.name") : fmt::format("#{}", i + 1);
      add_model(r, entry, name, s, plan, have, notes);
    }
  } else {
    add_model(r, models, models.IsMap() && models["name"] ? r.text(models["name"], "model_params.name") : "", s, plan, have, notes);
  }
  // At what the first reason leaves out (a device, a model_type, a shape), not at `model_params`.
  if (plan.cases.empty())
    r.fail(notes.first_left_out().value_or(models),
           fmt::format("the torchao config expands to no cases{}",
                       plan.notes.size() > 1
                           ? fmt::format(": {}", fmt::join(plan.notes.begin() + 1, plan.notes.end(), "; "))
                           : ""));
  return plan;
}

}  // namespace opmeter
