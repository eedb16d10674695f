#include "engine/contention.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "opmeter/result.hpp"

namespace opmeter {

std::optional<CpuTicks> parse_proc_stat(const std::string& text, const std::vector<int>& cpus) {
  std::vector<std::string> want;
  if (cpus.empty()) want.push_back("cpu");
  for (int c : cpus) want.push_back("cpu" + std::to_string(c));
  CpuTicks sum;
  std::size_t found = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (std::find(want.begin(), want.end(), name) == want.end()) continue;
    // user nice system idle iowait irq softirq steal
    double v[8] = {};
    for (double& x : v)
      if (!(words >> x)) return std::nullopt;
    sum.busy += v[0] + v[1] + v[2] + v[5] + v[6];
    sum.steal += v[7];
    ++found;
  }
  if (found != want.size()) return std::nullopt;
  return sum;
}

std::optional<double> parse_process_ticks(const std::string& stat_text) {
  auto close = stat_text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream words(stat_text.substr(close + 1));
  // Fields 3..13 (state .. cmajflt), then utime (14) and stime (15).
  std::string skip;
  for (int field = 3; field <= 13; ++field)
    if (!(words >> skip)) return std::nullopt;
  double utime = 0, stime = 0;
  if (!(words >> utime >> stime)) return std::nullopt;
  return utime + stime;
}

std::optional<LoadAverage> parse_loadavg(const std::string& text) {
  LoadAverage l;
  char slash = 0;
  std::istringstream words(text);
  if (!(words >> l.one >> l.five >> l.fifteen >> l.running >> slash >> l.tasks) || slash != '/') return std::nullopt;
  return l;
}

nlohmann::json load_json(const LoadAverage& l, int usable_cpus) {
  return {{"loadavg_1m", l.one}, {"loadavg_5m", l.five}, {"loadavg_15m", l.fifteen},
          {"running_tasks", l.running}, {"usable_cpus", usable_cpus}};
}

Contention contention(const CpuSample& before, const CpuSample& after, double ticks_per_s, int usable_cpus,
                      int threads) {
  Contention c;
  const double wall = after.wall_s - before.wall_s;
  if (!before.valid || !after.valid || !(wall > 0) || !(ticks_per_s > 0)) return c;
  const double per_cpu = wall * ticks_per_s;  // ticks one CPU has in the window
  const double others = (after.machine.busy - before.machine.busy) - (after.own_ticks - before.own_ticks);
  c.others_cpus = std::max(0.0, others / per_cpu);
  c.steal_cpus = std::max(0.0, (after.machine.steal - before.machine.steal) / per_cpu);
  const int used = std::clamp(threads, 1, std::max(1, usable_cpus));
  const double free_cpus = std::max(0, usable_cpus - used);
  c.taken_share = std::clamp((c.others_cpus + c.steal_cpus - free_cpus) / used, 0.0, 1.0);
  c.contended = c.taken_share > kContendedShare;
  return c;
}

void note_contention(Result& r, const Contention& c) {
  r.details["others_cpus"] = fmt::format("{:.2f}", c.others_cpus);
  if (c.steal_cpus > 0) r.details["steal_cpus"] = fmt::format("{:.2f}", c.steal_cpus);
  if (!c.contended) return;
  r.add_flag("contended");
  r.details["contention"] = fmt::format(
      "other processes{} took {:.0f}% of the CPU time of this case's {} thread(s) while it was measured: the time is "
      "this machine's share under load, not the op's; measure it on a quiet machine",
      c.steal_cpus > 0 ? " and the hypervisor (steal)" : "", 100 * c.taken_share, r.kase.threads);
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

// The CPU ticks of a process and, through the `children` lists of its threads, of every process
// below it (depth-limited: a worker and what it starts).
double tree_ticks(const std::string& pid, int depth) {
  namespace fs = std::filesystem;
  double ticks = parse_process_ticks(read_text("/proc/" + pid + "/stat")).value_or(0);
  if (depth == 0) return ticks;
  std::error_code ec;
  for (fs::directory_iterator it("/proc/" + pid + "/task", ec), end; !ec && it != end; it.increment(ec)) {
    std::istringstream children(read_text((it->path() / "children").string()));
    std::string child;
    while (children >> child) ticks += tree_ticks(child, depth - 1);
  }
  return ticks;
}

}  // namespace

double clock_ticks_per_s() {
  static const double hz = [] {
    long v = sysconf(_SC_CLK_TCK);
    return v > 0 ? double(v) : 100.0;
  }();
  return hz;
}

CpuSample read_cpu_sample() {
  CpuSample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  static const std::vector<int> cpus = affinity_cpus();
  auto machine = parse_proc_stat(read_text("/proc/stat"), cpus);
  if (!machine || !parse_process_ticks(read_text("/proc/self/stat"))) return s;
  s.machine = *machine;
  s.own_ticks = tree_ticks(std::to_string(::getpid()), 3);
  s.valid = true;
  return s;
}

std::optional<LoadAverage> read_load_average() { return parse_loadavg(read_text("/proc/loadavg")); }

}  // namespace opmeter
