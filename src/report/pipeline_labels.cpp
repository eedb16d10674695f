// Distinct labels for a report's pipelines.
#include "report/pipeline_labels.hpp"

#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "opmeter/case.hpp"
#include "opmeter/errors.hpp"
#include "pipeline/present/pipeline_outputs.hpp"

namespace opmeter {

std::set<int> pipeline_threads(const pipeline::PipelineSummary& s) {
  std::set<int> out;
  for (const auto& l : s.layers) {
    // A layer without a result (no impl, no time) says nothing of the threads the run used: files
    // from before name its bare case there (threads=1).
    if (l.impl.empty() && !l.measured()) continue;
    try {
      Case c = parse_case(l.case_string);
      if (c.on_host()) out.insert(c.threads);
    } catch (const UsageError&) {
      // A layer this build cannot parse says nothing of the threads.
    }
  }
  return out;
}

namespace {

// A folder's own name, also for "dir/" and "." (the current folder's).
std::string folder_name(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) return "";
  std::error_code ec;
  auto p = fs::absolute(dir, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

// Appends `extra(i)` to the labels that share their text with another; the rest stay as they are.
template <class Extra>
void tell_apart(std::vector<std::string>& labels, Extra extra) {
  std::map<std::string, std::size_t> uses;
  for (auto& l : labels) ++uses[l];
  std::vector<std::string> out = labels;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (uses[labels[i]] > 1) out[i] += extra(i);
  labels = out;
}

}  // namespace

std::vector<std::string> pipeline_labels(const std::vector<pipeline::PipelineSummary>& summaries) {
  std::vector<std::string> labels;
  for (const auto& s : summaries) labels.push_back(pipeline::display_name(s));
  // Threads only where the pipelines that share a name ran with different ones.
  std::map<std::string, std::set<std::set<int>>> threads_by_label;
  for (std::size_t i = 0; i < summaries.size(); ++i) threads_by_label[labels[i]].insert(pipeline_threads(summaries[i]));
  const auto before = labels;
  tell_apart(labels, [&](std::size_t i) {
    auto t = pipeline_threads(summaries[i]);
    return threads_by_label[before[i]].size() > 1 && !t.empty() ? fmt::format(" threads={}", fmt::join(t, "+")) : "";
  });
  tell_apart(labels, [&](std::size_t i) {
    auto folder = folder_name(summaries[i].source);
    return folder.empty() ? std::string() : fmt::format(" ({})", folder);
  });
  tell_apart(labels, [&](std::size_t i) { return fmt::format(" #{}", i + 1); });
  return labels;
}

}  // namespace opmeter
