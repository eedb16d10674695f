// Samples: cases with their work and, when measured, their median time per call.
#include "predict/sample.hpp"

#include <map>

#include <fmt/format.h>

#include "config/config.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::predict {

std::string group_key(const Case& c) {
  // Hot and cold runs of one op are two models: warm caches take a third of the time of cold ones
  // at small sizes, and one model of both fits neither (its held-out error went from 8% to 49%).
  return fmt::format("{}/{}/{}/{}{}", c.device, c.op, c.impl, to_string(c.dtype), c.hot ? "/hot" : "");
}

namespace {

const OpDef& op_or_throw(const std::string& name) {
  const OpDef* op = Registry::global().op(name);
  if (op && op->work) return *op;
  std::vector<std::string> known;
  for (const OpDef* o : Registry::global().ops()) known.push_back(o->name);
  throw UsageError(unknown_name("op", name, known));
}

}  // namespace

Sample sample_of(const Case& c) {
  const Work w = op_or_throw(c.op).work(c);
  Sample s;
  s.kase = c;
  s.case_string = c.to_string();
  s.flops = w.flops;
  s.bytes = w.bytes();
  return s;
}

std::vector<Sample> samples_from(const ResultSet& rs) {
  std::vector<Sample> out;
  for (const Result& r : rs.results) {
    if (r.status != Status::ok || !(r.summary.median > 0)) continue;
    Sample s;
    s.kase = r.kase;
    s.case_string = r.case_string.empty() ? r.kase.to_string() : r.case_string;
    Work w = r.work;
    // Older or foreign records may lack the work: the op's own model gives it.
    if (w.flops <= 0 && w.bytes() <= 0) {
      if (const OpDef* op = Registry::global().op(r.kase.op); op && op->work) {
        try {
          w = op->work(r.kase);
        } catch (const std::exception&) {
          // A case this build cannot read keeps zero work; its time still counts.
        }
      }
    }
    s.flops = w.flops;
    s.bytes = w.bytes();
    s.time_s = r.summary.median;
    s.source = rs.source;
    s.contended = r.has_flag("contended");
    s.unconverged = r.has_flag("unconverged");
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Sample> merge_samples(const std::vector<ResultSet>& sets) {
  std::vector<Sample> out;
  std::map<std::string, std::size_t> index;  // case string -> position in out
  for (const ResultSet& rs : sets)
    for (Sample& s : samples_from(rs)) {
      if (auto it = index.find(s.case_string); it != index.end()) {
        // The later measurement replaces the earlier one, but a contended one replaces no clean one.
        if (!s.contended || out[it->second].contended) out[it->second] = std::move(s);
      } else {
        index.emplace(s.case_string, out.size());
        out.push_back(std::move(s));
      }
    }
  return out;
}

}  // namespace opmeter::predict
