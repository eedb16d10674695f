// RAPL through powercap: the wrap arithmetic, zone discovery, and the polling meter.
#include "sensors/rapl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace opmeter::rapl {

std::string powercap_root() {
  const char* env = std::getenv("OPMETER_POWERCAP_ROOT");
  return env && *env ? env : kDefaultRoot;
}

// --- Counter arithmetic ----------------------------------------------------------------------------

std::uint64_t counter_delta_uj(std::uint64_t before, std::uint64_t now, std::uint64_t max_range_uj) {
  if (now >= before) return now - before;
  // Wrapped: up to the top of the range, one step to 0, then up to `now`.
  return (max_range_uj - before) + 1 + now;
}

double poll_interval_s(std::uint64_t max_range_uj, double max_watts) {
  double wrap_s = static_cast<double>(max_range_uj) * 1e-6 / max_watts;
  return std::clamp(0.5 * wrap_s, 1e-3, 60.0);
}

void CounterTotal::add(std::uint64_t reading) {
  if (last_) total_uj_ += counter_delta_uj(*last_, reading, max_range_uj_);
  last_ = reading;
}

// --- Reading counter files -------------------------------------------------------------------------

namespace {

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string trimmed(std::string s) {
  auto not_space = [](unsigned char ch) { return !std::isspace(ch); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// The whole of a small sysfs file; empty with errno in `err` when it cannot be read.
std::optional<std::string> read_small_file(const std::string& path, int& err) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return std::nullopt;
  }
  char buf[128];
  ssize_t n;
  do n = ::read(fd, buf, sizeof(buf) - 1);
  while (n < 0 && errno == EINTR);
  err = n < 0 ? errno : 0;
  ::close(fd);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace

std::string unreadable_reason(const std::string& path, int err) {
  const std::string file = file_name(path);
  if (err == EACCES || err == EPERM)
    return fmt::format("RAPL {} not readable (permission denied: root only since Linux 5.10; run as root or grant "
                       "read access): {}",
                       file, path);
  if (err == ENOENT) return fmt::format("RAPL {} missing: {}", file, path);
  return fmt::format("RAPL {} not readable ({}): {}", file, std::strerror(err), path);
}

std::optional<std::uint64_t> read_uj(const std::string& path, std::string& why) {
  int err = 0;
  auto text = read_small_file(path, err);
  if (!text) {
    why = unreadable_reason(path, err);
    return std::nullopt;
  }
  std::string value = trimmed(*text);
  bool digits = !value.empty() && value.size() <= 20 &&
                std::all_of(value.begin(), value.end(), [](unsigned char ch) { return std::isdigit(ch); });
  errno = 0;
  std::uint64_t uj = digits ? std::strtoull(value.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE) {
    why = fmt::format("RAPL {} holds '{}', not a number of microjoules: {}", file_name(path), value, path);
    return std::nullopt;
  }
  return uj;
}

// --- Discovery -------------------------------------------------------------------------------------

namespace {

// The numbers of `intel-rapl:N` ({N}) or `intel-rapl:N:M` ({N, M}); empty for any other name
// (the `intel-rapl` control type, `intel-rapl-mmio:N` which repeats the package over MMIO).
std::vector<int> zone_numbers(const std::string& name) {
  constexpr std::string_view prefix = "intel-rapl:";
  if (!name.starts_with(prefix)) return {};
  std::vector<int> out;
  std::size_t at = prefix.size();
  while (true) {
    std::size_t end = name.find(':', at);
    std::string part = name.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (part.empty() || part.size() > 6 || !std::all_of(part.begin(), part.end(), [](unsigned char ch) { return std::isdigit(ch); })) return {};
    out.push_back(std::atoi(part.c_str()));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out.size() <= 2 ? out : std::vector<int>{};
}

std::string first_line(const std::string& path) {
  int err = 0;
  auto text = read_small_file(path, err);
  return text ? trimmed(text->substr(0, text->find('\n'))) : std::string();
}

}  // namespace

std::vector<Domain> Discovery::counted() const {
  std::vector<Domain> out;
  for (auto& d : domains)
    if (d.counted()) out.push_back(d);
  return out;
}

Discovery discover(const std::string& root) {
  namespace fs = std::filesystem;
  Discovery d;
  d.root = root;
  std::vector<std::pair<std::vector<int>, std::string>> zones;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (auto numbers = zone_numbers(name); !numbers.empty()) zones.emplace_back(numbers, name);
  }
  if (zones.empty()) {
    d.reason = fmt::format("no RAPL: {} has no intel-rapl zone", root);
    return d;
  }
  std::sort(zones.begin(), zones.end());  // by number: intel-rapl:2 before intel-rapl:10

  for (auto& [numbers, zone] : zones) {
    Domain dom;
    dom.zone = zone;
    const std::string dir = (fs::path(root) / zone).string();
    dom.name = first_line(dir + "/name");
    if (dom.name.empty()) dom.name = zone;
    // A top-level zone is a package (`package-N`) or the platform (`psys`); subzones are named
    // by what they measure.
    dom.kind = numbers.size() == 1 && dom.name.starts_with("package") ? "package" : dom.name;
    dom.energy_path = dir + "/energy_uj";
    std::string why;
    auto range = read_uj(dir + "/max_energy_range_uj", why);
    bool readable = range && *range > 0 && read_uj(dom.energy_path, why);
    if (range && *range == 0) why = fmt::format("RAPL max_energy_range_uj is 0: {}/max_energy_range_uj", dir);
    if (!readable) {
      if (dom.kind == "package") {
        if (d.reason.empty()) d.reason = why;
      } else {
        d.notes.push_back(fmt::format("{} ({}) left out: {}", zone, dom.name, why));
      }
      continue;
    }
    dom.max_range_uj = *range;
    d.domains.push_back(std::move(dom));
  }
  if (d.reason.empty() && std::none_of(d.domains.begin(), d.domains.end(), [](auto& x) { return x.kind == "package"; })) {
    std::vector<std::string> names;
    for (auto& x : d.domains) names.push_back(x.zone + " " + x.name);
    d.reason = fmt::format("no RAPL package zone under {} (found: {})", root,
                           names.empty() ? std::string("none readable") : fmt::format("{}", fmt::join(names, ", ")));
  }
  return d;
}

// --- The meter -------------------------------------------------------------------------------------

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

struct Meter::State {
  std::vector<CounterTotal> totals;
  std::string error;  // the first failed read
  double t_start = 0;
  std::thread poller;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
};

Meter::Meter(std::vector<Domain> domains) : domains_(std::move(domains)), poll_s_(60), state_(std::make_unique<State>()) {
  for (auto& d : domains_) poll_s_ = std::min(poll_s_, rapl::poll_interval_s(d.max_range_uj));
}

Meter::~Meter() {
  std::string ignored;
  if (state_->poller.joinable()) stop(ignored);
}

// Only one thread reads at a time: start() before the poller exists, the poller, stop() after
// joining it.
void Meter::read_all() {
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    std::string why;
    if (auto uj = read_uj(domains_[i].energy_path, why))
      state_->totals[i].add(*uj);
    else if (state_->error.empty())
      state_->error = why;
  }
}

void Meter::start() {
  std::string ignored;
  if (state_->poller.joinable()) stop(ignored);
  State& s = *state_;
  s.totals.clear();
  for (auto& d : domains_) s.totals.emplace_back(d.max_range_uj);
  s.error.clear();
  s.stopping = false;
  s.t_start = now_s();
  read_all();
  s.poller = std::thread([this] {
    State& st = *state_;
    std::unique_lock lock(st.mutex);
    while (!st.wake.wait_for(lock, std::chrono::duration<double>(poll_s_), [&] { return st.stopping; })) {
      lock.unlock();
      read_all();
      lock.lock();
    }
  });
}

std::optional<WindowEnergy> Meter::stop(std::string& why) {
  State& s = *state_;
  if (!s.poller.joinable()) {
    why = "RAPL meter stopped without being started";
    return std::nullopt;
  }
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  s.poller.join();
  read_all();
  WindowEnergy e;
  e.seconds = now_s() - s.t_start;
  if (!s.error.empty()) {
    why = s.error;
    return std::nullopt;
  }
  std::map<std::string, bool> advanced;
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    const std::string& kind = domains_[i].kind;
    e.joules[kind] += s.totals[i].joules();
    advanced[kind] = advanced[kind] || s.totals[i].advanced();
  }
  if (!advanced["package"]) {
    why = fmt::format("RAPL package counter did not advance over the {:.3f} s window (a frozen powercap tree?)",
                      e.seconds);
    return std::nullopt;
  }
  // A dram counter that never moves is one the platform does not implement, not 0 J.
  for (auto& [kind, moved] : advanced)
    if (!moved) e.joules.erase(kind);
  std::vector<std::string> kinds = {"package"};
  for (auto& [kind, j] : e.joules)
    if (kind != "package") kinds.push_back(kind);
  e.method = fmt::format("RAPL ({})", fmt::join(kinds, " + "));
  return e;
}

std::unique_ptr<Meter> open_meter(std::string& why, const std::string& root) {
  Discovery d = discover(root);
  if (!d.ok()) {
    why = d.reason;
    return nullptr;
  }
  return std::make_unique<Meter>(d.counted());
}

}  // namespace opmeter::rapl
