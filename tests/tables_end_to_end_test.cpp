// The recipe and training tables as a run writes them (quantization.csv, training.csv and
// results.json's sections), read back and recomputed from the journal's own samples: each
// speedup is the baseline's median over the row's, each SQNR the result's metric.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.hpp"
#include "tests/onednn_caps.hpp"

namespace {

// The median of a result's samples, computed here: the middle one, or the mean of the two.
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream f(path);
  std::string header, line;
  std::getline(f, header);
  auto split = [](const std::string& text) {  // the tables quote fields that hold commas
    std::vector<std::string> out(1);
    bool quoted = false;
    for (char ch : text) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) out.emplace_back();
      else out.back() += ch;
    }
    return out;
  };
  const auto keys = split(header);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(f, line)) {
    auto cells = split(line);
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < keys.size() && i < cells.size(); ++i) row[keys[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST(TablesEndToEnd, SpeedupsAndSqnrRecomputeFromTheJournal) {
  auto dir = temp_dir("tables_e2e");
  auto cfg = write(dir, "t.yaml",
                   "ops: [linear]\nimpls: [onednn, opmeter_quant, onednn_train]\ndtypes: [fp32]\nthreads: 1\n"
                   "batch: [1]\nseq: [4]\nhidden: [64]\nout: [32]\nact: [none]\nquantization: [baseline, int8wo]\n"
                   "mode: [inference, train]\nphase: [forward, step]\nstopping: {samples: 5, warmup: 1}\n");
  auto out = cli("run " + cfg.string() + " --llc-bytes 262144 --no-report --out " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;

  // The journal's medians and metrics, by case.
  std::map<std::string, double> median;
  std::map<std::string, double> sqnr;
  std::ifstream journal(dir / "res" / "results.jsonl");
  for (std::string line; std::getline(journal, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    if (j["status"] != "ok") continue;
    median[j["case"]] = median_of(j["samples_s"].get<std::vector<double>>());
    if (j.contains("metrics") && j["metrics"].contains("sqnr_db")) sqnr[j["case"]] = j["metrics"]["sqnr_db"]["value"];
  }
  const std::string shape = "batch=1,seq=4,hidden=64,out=32,act=none";
  const std::string base = "linear/onednn/fp32/" + shape + "/threads=1";
  const std::string int8 = "linear/opmeter_quant/fp32/" + shape + ",quant=int8wo/threads=1";
  const std::string step = "linear/onednn_train/fp32/" + shape + ",mode=train/threads=1";
  const std::string fwd = "linear/onednn_train/fp32/" + shape + ",mode=train,phase=forward/threads=1";
  for (auto& c : {base, int8, step, fwd}) ASSERT_TRUE(median.count(c)) << c << "\n" << out.text;

  auto quant = read_csv(dir / "res" / "quantization.csv");
  ASSERT_EQ(quant.size(), 1u);
  EXPECT_EQ(quant[0]["recipe"], "int8wo");
  EXPECT_EQ(quant[0]["baseline_impl"], "onednn");
  EXPECT_EQ(quant[0]["m"], "4");
  EXPECT_NEAR(std::stod(quant[0]["speedup"]), median[base] / median[int8], 1e-5 * median[base] / median[int8]);
  EXPECT_NEAR(std::stod(quant[0]["sqnr_db"]), sqnr.at(int8), 1e-4);
  EXPECT_GT(sqnr.at(int8), 30);  // int8 per channel: about 41 dB

  auto training = read_csv(dir / "res" / "training.csv");
  ASSERT_EQ(training.size(), 1u);
  EXPECT_EQ(training[0]["impl"], "onednn_train");
  EXPECT_NEAR(std::stod(training[0]["total_s"]), median[step], 1e-5 * median[step]);
  EXPECT_NEAR(std::stod(training[0]["fwd_s"]), median[fwd], 1e-5 * median[fwd]);
  EXPECT_EQ(training[0]["bwd_s"], "");  // not measured
  EXPECT_EQ(training[0]["speedup"], "1");

  // results.json carries the same rows.
  auto results = nlohmann::json::parse(std::ifstream(dir / "res" / "results.json"));
  ASSERT_EQ(results["quantization"].size(), 1u);
  EXPECT_NEAR(results["quantization"][0]["speedup"].get<double>(), median[base] / median[int8],
              1e-9 * median[base] / median[int8]);
  ASSERT_EQ(results["training"].size(), 1u);
  EXPECT_NEAR(results["training"][0]["total_s"].get<double>(), median[step], 1e-12);
}
