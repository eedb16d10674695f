// Loading a C plugin: dlopen, its entry point, each impl it adds copied and, once the library's
// ABI version is known to be ours, checked and registered.
#include "plugins/c_plugin.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "plugins/op_dtypes.hpp"
#include "plugins/plugin_impl.hpp"
#include "util/did_you_mean.hpp"
#include "util/text.hpp"

namespace opmeter {
namespace {

// What the library's calls of `add` leave: copies, checked only after the entry point returns its
// ABI version (a library built for another version may lay the description out otherwise).
struct Added {
  std::size_t size = 0;  // the impl_size it gave; anything else than ours is not read
  PluginImplDesc desc;
};
struct Collector {
  std::string library;  // its absolute path
  std::vector<Added> added;
  std::string failure;  // what went wrong inside `add` itself
};

std::string text(const char* s) { return s ? std::string(s) : std::string(); }

// Called by the library: must not throw into C code.
extern "C" void add_impl(opmeter_registry* registry, const opmeter_impl* impl, size_t impl_size) {
  auto& into = *static_cast<Collector*>(registry->opaque);
  try {
    Added a{impl ? impl_size : 0, {}};
    if (impl && impl_size == sizeof(opmeter_impl)) {
      a.desc = {into.library, text(impl->op),      text(impl->name), text(impl->summary),
                text(impl->dtypes), text(impl->devices), *impl};
      a.desc.functions.op = a.desc.functions.name = a.desc.functions.summary = nullptr;
      a.desc.functions.dtypes = a.desc.functions.devices = nullptr;
    }
    into.added.push_back(std::move(a));
  } catch (const std::exception& e) {
    into.failure = e.what();
  }
}

// "fp32, bf16" -> fp32, bf16.
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  for (auto& item : split(list, ',')) out.push_back(trim(item));
  return out;
}

std::vector<DType> parse_dtypes(const std::string& list) {
  if (list.empty()) throw UsageError("gives no dtypes (e.g. \"fp32,bf16\")");
  std::vector<std::string> known;
  for (auto d : all_dtypes()) known.emplace_back(to_string(d));
  std::vector<DType> out;
  for (auto& name : split_list(list)) {
    auto d = parse_dtype(name);
    if (!d) throw UsageError(unknown_name("dtype", name, known));
    out.push_back(*d);
  }
  return out;
}

std::vector<std::string> parse_devices(const std::string& list) {
  static const std::vector<std::string> known = {"cpu", "cuda"};
  if (list.empty()) throw UsageError("gives no devices (\"cpu\", \"cuda\" or \"cpu,cuda\")");
  auto out = split_list(list);
  for (auto& name : out)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw UsageError(fmt::format("unknown device '{}' (expected cpu, cuda or both: \"cpu,cuda\")", name));
  return out;
}

void check_functions(const opmeter_impl& f) {
  std::vector<std::string> missing;
  auto need = [&](bool given, const char* name) {
    if (!given) missing.emplace_back(name);
  };
  need(f.setup, "setup");
  need(f.load, "load");
  need(f.run, "run");
  need(f.sync, "sync");
  need(f.output, "output");
  need(f.teardown, "teardown");
  if (!missing.empty()) throw UsageError(fmt::format("gives no {} function (every one is needed)", fmt::join(missing, ", ")));
}

// The registry's definition of an impl a library added, or UsageError saying what is wrong with it.
ImplDef impl_def(const PluginImplDesc& d, const std::vector<ImplDef>& accepted) {
  static const std::regex kName("[a-z0-9_]+");
  auto& reg = Registry::global();
  std::vector<std::string> ops;
  for (auto* o : reg.ops()) ops.push_back(o->name);
  if (d.op.empty()) throw UsageError("gives no op");
  const OpDef* op = reg.op(d.op);
  if (!op) throw UsageError(unknown_name("op", d.op, ops));
  if (!op->spec) throw UsageError(fmt::format("computes op '{}', whose inputs and check only opmeter's own impls know", d.op));
  if (d.name.empty()) throw UsageError("gives no name");
  if (!std::regex_match(d.name, kName))
    throw UsageError(fmt::format("'{}' is not a valid impl name (use lowercase letters, digits and _)", d.name));
  auto taken = [&](const ImplDef& i) { return i.op == d.op && i.impl == d.name; };
  if (reg.impl(d.op, d.name) || std::any_of(accepted.begin(), accepted.end(), taken))
    throw UsageError(fmt::format("op '{}' already has an impl '{}': pick another name", d.op, d.name));
  check_functions(d.functions);
  auto dtypes = parse_dtypes(d.dtypes);
  check_op_dtypes(d.op, dtypes);  // its inputs and check are the op's: of the op's forms only
  auto desc = std::make_shared<const PluginImplDesc>(d);
  return ImplDef{
      .op = d.op,
      .impl = d.name,
      .backends = parse_devices(d.devices),
      .summary = fmt::format("{}{}(plugin {})", d.summary, d.summary.empty() ? "" : " ",
                             std::filesystem::path(d.library).filename().string()),
      .dtypes = std::move(dtypes),
      .make = [desc] { return std::make_unique<PluginImpl>(desc); },
      .on_request = true,
      .plugin = d.library,
  };
}

// Every impl checked: all of them, or UsageError listing what is wrong.
std::vector<ImplDef> checked(const Collector& c, const std::string& path) {
  std::vector<ImplDef> defs;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < c.added.size(); ++i) {
    const Added& a = c.added[i];
    const std::string which = a.desc.name.empty() ? fmt::format("impl {}", i + 1) : fmt::format("impl '{}'", a.desc.name);
    try {
      if (a.size != sizeof(opmeter_impl))
        throw UsageError(fmt::format("added with a description of {} bytes, not {} (call "
                                     "registry->add(registry, &impl, sizeof impl))",
                                     a.size, sizeof(opmeter_impl)));
      defs.push_back(impl_def(a.desc, defs));
    } catch (const UsageError& e) {
      problems.push_back(which + ": " + e.what());
    }
  }
  if (!c.failure.empty()) problems.push_back(c.failure);
  if (c.added.empty() && problems.empty()) problems.emplace_back("adds no impls");
  if (problems.size() == 1) throw UsageError(fmt::format("plugin {}: {}", path, problems.front()));
  if (!problems.empty()) throw UsageError(fmt::format("plugin {}:\n  {}", path, fmt::join(problems, "\n  ")));
  return defs;
}

// A library's code runs inside opmeter while it loads (its constructors) and registers (its entry
// point): an exit() or a crash there would end opmeter with the library's exit code and no word
// (exit 0, no results), or with 139. While it runs, this guard turns both into opmeter's error
// naming the plugin, exit 2, as for any library opmeter cannot use. Only what is
// async-signal-safe runs in the signal handler: the message is made before the library runs.
class LoadGuard {
 public:
  LoadGuard(const std::string& path, const char* doing) {
    std::snprintf(what_, sizeof what_, "opmeter: error: plugin %s ", path.c_str());
    std::snprintf(while_, sizeof while_, " while %s; opmeter cannot use it\n", doing);
    static const bool exit_watched = on_exit(on_exit_while_loading, nullptr) == 0;
    (void)exit_watched;
    stack_t alt{};
    alt.ss_sp = alt_stack_;
    alt.ss_size = sizeof alt_stack_;
    sigaltstack(&alt, &old_stack_);  // a library that overflows the stack is caught too
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i].number, &sa, &old_[i]);
    active_ = 1;
  }
  ~LoadGuard() {
    active_ = 0;
    for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i].number, &old_[i], nullptr);
    sigaltstack(&old_stack_, nullptr);
  }
  LoadGuard(const LoadGuard&) = delete;
  LoadGuard& operator=(const LoadGuard&) = delete;

 private:
  struct Signal {
    int number;
    const char* text;  // "11 (SIGSEGV)": no strsignal in a handler
  };
  static constexpr std::array<Signal, 5> kSignals = {{{SIGSEGV, "11 (SIGSEGV)"},
                                                      {SIGBUS, "7 (SIGBUS)"},
                                                      {SIGILL, "4 (SIGILL)"},
                                                      {SIGFPE, "8 (SIGFPE)"},
                                                      {SIGABRT, "6 (SIGABRT)"}}};
  static_assert(SIGSEGV == 11 && SIGBUS == 7 && SIGILL == 4 && SIGFPE == 8 && SIGABRT == 6);

  static void say(const char* text) {
    for (std::size_t done = 0, n = std::strlen(text); done < n;) {
      ssize_t w = write(STDERR_FILENO, text + done, n - done);
      if (w <= 0) return;
      done += static_cast<std::size_t>(w);
    }
  }
  static void on_fatal_signal(int number) {
    if (!active_) return;  // SA_RESETHAND: the default action follows
    say(what_);
    say("crashed with signal ");
    for (auto& s : kSignals)
      if (s.number == number) say(s.text);
    say(while_);
    _exit(2);
  }
  static void on_exit_while_loading(int status, void*) {
    if (!active_) return;
    std::fflush(stdout);
    char code[32];
    std::snprintf(code, sizeof code, "called exit(%d)", status);
    say(what_);
    say(code);
    say(while_);
    _exit(2);
  }

  static inline volatile sig_atomic_t active_ = 0;
  static inline char what_[4200] = {}, while_[128] = {};
  static inline char alt_stack_[1 << 16] = {};
  struct sigaction old_[kSignals.size()]{};
  stack_t old_stack_{};
};

std::mutex& loading() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& loaded() {
  static std::vector<std::string> paths;
  return paths;
}

}  // namespace

void load_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Absolute, so that dlopen never searches the library path for a bare name; links resolved, so
  // that one library is one entry.
  const std::string library = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  std::lock_guard lock(loading());
  if (std::find(loaded().begin(), loaded().end(), library) != loaded().end()) return;
  if (!fs::exists(library, ec)) throw UsageError(fmt::format("plugin {}: no such file", path));
  if (fs::is_directory(library, ec)) throw UsageError(fmt::format("plugin {}: is a directory, not a shared library", path));
  // Kept open for the life of the process: its impls' functions live in it.
  void* handle = nullptr;
  {
    LoadGuard guard(path, "loading (in its library's constructors)");
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!handle) throw UsageError(fmt::format("plugin {}: cannot load it as a shared library: {}", path, dlerror()));
  auto entry = reinterpret_cast<opmeter_plugin_register_fn>(dlsym(handle, OPMETER_PLUGIN_ENTRY));
  if (!entry) {
    dlclose(handle);
    throw UsageError(fmt::format("plugin {}: not an opmeter plugin: it exports no {} (see include/opmeter/plugin_abi.h)",
                                 path, OPMETER_PLUGIN_ENTRY));
  }
  Collector collector{library, {}, {}};
  opmeter_registry registry{OPMETER_PLUGIN_ABI, &collector, add_impl};
  int abi = 0;
  {
    LoadGuard guard(path, "registering (in " OPMETER_PLUGIN_ENTRY ")");
    abi = entry(&registry);
  }
  if (abi != OPMETER_PLUGIN_ABI) {
    dlclose(handle);
    throw UsageError(fmt::format("plugin {}: built for plugin ABI {}, this opmeter speaks {}; rebuild it against this "
                                 "opmeter's include/opmeter/plugin_abi.h",
                                 path, abi, OPMETER_PLUGIN_ABI));
  }
  std::vector<ImplDef> defs;
  try {
    defs = checked(collector, path);
  } catch (const UsageError&) {
    dlclose(handle);  // none of its impls is registered: nothing points into it
    throw;
  }
  for (auto& def : defs) Registry::global().add(std::move(def));
  loaded().push_back(library);
}

std::vector<std::string> loaded_plugins() {
  std::lock_guard lock(loading());
  return loaded();
}

}  // namespace opmeter
