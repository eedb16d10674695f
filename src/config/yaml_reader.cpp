#include "config/yaml_reader.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config.hpp"
#include "opmeter/errors.hpp"

namespace opmeter {
namespace {
std::string shown(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}
// A quoted scalar is a string in YAML (and in PyYAML, which torchao's configs are written for),
// never a number or a boolean.
bool quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }
}  // namespace

void YamlReader::fail(const YAML::Node& at, const std::string& message) const {
  auto mark = at.Mark();
  if (mark.line < 0) throw ConfigError(file_, 0, 0, message);
  throw ConfigError(file_, mark.line + 1, mark.column + 1, message);
}

std::int64_t YamlReader::integer(const YAML::Node& n, const std::string& what, std::int64_t lo, std::int64_t hi) const {
  std::int64_t v = 0;
  if (quoted(n))
    fail(n, fmt::format("{}: expected an integer, got the string \"{}\" (write it without quotes)", what, n.Scalar()));
  if (!n.IsScalar() || !YAML::convert<std::int64_t>::decode(n, v))
    fail(n, fmt::format("{}: expected an integer in {}..{}, got {}", what, lo, hi, shown(n)));
  if (v < lo || v > hi) fail(n, fmt::format("{}: {} is out of range, expected {}..{}", what, v, lo, hi));
  return v;
}

double YamlReader::number(const YAML::Node& n, const std::string& what, double lo, double hi) const {
  double v = 0;
  if (quoted(n))
    fail(n, fmt::format("{}: expected a number, got the string \"{}\" (write it without quotes)", what, n.Scalar()));
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v))
    fail(n, fmt::format("{}: expected a number, got {}", what, shown(n)));
  if (!(v >= lo && v <= hi)) fail(n, fmt::format("{}: {} is out of range, expected {}..{}", what, v, lo, hi));
  return v;
}

bool YamlReader::boolean(const YAML::Node& n, const std::string& what) const {
  bool v = false;
  // A quoted "false" is a string: YAML (and Python's bool() of it, true) does not read it as false.
  if (quoted(n))
    fail(n,
         fmt::format("{}: expected true or false, got the string \"{}\" (write it without quotes)", what, n.Scalar()));
  // yaml-cpp reads y and n as booleans; YAML 1.1 readers such as PyYAML read them as strings.
  if (n.IsScalar() && (n.Scalar() == "y" || n.Scalar() == "Y" || n.Scalar() == "n" || n.Scalar() == "N"))
    fail(n, fmt::format("{}: expected true or false, got '{}' (PyYAML reads it as a string)", what, n.Scalar()));
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    fail(n, fmt::format("{}: expected true or false, got {}", what, shown(n)));
  return v;
}

std::string YamlReader::text(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) fail(n, fmt::format("{}: expected a name, got {}", what, shown(n)));
  return n.Scalar();
}

std::vector<std::string> YamlReader::text_list(const YAML::Node& n, const std::string& what) const {
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence()) fail(n, fmt::format("{}: expected a name or a list of names, got {}", what, shown(n)));
  if (n.size() == 0) fail(n, fmt::format("{}: the list is empty", what));
  std::vector<std::string> out;
  std::set<std::string> seen;  // a set: a list of 10^5 values checks in n log n, not n^2
  for (const auto& item : n) {
    out.push_back(text(item, what));
    // Listed twice would be measured twice under one case string.
    if (!seen.insert(out.back()).second) fail(item, fmt::format("{}: '{}' is listed twice", what, out.back()));
  }
  return out;
}

std::vector<std::int64_t> YamlReader::integer_list(const YAML::Node& n, const std::string& what, std::int64_t lo,
                                                   std::int64_t hi) const {
  if (n.IsScalar()) return {integer(n, what, lo, hi)};
  if (!n.IsSequence()) fail(n, fmt::format("{}: expected an integer or a list of integers, got {}", what, shown(n)));
  if (n.size() == 0) fail(n, fmt::format("{}: the list is empty", what));
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen;
  for (const auto& item : n) {
    out.push_back(integer(item, what, lo, hi));
    if (!seen.insert(out.back()).second) fail(item, fmt::format("{}: {} is listed twice", what, out.back()));
  }
  return out;
}

std::vector<std::string> YamlReader::integer_text_list(const YAML::Node& n, const std::string& what) const {
  auto out = text_list(n, what);
  auto check = [&](const YAML::Node& item) {
    if (quoted(item))
      fail(item, fmt::format("{}: expected an integer, got the string \"{}\" (write it without quotes)", what,
                             item.Scalar()));
    bool b = false;
    if (YAML::convert<bool>::decode(item, b))
      fail(item, fmt::format("{}: expected an integer, got the boolean '{}' (a yes/no parameter is written 0 or 1)",
                             what, item.Scalar()));
  };
  if (n.IsSequence())
    for (const auto& item : n) check(item);
  else check(n);
  return out;
}

void YamlReader::expect_map(const YAML::Node& n, const std::string& what) const {
  if (!n.IsMap()) fail(n, fmt::format("{}: expected a mapping of key: value, got {}", what, shown(n)));
}

void YamlReader::reject_duplicate_keys(const YAML::Node& root) const {
  // Each collection once: an alias is the node it names (same mark), so a tree of aliases that
  // expands exponentially is still walked in linear time.
  std::vector<YAML::Node> todo{root};
  std::set<std::size_t> seen;
  while (!todo.empty()) {
    YAML::Node n = todo.back();
    todo.pop_back();
    if (!(n.IsMap() || n.IsSequence()) || !seen.insert(static_cast<std::size_t>(n.Mark().pos)).second) continue;
    if (n.IsSequence()) {
      for (const auto& item : n) todo.push_back(item);
      continue;
    }
    std::map<std::string, YAML::Mark> first;
    for (const auto& kv : n) {
      if (kv.first.IsScalar()) {
        auto [at, fresh] = first.emplace(kv.first.Scalar(), kv.first.Mark());
        if (!fresh)
          fail(kv.first, fmt::format("key '{}' given twice in one mapping (first at {}:{}); give it once",
                                     kv.first.Scalar(), at->second.line + 1, at->second.column + 1));
      }
      todo.push_back(kv.second);
    }
  }
}

void YamlReader::check_keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) const {
  for (const auto& kv : map) {
    // A key written as a list or a mapping ([a]: 1) is no name at all: say so, not "unknown key ''".
    if (!kv.first.IsScalar()) fail(kv.first, fmt::format("a key in {} is {}: keys are names", where, shown(kv.first)));
    auto key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    auto near = nearest(key, allowed);
    fail(kv.first, near ? fmt::format("unknown key '{}' in {}; did you mean '{}'?", key, where, *near)
                        : fmt::format("unknown key '{}' in {}; valid keys: {}", key, where, fmt::join(allowed, ", ")));
  }
}

void YamlReader::resolve_merge_keys(YAML::Node root) const {
  // Each collection once (by its mark, as above: an alias is the node it names), after its
  // children, in document order: a merge's sources (anchored earlier, or its own children) are
  // then whole, merges included. Iterative, so no nesting can exhaust the stack.
  std::set<std::size_t> seen;
  std::vector<std::pair<YAML::Node, bool>> todo{{root, false}};  // the node, and whether its children are done
  while (!todo.empty()) {
    auto [n, children_done] = todo.back();
    todo.pop_back();
    if (!children_done) {
      if (!(n.IsMap() || n.IsSequence()) || !seen.insert(static_cast<std::size_t>(n.Mark().pos)).second) continue;
      todo.emplace_back(n, true);
      std::vector<YAML::Node> children;
      for (auto it = n.begin(); it != n.end(); ++it)
        children.push_back(n.IsMap() ? YAML::Node(it->second) : YAML::Node(*it));
      for (auto c = children.rbegin(); c != children.rend(); ++c) todo.emplace_back(*c, false);  // first child first
      continue;
    }
    if (n.IsMap()) merge_into(n);
  }
}

void YamlReader::merge_into(YAML::Node map) const {
  std::optional<YAML::Node> merge;
  std::unordered_set<std::string> keys;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) continue;
    if (kv.first.Scalar() == "<<" && kv.first.Tag() != "!") merge = kv.second;
    keys.insert(kv.first.Scalar());
  }
  if (!merge) return;
  std::vector<YAML::Node> sources;
  if (merge->IsMap()) sources.push_back(*merge);
  else if (merge->IsSequence())
    for (const auto& m : *merge) sources.push_back(m);
  else fail(*merge, "a merge key (<<) takes a mapping or a list of mappings, e.g. <<: *defaults");
  map.remove("<<");
  std::set<std::size_t> merged;  // a source listed twice adds nothing the second time
  for (const auto& source : sources) {
    if (!source.IsMap()) fail(source, "a merge key (<<) takes a mapping or a list of mappings, e.g. <<: [*a, *b]");
    if (!merged.insert(static_cast<std::size_t>(source.Mark().pos)).second) continue;
    for (const auto& kv : source)
      if (kv.first.IsScalar() && keys.insert(kv.first.Scalar()).second) map.force_insert(kv.first, kv.second);
  }
}

}  // namespace opmeter
