#pragma once
// Fusion analysis: for every case measured both as the unfused op sequence (impl named
// `*_unfused`) and in a fused form (any other impl but `reference`), compare time, memory traffic
// (from the op's work models) and GFLOP/s, and give a verdict by a stated threshold.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

struct FusionThresholds {
  double fuse = 1.10;   // speedup at or above which fusing is worth it
  double avoid = 0.95;  // speedup below which the fused form is slower: avoid it
};

struct FusionRow {
  std::string pattern;        // e.g. linear+bias+gelu
  std::string shape;          // the case's parameters
  std::string dtype;
  int threads = 1;
  std::string unfused_impl, fused_impl;
  double unfused_s = 0, fused_s = 0;  // median seconds per call
  double speedup = 0;                 // unfused_s / fused_s
  // The speedup's interval from both medians' 95% intervals (their precisions): at least 95%.
  // Unknown (0 and infinity; null in the JSON) where a median has none (fewer than 6 samples).
  double speedup_low = 0, speedup_high = 0;
  double unfused_bytes = 0, fused_bytes = 0;
  double traffic_reduction = 0;       // 1 - fused_bytes / unfused_bytes
  double unfused_gflops = 0, fused_gflops = 0;
  // fuse | no benefit | avoid; uncertain when the speedup's interval reaches past a threshold
  // (the verdicts of its two ends differ); nothing fused when both forms move the same bytes.
  std::string verdict;
  // The fused case's and its unfused baseline's flags (`unfused:contended`) that make the speedup,
  // and so the verdict, doubtful.
  std::vector<std::string> flags;
};

std::string fusion_verdict(double speedup, const FusionThresholds& t);
// The verdict of a speedup known only within [low, high]: that of both ends, or uncertain.
std::string fusion_verdict(double low, double high, const FusionThresholds& t);
std::vector<FusionRow> fusion_rows(const std::vector<Result>& results, const FusionThresholds& t = {});
nlohmann::json to_json(const FusionRow& row);
nlohmann::json fusion_json(const std::vector<FusionRow>& rows, const FusionThresholds& t);
std::string fusion_markdown(const std::vector<FusionRow>& rows, const FusionThresholds& t);

}  // namespace opmeter
