#pragma once
// CPU energy from RAPL through Linux's powercap interface: package zones `intel-rapl:N` (AMD CPUs
// expose theirs under the same name) and their subzones `intel-rapl:N:M` named dram, core or
// uncore. Each zone has a cumulative counter `energy_uj` that wraps to 0 after
// `max_energy_range_uj`. Results count the packages and, where present, dram (core and uncore
// are parts of the package).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "opmeter/energy_counter.hpp"

namespace opmeter::rapl {

inline constexpr const char* kDefaultRoot = "/sys/class/powercap";
// Where zones are looked for: $OPMETER_POWERCAP_ROOT (tests point it at a fake tree), else
// kDefaultRoot.
std::string powercap_root();

// --- Pure counter arithmetic (unit-tested with synthetic readings) -------------------------------

// Microjoules from `before` to `now` of a counter that wraps to 0 after max_range_uj:
// (now - before) mod (max_range_uj + 1). Exact when at most one wrap happened between the reads.
std::uint64_t counter_delta_uj(std::uint64_t before, std::uint64_t now, std::uint64_t max_range_uj);

// The most power one domain plausibly draws (today's largest server packages draw ~500 W).
inline constexpr double kMaxPlausibleWatts = 1000;
// Seconds between reads so that no two reads are a whole wrap apart: half the time the counter
// takes to wrap at `max_watts`, within [1 ms, 60 s]. (~131 s for a typical 262 kJ range, so 60 s.)
double poll_interval_s(std::uint64_t max_range_uj, double max_watts = kMaxPlausibleWatts);

// The energy a counter's readings add up to, in order, each step taken mod the range.
class CounterTotal {
 public:
  explicit CounterTotal(std::uint64_t max_range_uj) : max_range_uj_(max_range_uj) {}
  void add(std::uint64_t reading);
  std::uint64_t microjoules() const { return total_uj_; }
  double joules() const { return static_cast<double>(total_uj_) * 1e-6; }
  bool advanced() const { return total_uj_ > 0; }

 private:
  std::uint64_t max_range_uj_;
  std::optional<std::uint64_t> last_;
  std::uint64_t total_uj_ = 0;
};

// --- Discovery -----------------------------------------------------------------------------------

struct Domain {
  std::string zone;  // "intel-rapl:0", "intel-rapl:0:1"
  std::string name;  // the zone's `name`: "package-0", "dram", "core", "uncore", "psys"
  std::string kind;  // "package", "dram", "core", "uncore"; else the name
  std::string energy_path;
  std::uint64_t max_range_uj = 0;
  bool counted() const { return kind == "package" || kind == "dram"; }  // in results' energy
};

struct Discovery {
  std::string root;
  std::vector<Domain> domains;     // every readable zone, by zone name
  std::vector<std::string> notes;  // zones left out, and why (an unreadable dram)
  std::string reason;              // why package energy cannot be read; empty when it can
  bool ok() const { return reason.empty(); }
  std::vector<Domain> counted() const;  // packages, and dram where readable
};
Discovery discover(const std::string& root = powercap_root());

// Why a counter file could not be read, from the errno of the failed open or read.
std::string unreadable_reason(const std::string& path, int err);
// A counter file's value (a decimal number of microjoules); empty with `why`.
std::optional<std::uint64_t> read_uj(const std::string& path, std::string& why);

// --- The meter -----------------------------------------------------------------------------------

// Energy of the counted domains over a window: read at start() and stop(), and by a thread in
// between often enough (poll_interval_s) that every wrap is seen.
class Meter final : public EnergyCounter {
 public:
  explicit Meter(std::vector<Domain> domains);
  ~Meter() override;
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;

  void start() override;
  std::optional<WindowEnergy> stop(std::string& why) override;
  double poll_interval_s() const { return poll_s_; }

 private:
  struct State;
  void read_all();
  std::vector<Domain> domains_;
  double poll_s_;
  std::unique_ptr<State> state_;
};

// A meter of the counted domains under `root`; null, with `why`, where package energy cannot be
// read.
std::unique_ptr<Meter> open_meter(std::string& why, const std::string& root = powercap_root());

}  // namespace opmeter::rapl
