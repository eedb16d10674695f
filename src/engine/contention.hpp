#pragma once
// Whether other processes shared the CPUs while a case was measured: a microsecond op whose
// threads wait for a timeslice is reported in milliseconds, and its samples agree with each other
// (every one pays the same wait), so the noise criterion cannot tell. The CPU time others used
// during the case says it. Parsers are pure functions of the /proc texts; read_cpu_sample() does
// the I/O.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opmeter {

struct Result;

// Clock ticks (USER_HZ) summed over a set of CPUs, from /proc/stat.
struct CpuTicks {
  double busy = 0;   // user + nice + system + irq + softirq (guest time is inside user)
  double steal = 0;  // taken by the hypervisor for other virtual machines
};
// The `cpuN` lines of `cpus` (the aggregate `cpu` line when `cpus` is empty); nullopt when a
// line is missing or malformed.
std::optional<CpuTicks> parse_proc_stat(const std::string& text, const std::vector<int>& cpus);
// utime + stime of a /proc/<pid>/stat text (fields 14 and 15, counted after the command's `)`,
// which may itself hold spaces and parentheses); nullopt when malformed.
std::optional<double> parse_process_ticks(const std::string& stat_text);

struct LoadAverage {
  double one = 0, five = 0, fifteen = 0;  // runnable + uninterruptible tasks, averaged
  int running = 0, tasks = 0;             // runnable now / all
};
std::optional<LoadAverage> parse_loadavg(const std::string& text);  // /proc/loadavg
nlohmann::json load_json(const LoadAverage& l, int usable_cpus);

// The machine's CPUs and this process (with its children: a worker runs the calls of some
// impls) at one moment.
struct CpuSample {
  CpuTicks machine;      // over the CPUs this process may run on
  double own_ticks = 0;  // this process and its descendants
  double wall_s = 0;     // steady clock
  bool valid = false;    // /proc was readable
};

struct Contention {
  double others_cpus = 0;  // CPUs' worth of time other processes used on our CPUs (average)
  double steal_cpus = 0;   // CPUs' worth of time the hypervisor took
  double taken_share = 0;  // of the case's own CPUs (threads), what others and steal took: 0..1
  bool contended = false;  // taken_share > kContendedShare
};

// Others may use the CPUs a case leaves free; what they take beyond those comes out of the
// case's threads. Above a quarter of the case's CPU time a multi-threaded op, whose calls wait at
// a barrier for their slowest thread, loses a timeslice (milliseconds) on most calls; a quiet
// machine's daemons stay far below it (under 2% of one CPU), one busy process on one of two
// CPUs the case uses is 50%.
inline constexpr double kContendedShare = 0.25;
Contention contention(const CpuSample& before, const CpuSample& after, double ticks_per_s, int usable_cpus,
                      int threads);

// Records the contention in the result's details and, above kContendedShare, flags it
// `contended` with the reason (details["contention"]) the console prints as a warning.
void note_contention(Result& r, const Contention& c);

// Reads /proc/stat (the CPUs of this process's affinity), /proc/self/stat and its descendants';
// `valid` false when /proc is not there.
CpuSample read_cpu_sample();
std::optional<LoadAverage> read_load_average();
double clock_ticks_per_s();

}  // namespace opmeter
