// Features of a case: its GEMM view and the columns the learned models see.
#include "predict/features.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::predict {

namespace {

std::optional<std::int64_t> integer(const std::string& text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty()) return std::nullopt;
  return v;
}

double log2p(double v) { return v >= 0 ? std::log2(1 + v) : -std::log2(1 - v); }

}  // namespace

std::optional<GemmView> gemm_view(const Case& c) {
  const OpDef* op = Registry::global().op(c.op);
  if (!op || !op->gemm_view) return std::nullopt;
  auto v = op->gemm_view(c);
  if (v && (v->m < 1 || v->n < 1 || v->k < 1 || v->count <= 0)) return std::nullopt;
  return v;
}

FeatureSpace FeatureSpace::of(const std::vector<Sample>& group) {
  std::vector<std::string> order;             // params in order of first appearance
  std::map<std::string, bool> all_integer;
  std::map<std::string, std::set<std::string>> values;
  for (const Sample& s : group)
    for (auto& [k, v] : s.kase.params) {
      if (!all_integer.count(k)) {
        order.push_back(k);
        all_integer[k] = true;
      }
      if (!integer(v)) all_integer[k] = false;
      values[k].insert(v);
    }
  FeatureSpace f;
  for (auto& k : order) {
    if (all_integer[k])
      f.numeric.push_back(k);
    else
      f.categorical.emplace_back(k, std::vector<std::string>(values[k].begin(), values[k].end()));
  }
  return f;
}

std::vector<std::string> FeatureSpace::names() const {
  std::vector<std::string> out = numeric;
  for (auto& [k, vs] : categorical)
    for (auto& v : vs) out.push_back(k + "=" + v);
  for (const char* n : {"log2_flops", "log2_bytes", "log2_intensity", "log2_m", "log2_n", "log2_k", "log2_count",
                        "log2_mn", "log2_min_dim", "fill_m16", "fill_n16", "fill_k16", "log2_analytic_us"})
    out.emplace_back(n);
  return out;
}

std::vector<float> FeatureSpace::row(const Sample& s, double analytic_s) const {
  std::vector<float> r;
  for (auto& k : numeric) {
    std::optional<std::int64_t> v = s.kase.has(k) ? integer(s.kase.get(k)) : std::nullopt;
    r.push_back(v ? float(log2p(double(*v))) : 0.0f);
  }
  for (auto& [k, vs] : categorical) {
    const std::string* v = s.kase.has(k) ? &s.kase.get(k) : nullptr;
    for (auto& value : vs) r.push_back(v && *v == value ? 1.0f : 0.0f);
  }
  r.push_back(float(log2p(s.flops)));
  r.push_back(float(log2p(s.bytes)));
  r.push_back(float(std::log2((1 + std::max(0.0, s.flops)) / (1 + std::max(0.0, s.bytes)))));
  auto v = gemm_view(s.kase);
  for (double x : {v ? v->m : 0.0, v ? v->n : 0.0, v ? v->k : 0.0, v ? v->count : 0.0}) r.push_back(float(log2p(x)));
  // The output's size (the parallel work), the smallest dimension (what starves a micro-kernel),
  // and how full the last 16-wide vector or tile of each dimension is (padding waste).
  r.push_back(v ? float(log2p(v->m * v->n)) : 0.0f);
  r.push_back(v ? float(log2p(std::min({v->m, v->n, v->k}))) : 0.0f);
  auto fill = [](double x) { return x > 0 ? float(x / (std::ceil(x / 16) * 16)) : 0.0f; };
  for (double x : {v ? v->m : 0.0, v ? v->n : 0.0, v ? v->k : 0.0}) r.push_back(fill(x));
  r.push_back(analytic_s > 0 ? float(std::log2(analytic_s * 1e6)) : 0.0f);
  return r;
}

nlohmann::json FeatureSpace::to_json() const {
  nlohmann::json cat = nlohmann::json::array();
  for (auto& [k, vs] : categorical) cat.push_back({{"param", k}, {"values", vs}});
  return {{"numeric", numeric}, {"categorical", cat}};
}

FeatureSpace FeatureSpace::from_json(const nlohmann::json& j) {
  try {
    FeatureSpace f;
    f.numeric = j.at("numeric").get<std::vector<std::string>>();
    for (const auto& c : j.at("categorical"))
      f.categorical.emplace_back(c.at("param").get<std::string>(), c.at("values").get<std::vector<std::string>>());
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("features: malformed ({})", e.what()));
  }
}

}  // namespace opmeter::predict
