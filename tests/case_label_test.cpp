// A case's label (the layer a shape comes from): carried from the config, written and read back
// by every output, and no part of the case's identity.
#include <gtest/gtest.h>

#include <sstream>

#include "config/config.hpp"
#include "report/reporters.hpp"
#include "tests/result_fixtures.hpp"

using namespace opmeter;

namespace {

const char* kLlama = R"(
ops: [gemm, linear]
impls: [reference]
dtypes: [fp32]
threads: 1
shapes:
  - name: llama
    tokens: 16
  - name: custom
    shapes: [[16, 32, 64]]
)";

Result labelled() {
  auto r = fixtures::measured("gemm/reference/fp32/M=16,N=1280,K=8192/threads=1", 1e-3, fixtures::gemm_work(16, 1280, 8192));
  r.kase.label = "attn.wqkv";
  return r;
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  return last;
}

}  // namespace

TEST(CaseLabel, LlamaShapesLabelTheirCases) {
  auto plan = load_config_text(kLlama, "llama.yaml", 1);
  std::map<std::string, std::string> label_of;  // case string -> label
  for (auto& c : plan.cases) label_of[c.to_string()] = c.label;
  EXPECT_EQ(label_of.at("gemm/reference/fp32/M=16,N=1280,K=8192/threads=1"), "attn.wqkv");
  EXPECT_EQ(label_of.at("gemm/reference/fp32/M=16,N=8192,K=3584/threads=1"), "ffn.w2");
  EXPECT_EQ(label_of.at("gemm/reference/fp32/M=16,N=64,K=32/threads=1"), "");  // a custom shape has none
  // Ops that map shapes themselves get the labels too.
  int linear_labelled = 0;
  for (auto& c : plan.cases)
    if (c.op == "linear" && c.get("out") == "7168") {
      EXPECT_EQ(c.label, "ffn.w13") << c.to_string();
      ++linear_labelled;
    }
  EXPECT_GT(linear_labelled, 0);
  for (auto& c : plan.cases) EXPECT_EQ(c.to_string().find("attn"), std::string::npos) << c.to_string();
}

TEST(CaseLabel, IsNoPartOfIdentity) {
  auto a = parse_case("gemm/reference/fp32/M=16,N=1280,K=8192/threads=1");
  auto b = a;
  b.label = "attn.wqkv";
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.to_string(), b.to_string());
  EXPECT_EQ(parse_case(b.to_string()).label, "");
  b.threads = 2;
  EXPECT_NE(a, b);
}

TEST(CaseLabel, WrittenAndReadBack) {
  auto r = labelled();
  auto j = to_json(r);
  EXPECT_EQ(j["label"], "attn.wqkv");
  EXPECT_EQ(j["case"], "gemm/reference/fp32/M=16,N=1280,K=8192/threads=1");
  EXPECT_EQ(result_from_json(j).kase.label, "attn.wqkv");
  EXPECT_FALSE(to_json(fixtures::measured("gemm/reference/fp32/M=8,N=8,K=8/threads=1", 1e-6)).contains("label"));

  auto entry = gbench_json(nlohmann::json::object(), {r})["benchmarks"][0];
  EXPECT_EQ(entry["label"], "attn.wqkv");
  EXPECT_EQ(result_from_gbench(entry).kase.label, "attn.wqkv");

  auto csv = csv_table(nlohmann::json::object(), {r});
  EXPECT_EQ(csv.substr(0, csv.find('\n')).substr(csv.find('\n') - 6), ",label");
  EXPECT_EQ(last_line(csv).substr(last_line(csv).size() - 10), ",attn.wqkv");
}

TEST(CaseLabel, MarkdownShowsItBesideTheCaseOnlyWhenThereIsOne) {
  auto plain = fixtures::measured("gemm/reference/fp32/M=8,N=8,K=8/threads=1", 1e-6);
  EXPECT_EQ(markdown_table({plain}).find("label"), std::string::npos);
  auto md = markdown_table({labelled(), plain});
  EXPECT_NE(md.find("| case | label | impl |"), std::string::npos) << md;
  EXPECT_NE(md.find("| gemm | attn.wqkv | reference |"), std::string::npos) << md;
}

#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"

TEST(CaseLabel, RunWritesTheLabelsOfItsShapesAlsoInIsolation) {
  auto dir = temp_dir("labels");
  auto cfg = write(dir, "llama.yaml", R"(ops: [gemm]
impls: [reference]
dtypes: [fp32]
threads: 1
stopping: {samples: 2, warmup: 1}
shapes: [{name: llama, tokens: 1}]
)");
  auto out = cli("run " + cfg.string() + " --isolate --filter 'N=1280' --out " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("gemm/reference/fp32/M=1,N=1280,K=8192/threads=1 (attn.wqkv)"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("| gemm | attn.wqkv | reference |"), std::string::npos) << out.text;
  // The gemm case and the peak that % of peak needs (which has no label).
  auto gemm_label = [](const std::vector<Result>& results) {
    for (auto& r : results)
      if (r.kase.op == "gemm") return r.kase.label;
    return std::string("no gemm result");
  };
  EXPECT_EQ(gemm_label(read_jsonl((dir / "res" / "results.jsonl").string())), "attn.wqkv");
  EXPECT_EQ(gemm_label(load_results((dir / "res").string()).results), "attn.wqkv");
  // The resumed run keys on the case string: nothing is left to run.
  out = cli("run --resume " + (dir / "res").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("(2 already done, 0 to run)"), std::string::npos) << out.text;
}
