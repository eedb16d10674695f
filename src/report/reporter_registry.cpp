#include "report/reporter_registry.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/errors.hpp"
#include "util/text.hpp"

namespace opmeter {

ReporterRegistry& ReporterRegistry::global() {
  static ReporterRegistry registry;
  return registry;
}

void ReporterRegistry::add(ReporterDef def) { defs_.push_back(std::move(def)); }

const ReporterDef* ReporterRegistry::find(const std::string& name) const {
  for (auto& d : defs_)
    if (d.name == name || std::find(d.aliases.begin(), d.aliases.end(), name) != d.aliases.end()) return &d;
  return nullptr;
}

std::vector<const ReporterDef*> ReporterRegistry::all() const {
  std::vector<const ReporterDef*> out;
  for (auto& d : defs_) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->order < b->order; });
  return out;
}

std::string ReporterRegistry::known() const {
  std::vector<std::string> parts;
  for (auto* d : all()) {
    std::string names = d->name;
    for (auto& a : d->aliases) names += " or " + a;
    parts.push_back(fmt::format("{} ({})", names, fmt::join(d->files, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::string> parse_formats(const std::string& list, std::vector<std::string>* notes) {
  auto& registry = ReporterRegistry::global();
  std::vector<std::string> out;
  if (list.find_first_not_of(" ") == std::string::npos) {
    for (auto* d : registry.all())
      if (d->by_default) out.push_back(d->name);
    return out;
  }
  for (auto& part : split(list, ',')) {
    auto name = trim(part);
    auto* def = registry.find(name);
    if (!def)
      throw UsageError(name.empty() ? fmt::format("--format '{}': an empty name; known: {}", list, registry.known())
                                    : fmt::format("--format: unknown format '{}'; known: {}", name, registry.known()));
    if (std::find(out.begin(), out.end(), def->name) == out.end()) out.push_back(def->name);
    else if (notes)
      notes->push_back(fmt::format("--format '{}': {}{} is named twice; its files ({}) are written once", list,
                                   def->name, name == def->name ? "" : " (as " + name + ")",
                                   fmt::join(def->files, ", ")));
  }
  return out;
}

}  // namespace opmeter
