#pragma once
// Typed reads from a YAML tree that fail with ConfigError at the node's file:line:column.
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "opmeter/shapes.hpp"

namespace opmeter {

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const;
  std::int64_t integer(const YAML::Node& n, const std::string& what, std::int64_t lo, std::int64_t hi) const;
  double number(const YAML::Node& n, const std::string& what, double lo, double hi) const;
  bool boolean(const YAML::Node& n, const std::string& what) const;
  std::string text(const YAML::Node& n, const std::string& what) const;
  // A scalar or a sequence of scalars, as a list; a sequence must not be empty.
  std::vector<std::string> text_list(const YAML::Node& n, const std::string& what) const;
  std::vector<std::int64_t> integer_list(const YAML::Node& n, const std::string& what, std::int64_t lo,
                                         std::int64_t hi) const;
  // text_list of values that must be integers as written (a parameter the op's range checks): a
  // quoted value ("64") is a string and a boolean is no integer, both refused here.
  std::vector<std::string> integer_text_list(const YAML::Node& n, const std::string& what) const;
  // Every key of `map` must be in `allowed`; an unknown one is reported with the nearest valid key.
  void check_keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) const;
  void expect_map(const YAML::Node& n, const std::string& what) const;
  // A key given twice in one mapping, anywhere in the tree, fails at its second place: YAML
  // parsers disagree on which value wins (yaml-cpp keeps the first, PyYAML the last).
  void reject_duplicate_keys(const YAML::Node& root) const;
  // YAML's merge keys, as PyYAML reads them (yaml-cpp leaves `<<` a plain key): a mapping's
  // `<<: *anchor` (or a list of anchors, the first winning) adds the keys it lacks, in place.
  void resolve_merge_keys(YAML::Node root) const;
  const std::string& file() const { return file_; }

 private:
  void merge_into(YAML::Node map) const;  // one mapping's `<<`, its sources' own already resolved
  std::string file_;
};

// A config's list of shape generators (custom, pow2, pow2_extended, sweep, llama, random; the
// same as torchao's matrix_shapes), expanded. `nodes`, when given, gets each shape's place in the
// config: a custom shape's [m, k, n] entry, else the generator's entry. Defined in config.cpp.
std::vector<MatShape> read_shapes(const YamlReader& r, const YAML::Node& list,
                                  std::vector<YAML::Node>* nodes = nullptr);

// A config of a few lines can ask for millions of cases (generators and lists multiply, anchors
// repeat them): the shapes a list may give, and the cases a config may plan, are capped; past
// either, the config's error at `at`. Expanding stops on Ctrl-C or SIGTERM too (Interrupted).
inline constexpr std::size_t kMaxConfigShapes = 100000;   // random's largest count
inline constexpr std::size_t kMaxPlannedCases = 2000000;  // before `sample:` picks from them
void check_plan_size(const YamlReader& r, const YAML::Node& at, std::size_t planned);

}  // namespace opmeter
