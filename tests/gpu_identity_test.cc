// The GPU that made the data (issue 35): a capture names its GPU (capture.json, the nvidia-smi
// log), and neither a GPU description nor a model of another GPU is used on it without
// --allow-other-gpu. H100 applications predicted with the H200 description and model exited 0 with
// every prediction moved (gemm_fp16 643 -> 536 W); an apps capture.json that is not JSON was
// ignored. Also: a model's implausible power limit, and rows predicted off their own clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ingest/capture_gpu.h"
#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "model/model_io.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

const std::string kSource = WATTCAL_SOURCE_DIR;
const std::string kH100 = kSource + "/microbench_specs/gpus/h100_sxm.json";
const std::string kH200 = kSource + "/microbench_specs/gpus/h200_sxm.json";
const std::string kSuite = kSource + "/datasets/captures/h100/suite";
const std::string kApps = kSource + "/datasets/captures/h100/apps";
const std::string kH200Apps = kSource + "/datasets/captures/h200/apps";

GpuDescription Named(const std::string& name) {
  GpuDescription d;
  d.name = name;
  return d;
}

TEST(GpuIdentity, DescriptionsMatchProductNamesByTheirWords) {
  EXPECT_TRUE(DescriptionDescribes(Named("h100-sxm"), "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(DescriptionDescribes(Named("h100-sxm"), "NVIDIA H200"));
  EXPECT_FALSE(DescriptionDescribes(Named("h100-sxm"), "NVIDIA H100 PCIe"));
  EXPECT_TRUE(DescriptionDescribes(Named("h200-sxm"), "NVIDIA H200"));
  EXPECT_FALSE(DescriptionDescribes(Named("h200-sxm"), "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(DescriptionDescribes(Named("a100-pcie-40gb"), "NVIDIA A100-PCIE-40GB"));
  EXPECT_FALSE(DescriptionDescribes(Named("a100-pcie-40gb"), "NVIDIA A100-SXM4-40GB"));
  EXPECT_TRUE(DescriptionDescribes(Named("gtx-titan-x"), "NVIDIA GeForce GTX TITAN X"));
  EXPECT_FALSE(DescriptionDescribes(Named("titan-xp"), "NVIDIA GeForce GTX TITAN X"));
  EXPECT_TRUE(DescriptionDescribes(Named("titan-xp"), "NVIDIA TITAN Xp"));
  EXPECT_TRUE(DescriptionDescribes(Named("tesla-k40c"), "Tesla K40c"));
  EXPECT_FALSE(DescriptionDescribes(Named("virtual-maxwell"), "NVIDIA GeForce GTX TITAN X"));
  EXPECT_TRUE(SameGpuProduct("NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3"));
  EXPECT_TRUE(SameGpuProduct("H100 80GB HBM3", "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(SameGpuProduct("NVIDIA H100 80GB HBM3", "NVIDIA H200"));
}

// Every description in microbench_specs/gpus describes the GPU its "about" names first.
TEST(GpuIdentity, EachShippedDescriptionDescribesItsOwnGpu) {
  for (const auto& entry : fs::directory_iterator(kSource + "/microbench_specs/gpus")) {
    if (entry.path().extension() != ".json" || entry.path().stem() == "virtual") continue;
    const GpuDescription d = ReadGpuDescription(entry.path().string());
    const nlohmann::json j = nlohmann::json::parse(ReadFile(entry.path().string()));
    std::string about = j.value("about", "");
    about = about.substr(0, about.find(" ("));  // "NVIDIA H100 80GB HBM3 (SXM5, ...)"
    EXPECT_TRUE(DescriptionDescribes(d, about)) << entry.path() << " vs '" << about << "'";
  }
}

TEST(GpuIdentity, ACaptureNamesItsGpuAndABrokenCaptureJsonIsAnError) {
  const CaptureGpu h100 = ReadCaptureGpu(kApps);
  EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.uuid, "GPU-e4ca9cc1-9894-07ce-6614-7f62bef2b3f2");
  EXPECT_EQ(h100.source, kApps + "/capture.json");
  const std::string dir = ScratchDir();
  fs::copy(kH200Apps, dir + "/apps", fs::copy_options::recursive);
  const std::string json = dir + "/apps/capture.json";
  const std::string text = ReadFile(json);
  const size_t kind = text.find("\"kind\"");
  ASSERT_NE(kind, std::string::npos);
  WriteFile(json, text.substr(0, kind) + "\"kind\": apps\n}\n");  // an unquoted string
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + kind, '\n'));
  testing::ExpectInputError([&] { ReadCaptureGpu(dir + "/apps"); }, line, {json, "invalid JSON"});
  // ingest refuses it, naming the file and line (predict reads it the same way).
  testing::ExpectRefused(RunStage("wattcal-ingest", {"--capture", dir + "/apps", "--gpu", kH200,
                                                     "--per-workload", "--tidy", dir + "/m.csv"}),
                         2, {json + ":" + std::to_string(line) + ":", "invalid JSON"},
                         {dir + "/m.csv"});
  WriteFile(json, "{\"format\": \"wattcal-capture\", \"gpu\": {\"name\": 7}}\n");
  testing::ExpectRefused(RunStage("wattcal-ingest", {"--capture", dir + "/apps", "--gpu", kH200,
                                                     "--per-workload", "--tidy", dir + "/m.csv"}),
                         2, {json, "gpu.name", "expected a string"}, {dir + "/m.csv"});
}

// The H100 suite's model (trained on the committed capture: its table and model record the GPU).
std::string H100Model(const std::string& dir) {
  EXPECT_EQ(
      RunStage("wattcal-ingest", {"--capture", kSuite, "--gpu", kH100, "--tidy", dir + "/m.csv"})
          .exit_code,
      0);
  EXPECT_EQ(ReadCorpus(dir + "/m.csv").gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(RunStage("wattcal-calibrate",
                     {"--train", dir + "/m.csv", "--out", dir + "/model.json", "--method", "fixed"})
                .exit_code,
            0);
  EXPECT_EQ(ReadModel(dir + "/model.json").gpu, "NVIDIA H100 80GB HBM3");
  return dir + "/model.json";
}

TEST(GpuIdentity, AnotherGpusDescriptionOrModelIsRefusedUnlessAllowedAndThenFlagged) {
  const std::string dir = ScratchDir();
  const std::string model = H100Model(dir);
  // Its own GPU: predicted, no row flagged other_gpu.
  testing::CommandResult r =
      RunStage("wattcal-predict",
               {"--model", model, "--capture", kApps, "--gpu", kH100, "--out", dir + "/own.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(dir + "/own.csv").find("other_gpu"), std::string::npos);
  // The H100's applications through the H200's description.
  r = RunStage("wattcal-predict",
               {"--model", model, "--capture", kApps, "--gpu", kH200, "--out", dir + "/p.csv"});
  testing::ExpectRefused(
      r, 2,
      {kApps + "/capture.json", "recorded on NVIDIA H100 80GB HBM3",
       "GPU-e4ca9cc1-9894-07ce-6614-7f62bef2b3f2", kH200, "'h200-sxm'", "--allow-other-gpu"},
      {dir + "/p.csv"});
  // A model of the H200 (the same layout: its "gpu" edited) on the H100's applications.
  nlohmann::json h200 = nlohmann::json::parse(ReadFile(model));
  ASSERT_EQ(h200["gpu"], "NVIDIA H100 80GB HBM3");
  h200["gpu"] = "NVIDIA H200";
  const std::string h200_model = WriteFile(dir + "/h200_model.json", h200.dump(2) + "\n");
  r = RunStage("wattcal-predict", {"--model", h200_model, "--capture", kApps, "--gpu", kH100,
                                   "--out", dir + "/p.csv"});
  testing::ExpectRefused(r, 2,
                         {h200_model, "trained on data of NVIDIA H200",
                          "recorded on NVIDIA H100 80GB HBM3", "--allow-other-gpu"},
                         {dir + "/p.csv"});
  // Allowed: predicted, every row flagged, the provenance says why.
  r = RunStage("wattcal-predict", {"--model", h200_model, "--capture", kApps, "--gpu", kH100,
                                   "--out", dir + "/p.csv", "--allow-other-gpu"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("predicted anyway (--allow-other-gpu)"), std::string::npos) << r.output;
  std::istringstream rows(ReadFile(dir + "/p.csv"));
  std::string line;
  std::getline(rows, line);
  int flagged = 0;
  while (std::getline(rows, line)) {
    EXPECT_NE(line.find("other_gpu"), std::string::npos) << line;
    ++flagged;
  }
  EXPECT_EQ(flagged, 11);
  const nlohmann::json record =
      nlohmann::json::parse(ReadFile(testing::ProvenancePath(dir + "/p.csv")));
  EXPECT_NE(record["options"].value("other_gpu", "").find("NVIDIA H200"), std::string::npos);
  // ingest: the same refusal, and --allow-other-gpu says so in its warning and its record.
  testing::ExpectRefused(
      RunStage("wattcal-ingest",
               {"--capture", kApps, "--gpu", kH200, "--per-workload", "--tidy", dir + "/apps.csv"}),
      2, {"recorded on NVIDIA H100 80GB HBM3", "'h200-sxm'"}, {dir + "/apps.csv"});
  r = RunStage("wattcal-ingest", {"--capture", kApps, "--gpu", kH200, "--per-workload", "--tidy",
                                  dir + "/apps.csv", "--allow-other-gpu"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("used anyway (--allow-other-gpu)"), std::string::npos) << r.output;
  EXPECT_EQ(ReadCorpus(dir + "/apps.csv").gpu, "NVIDIA H100 80GB HBM3");
}

// The case on the real data: the H200 capture's model and description on the H100's
// applications exited 0 with every prediction moved (gemm_fp16 643 -> 536 W).
TEST(GpuIdentity, TheH200ModelAndDescriptionOnTheH100ApplicationsAreRefused) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  ASSERT_EQ(RunStage("wattcal-ingest", {"--capture", testing::Dataset("h200_capture/ubench_random"),
                                        "--capture", testing::Dataset("h200_capture/mix_random"),
                                        "--gpu", kH200, "--tidy", dir + "/m.csv"})
                .exit_code,
            0);
  ASSERT_EQ(RunStage("wattcal-calibrate",
                     {"--train", dir + "/m.csv", "--out", dir + "/h200.json", "--method", "fixed"})
                .exit_code,
            0);
  EXPECT_EQ(ReadModel(dir + "/h200.json").gpu, "NVIDIA H200");
  testing::ExpectRefused(
      RunStage("wattcal-predict", {"--model", dir + "/h200.json", "--capture", kApps, "--gpu",
                                   kH200, "--out", dir + "/p.csv"}),
      2, {"recorded on NVIDIA H100 80GB HBM3", "'h200-sxm'"}, {dir + "/p.csv"});
}

TEST(GpuIdentity, AModelsPowerLimitMustBePlausible) {
  const std::string dir = ScratchDir();
  std::string text = ReadFile(H100Model(dir));
  const size_t at = text.find("\"power_limit_w\": 700.0");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, std::string("\"power_limit_w\": 700.0").size(), "\"power_limit_w\": 1e9");
  WriteFile(dir + "/big.json", text);
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  testing::ExpectInputError([&] { ReadModel(dir + "/big.json"); }, line,
                            {"power_limit_w", "must lie in (0, 10000] W", "1000000000"});
}

// --mode fixed predicts at the model's reference pair: a row whose own clock lies outside the
// model's levels (2500 MHz against a model of 1980 MHz) is flagged, not silently moved.
TEST(GpuIdentity, ARowOffTheModelsClockIsFlaggedWhenPredictedAtTheReference) {
  const std::string dir = ScratchDir();
  const std::string model = H100Model(dir);
  const Corpus train = ReadCorpus(dir + "/m.csv");
  std::string header = "benchmark,f_core_mhz,f_mem_mhz";
  std::string zeros;
  for (const std::string& c : train.layout.domains[0].components)
    header += ",core:" + c, zeros += ",0.1";
  for (const std::string& c : train.layout.domains[1].components)
    header += ",mem:" + c, zeros += ",0.1";
  WriteFile(dir + "/act.csv",
            header + "\nat_1980," + "1980,2619" + zeros + "\nat_2500,2500,2619" + zeros + "\n");
  const testing::CommandResult r =
      RunStage("wattcal-predict", {"--model", model, "--activity", dir + "/act.csv", "--mode",
                                   "fixed", "--default-core-mhz", "1980", "--default-mem-mhz",
                                   "2619", "--out", dir + "/p.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("at_2500 (line 3, 2500 MHz)"), std::string::npos) << r.output;
  std::istringstream rows(ReadFile(dir + "/p.csv"));
  std::string line;
  std::getline(rows, line);
  ASSERT_NE(line.find(",flags"), std::string::npos) << line;
  std::getline(rows, line);
  EXPECT_EQ(line.find("clock_beyond_model"), std::string::npos) << line;
  std::getline(rows, line);
  EXPECT_NE(line.find("clock_beyond_model:core"), std::string::npos) << line;
}

}  // namespace
}  // namespace wattcal
