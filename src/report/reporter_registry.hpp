#pragma once
// The reporters that write a run's results files, registered by name: `opmeter run --format
// json,csv` picks them. Each registers itself in its own file, as impls do.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/reporter.hpp"

namespace opmeter {

struct ReporterDef {
  std::string name;                  // as --format takes it
  std::vector<std::string> aliases;  // other names for the same files ("gbench" for json)
  std::string summary;               // what it writes, for --help and errors
  std::vector<std::string> files;    // the files it writes in the results directory
  int order = 0;                     // its place in listings and in the default set
  bool by_default = true;            // written when no --format is given
  std::function<std::unique_ptr<Reporter>(const std::string& dir)> make;
};

class ReporterRegistry {
 public:
  static ReporterRegistry& global();
  void add(ReporterDef def);
  const ReporterDef* find(const std::string& name) const;  // by name or alias; null if none
  std::vector<const ReporterDef*> all() const;              // by order
  std::string known() const;  // "csv (results.csv), ..." for messages

 private:
  std::vector<ReporterDef> defs_;
};

struct ReporterRegistrar {
  explicit ReporterRegistrar(ReporterDef def) { ReporterRegistry::global().add(std::move(def)); }
};

// The reporter names of a --format list ("json,csv"; spaces allowed), each once, in the order
// given; the default set when the list is empty. UsageError naming the known ones for an unknown
// or empty name. A format named again (json,json or json,gbench) adds a line to `notes`.
std::vector<std::string> parse_formats(const std::string& list, std::vector<std::string>* notes = nullptr);

}  // namespace opmeter
