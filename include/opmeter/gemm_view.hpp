#pragma once
// An op's main work seen as GEMMs (OpDef::gemm_view): what tile, wave and padding effects act on,
// for `opmeter predict`'s features. Each GEMM-like op declares its own view.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "opmeter/case.hpp"

namespace opmeter {

// `count` GEMMs of M x N x K.
struct GemmView {
  double m = 0, n = 0, k = 0;
  double count = 1;
};

// A parameter's integer value; nullopt when the case lacks it or it is not an integer (a view is
// then not given: predict reads any results file, valid cases or not).
inline std::optional<double> integer_param(const Case& c, const std::string& key) {
  if (!c.has(key)) return std::nullopt;
  const std::string& text = c.get(key);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return double(v);
}

}  // namespace opmeter
