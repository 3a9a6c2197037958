// wattcal's own campaign on silicon (datasets/captures, committed with the project): the H100
// suite with counters and 11 PyTorch applications on an H100 and an H200, and what that run
// showed — the toggle sweep's other-data windows flagged data_toggle and kept out of training and
// of the CV score, a model without an optional component (the shared captures' models have no
// DMMA term) predicting a capture that has it, and predictions without a power log equal to those
// with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "io/corpus.h"
#include "io/corpus_io.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;

const std::string kSource = WATTCAL_SOURCE_DIR;
const std::string kH100 = kSource + "/microbench_specs/gpus/h100_sxm.json";
const std::string kH200 = kSource + "/microbench_specs/gpus/h200_sxm.json";
const std::string kSuite = kSource + "/datasets/captures/h100/suite";
const std::string kApps = kSource + "/datasets/captures/h100/apps";
const std::string kH200Apps = kSource + "/datasets/captures/h200/apps";

// The CSV rows of `path` keyed by their first column.
std::map<std::string, std::map<std::string, std::string>> CsvByFirstColumn(
    const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::string line;
  std::vector<std::string> header;
  std::map<std::string, std::map<std::string, std::string>> out;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) f.push_back(c);
    if (header.empty()) {
      header = f;
      continue;
    }
    for (size_t i = 0; i < f.size() && i < header.size(); ++i) out[f[0]][header[i]] = f[i];
  }
  return out;
}

// The H100 description without its optional DMMA component: the layout of a model trained on a
// capture whose ncu did not collect the DMMA metric (as the shared captures').
std::string DescriptionWithoutDmma(const std::string& dir) {
  std::ifstream in(kH100);
  nlohmann::json j = nlohmann::json::parse(in);
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& c : j["components"]) {
    if (c.value("component", "") != "DMMA") kept.push_back(c);
  }
  EXPECT_EQ(kept.size() + 1, j["components"].size());
  j["components"] = kept;
  return testing::WriteFile(dir + "/h100_no_dmma.json", j.dump(2));
}

TEST(OwnCapture, TheH100SuiteIngestsWithItsCappedAndToggleWindowsFlagged) {
  const std::string dir = ScratchDir();
  const testing::CommandResult r = RunStage(
      "wattcal-ingest", {"--capture", kSuite, "--gpu", kH100, "--tidy", dir + "/measured.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("216 measured"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("27 windows of the toggle sweep"), std::string::npos) << r.output;
  const Corpus c = ReadCorpus(dir + "/measured.csv", CorpusReadOptions());
  ASSERT_EQ(c.rows(), 216);
  int toggle = 0, cap = 0;
  for (int row = 0; row < c.rows(); ++row) {
    const bool flagged = HasFlag(c, row, kCorpusFlagDataToggle);
    toggle += flagged;
    cap += HasFlag(c, row, kCorpusFlagPowerCap);
    const std::string& name = c.benchmark[static_cast<size_t>(row)];
    // The sweep at the random data's 50% is kept; 0, 25 and 100% are flagged; nothing else is.
    const bool sweep_other =
        name.rfind("toggle_", 0) == 0 && name.find("_050") == std::string::npos;
    EXPECT_EQ(flagged, sweep_other) << name;
  }
  EXPECT_EQ(toggle, 27);
  EXPECT_EQ(cap, 18);
  // The tidy file says which components are optional, for a model trained without them.
  EXPECT_NE(ReadFile(dir + "/measured.csv").find("# optional components: TENSOR INT; DMMA\n"),
            std::string::npos);
  EXPECT_EQ(c.optional_components, (std::vector<std::string>{"TENSOR INT", "DMMA"}));
}

TEST(OwnCapture, CalibrationAndCvLeaveTheToggleWindowsOutAndTheCvMatchesTheRecordedFigure) {
  const std::string dir = ScratchDir();
  ASSERT_EQ(
      RunStage("wattcal-ingest", {"--capture", kSuite, "--gpu", kH100, "--tidy", dir + "/m.csv"})
          .exit_code,
      0);
  const testing::CommandResult cal =
      RunStage("wattcal-calibrate",
               {"--train", dir + "/m.csv", "--out", dir + "/model.json", "--method", "auto"});
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  EXPECT_NE(cal.output.find("left out 45 flagged rows"), std::string::npos) << cal.output;
  EXPECT_NE(cal.output.find("data_toggle: toggle_dram_write_000"), std::string::npos) << cal.output;
  const testing::CommandResult cv = RunStage(
      "wattcal-validate", {"--train", dir + "/m.csv", "--cv-folds", "5", "--mode", "auto",
                           "--predictions", dir + "/cv.csv", "--metrics", dir + "/cv.json"});
  ASSERT_EQ(cv.exit_code, 0) << cv.output;
  EXPECT_NE(cv.output.find("27 rows flagged data_toggle are neither trained on nor scored"),
            std::string::npos);
  const nlohmann::json metrics = nlohmann::json::parse(ReadFile(dir + "/cv.json"));
  EXPECT_EQ(metrics["points"].get<int>(), 189);
  // datasets/captures/README.md and the closing note of issue 27: 8.00% (11.13% with the sweep).
  EXPECT_NEAR(metrics["mape_pct"].get<double>(), 8.00, 0.01);
  EXPECT_EQ(CsvByFirstColumn(dir + "/cv.csv").count("toggle_fp32_fma_000"), 0u);
  // --keep-flagged trains on and scores every row again.
  const testing::CommandResult kept =
      RunStage("wattcal-validate",
               {"--train", dir + "/m.csv", "--cv-folds", "5", "--mode", "auto", "--keep-flagged",
                "--predictions", dir + "/cv_all.csv", "--metrics", dir + "/cv_all.json"});
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_EQ(nlohmann::json::parse(ReadFile(dir + "/cv_all.json"))["points"].get<int>(), 216);
}

// The suite copied without its capture.json: the toggle sweep is found by its windows' names
// (always there), flagged against wattcal-capture's default data with a warning that says so,
// and the CV stays the recorded 8.00% (it once went to 11.13%: 27 flags lost without a word). A
// capture.json that is there but not JSON is an error naming its line.
TEST(OwnCapture, TheToggleFlagsDoNotHangOnCaptureJson) {
  const std::string dir = ScratchDir();
  const std::string copy = dir + "/suite";
  fs::create_directories(copy);
  for (const fs::directory_entry& e : fs::directory_iterator(kSuite)) {
    if (e.path().filename() != "capture.json")
      fs::create_symlink(e.path(), copy + "/" + e.path().filename().string());
  }
  const testing::CommandResult r =
      RunStage("wattcal-ingest", {"--capture", copy, "--gpu", kH100, "--tidy", dir + "/m.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("36 windows are the toggle sweep's, but " + copy + " has no capture.json"),
      std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("27 windows of the toggle sweep"), std::string::npos) << r.output;
  const Corpus c = ReadCorpus(dir + "/m.csv", CorpusReadOptions());
  int toggle = 0;
  for (int row = 0; row < c.rows(); ++row) toggle += HasFlag(c, row, kCorpusFlagDataToggle);
  EXPECT_EQ(toggle, 27);
  const testing::CommandResult cv = RunStage(
      "wattcal-validate", {"--train", dir + "/m.csv", "--cv-folds", "5", "--mode", "auto",
                           "--predictions", dir + "/cv.csv", "--metrics", dir + "/cv.json"});
  ASSERT_EQ(cv.exit_code, 0) << cv.output;
  EXPECT_NEAR(nlohmann::json::parse(ReadFile(dir + "/cv.json"))["mape_pct"].get<double>(), 8.00,
              0.01);

  const std::string cut = ReadFile(kSuite + "/capture.json").substr(0, 200);
  testing::WriteFile(copy + "/capture.json", cut);
  const std::string line = std::to_string(1 + std::count(cut.begin(), cut.end(), '\n'));
  const testing::CommandResult bad =
      RunStage("wattcal-ingest", {"--capture", copy, "--gpu", kH100, "--tidy", dir + "/m2.csv"});
  testing::ExpectRefused(bad, 2, {copy + "/capture.json:" + line + ": invalid JSON"},
                         {dir + "/m2.csv"});
}

TEST(OwnCapture, TheApplicationsArePredictedTheSameWithAndWithoutTheirPowerLog) {
  const std::string dir = ScratchDir();
  ASSERT_EQ(
      RunStage("wattcal-ingest", {"--capture", kSuite, "--gpu", kH100, "--tidy", dir + "/m.csv"})
          .exit_code,
      0);
  ASSERT_EQ(RunStage("wattcal-calibrate",
                     {"--train", dir + "/m.csv", "--out", dir + "/model.json", "--method", "auto"})
                .exit_code,
            0);
  const testing::CommandResult with =
      RunStage("wattcal-predict", {"--model", dir + "/model.json", "--capture", kApps, "--gpu",
                                   kH100, "--out", dir + "/with.csv"});
  ASSERT_EQ(with.exit_code, 0) << with.output;
  EXPECT_NE(with.output.find("measured: 11 of them, MAPE 8.07%"), std::string::npos) << with.output;
  fs::copy(kApps, dir + "/unmeasured", fs::copy_options::recursive);
  fs::remove(dir + "/unmeasured/nvml_power.csv");
  const testing::CommandResult without =
      RunStage("wattcal-predict", {"--model", dir + "/model.json", "--capture", dir + "/unmeasured",
                                   "--gpu", kH100, "--out", dir + "/without.csv"});
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_NE(without.output.find("none measured (no power log)"), std::string::npos)
      << without.output;
  const auto a = CsvByFirstColumn(dir + "/with.csv");
  const auto b = CsvByFirstColumn(dir + "/without.csv");
  ASSERT_EQ(a.size(), 11u);
  ASSERT_EQ(b.size(), 11u);
  for (const auto& [workload, row] : a) {
    for (const char* col :
         {"predicted_w", "uncapped_w", "capped", "duration_s", "energy_j", "flags"}) {
      EXPECT_EQ(row.at(col), b.at(workload).at(col)) << workload << " " << col;
    }
    EXPECT_FALSE(row.at("measured_w").empty()) << workload;
    EXPECT_TRUE(b.at(workload).at("measured_w").empty()) << workload;
  }
}

TEST(OwnCapture, AModelWithoutTheDmmaTermPredictsApplicationsThatUseIt) {
  const std::string dir = ScratchDir();
  const std::string no_dmma = DescriptionWithoutDmma(dir);
  ASSERT_EQ(
      RunStage("wattcal-ingest", {"--capture", kSuite, "--gpu", no_dmma, "--tidy", dir + "/m.csv"})
          .exit_code,
      0);
  ASSERT_EQ(RunStage("wattcal-calibrate",
                     {"--train", dir + "/m.csv", "--out", dir + "/model.json", "--method", "auto"})
                .exit_code,
            0);
  // predict --capture with the full description: DMMA left out, its user flagged.
  const testing::CommandResult p =
      RunStage("wattcal-predict", {"--model", dir + "/model.json", "--capture", kApps, "--gpu",
                                   kH100, "--out", dir + "/p.csv"});
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("the model has no DMMA term"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("1 workload(s) use it (up to utilisation 0.237: gemm_fp64)"),
            std::string::npos)
      << p.output;
  const auto rows = CsvByFirstColumn(dir + "/p.csv");
  EXPECT_NE(rows.at("gemm_fp64").at("flags").find("no_model_term:DMMA"), std::string::npos);
  EXPECT_EQ(rows.at("gemm_fp16").at("flags").find("no_model_term"), std::string::npos);
  // validate --heldout on the applications' tidy table (which lists DMMA as optional) likewise.
  ASSERT_EQ(RunStage("wattcal-ingest", {"--capture", kApps, "--gpu", kH100, "--per-workload",
                                        "--tidy", dir + "/apps.csv"})
                .exit_code,
            0);
  const testing::CommandResult v = RunStage(
      "wattcal-validate", {"--model", dir + "/model.json", "--heldout", dir + "/apps.csv", "--mode",
                           "auto", "--predictions", dir + "/v.csv", "--metrics", dir + "/v.json"});
  ASSERT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(
      v.output.find("1 row(s) use it, their predictions lack its power: gemm_fp64 (DMMA 0.237)"),
      std::string::npos)
      << v.output;
  // Without the table's word that DMMA is optional, the extra component is a layout mismatch, as
  // any required component that differs: refused (exit 2, an input error), no output left.
  std::string tidy = ReadFile(dir + "/apps.csv");
  const size_t at = tidy.find("# optional components:");
  ASSERT_NE(at, std::string::npos);
  tidy.erase(at, tidy.find('\n', at) - at + 1);
  testing::WriteFile(dir + "/apps_plain.csv", tidy);
  const testing::CommandResult refused =
      RunStage("wattcal-validate",
               {"--model", dir + "/model.json", "--heldout", dir + "/apps_plain.csv", "--mode",
                "auto", "--predictions", dir + "/r.csv", "--metrics", dir + "/r.json"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  // The header follows the preamble's "# wattcal-tidy" and "# gpu:" lines.
  EXPECT_NE(refused.output.find("apps_plain.csv:3: component names"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("calibrated for another GPU layout"), std::string::npos)
      << refused.output;
  EXPECT_FALSE(fs::exists(dir + "/r.csv"));
}

TEST(OwnCapture, TheH200ApplicationsIngestWithTheirCountersAndPower) {
  const std::string dir = ScratchDir();
  const testing::CommandResult r = RunStage(
      "wattcal-ingest",
      {"--capture", kH200Apps, "--gpu", kH200, "--per-workload", "--tidy", dir + "/apps.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Corpus c = ReadCorpus(dir + "/apps.csv", CorpusReadOptions());
  ASSERT_EQ(c.rows(), 11);
  for (int row = 0; row < c.rows(); ++row) {
    // Every application drew between idle and a little above the 700 W limit.
    EXPECT_GT(c.power_w(row), 450.0) << c.benchmark[static_cast<size_t>(row)];
    EXPECT_LT(c.power_w(row), 720.0) << c.benchmark[static_cast<size_t>(row)];
  }
  const std::vector<std::string> names = c.layout.ComponentNames();
  const auto col = [&](const std::string& n) {
    return static_cast<Eigen::Index>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  const auto row_of = [&](const std::string& n) {
    return static_cast<Eigen::Index>(std::find(c.benchmark.begin(), c.benchmark.end(), n) -
                                     c.benchmark.begin());
  };
  // What the hardware counters said: cuBLAS's FP16 GEMM keeps the tensor pipe ~93% busy, its
  // DGEMM runs on the FP64 tensor core (DMMA), and a sum reduction streams DRAM.
  EXPECT_GT(c.util_frac(row_of("gemm_fp16"), col("TENSOR")), 0.9);
  EXPECT_GT(c.util_frac(row_of("gemm_fp64"), col("DMMA")), 0.2);
  EXPECT_GT(c.util_frac(row_of("reduction"), col("DRAM READ")), 0.8);
}

}  // namespace
}  // namespace wattcal
