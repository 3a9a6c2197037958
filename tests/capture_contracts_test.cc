// The capture path's contracts, one defect each (each of these once passed silently or failed
// unhelpfully): two GPUs combined, options --capture ignored, a multi-GPU nvidia-smi log, metric
// units against their role, a workload taking another's export by prefix, windows out of time
// order, a missing launch blamed on the wrong row, zero launches or blocks, an output deep
// inside a capture, './name' outputs, --bootstrap and --seed bounds, a power limit below the
// model's idle power.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ingest/capture.h"
#include "io/gpu_description.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;

std::string H100(const std::string& f) { return testing::Dataset("h100_capture/" + f); }
const std::string kGpu = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";

std::vector<std::string> FileLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// ubench_random's raw page cut to its first `launches` profiled launches: the tool lines, the
// header, the units, the two set-up launches (lines 5-6), then one launch per window in order.
std::vector<std::string> RawPage(size_t launches) {
  const std::vector<std::string> raw = FileLines(H100("ubench_random/ncu_raw.csv"));
  return std::vector<std::string>(raw.begin(),
                                  raw.begin() + static_cast<std::ptrdiff_t>(7 + launches));
}

// A capture of ubench_random's windows `windows` (the header first), its NVML log linked, the
// raw page cut to the windows' launches and, when `smi` is set, its nvidia-smi log.
std::string Capture(const std::string& dir, const std::vector<std::string>& windows,
                    bool smi = false) {
  fs::create_directories(dir);
  fs::create_symlink(H100("ubench_random/nvml_power.csv"), dir + "/nvml_power.csv");
  testing::WriteFile(dir + "/ncu_raw.csv", Join(RawPage(windows.size() - 1)));
  if (smi)
    fs::create_symlink(H100("ubench_random/nvidia_smi_power.csv"), dir + "/nvidia_smi_power.csv");
  testing::WriteFile(dir + "/windows.csv", Join(windows));
  return dir;
}

class CaptureContracts : public ::testing::Test {
 protected:
  void SetUp() override {
    WATTCAL_REQUIRE_DATASETS();
    windows_ = FileLines(H100("ubench_random/windows.csv"));
    gpu_ = ReadGpuDescription(kGpu);
  }
  std::vector<std::string> windows_;
  GpuDescription gpu_;
};

TEST_F(CaptureContracts, CapturesOfTwoGpusAreRefusedUnlessAsked) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string out = testing::ScratchDir();
  const std::string h100 = H100("ubench_random");
  const std::string h200 = testing::Dataset("h200_capture/ubench_random");
  const testing::CommandResult r = testing::RunStage(
      "wattcal-ingest",
      {"--capture", h100, "--capture", h200, "--gpu", kGpu, "--tidy", out + "/t.csv"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("measured on NVIDIA H200"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("was measured on NVIDIA H100 80GB HBM3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--mixed-gpus"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out + "/t.csv"));
  const testing::CommandResult mixed =
      testing::RunStage("wattcal-ingest", {"--capture", h100, "--capture", h200, "--gpu", kGpu,
                                           "--mixed-gpus", "--tidy", out + "/t.csv"});
  EXPECT_EQ(mixed.exit_code, 0) << mixed.output;
}

TEST_F(CaptureContracts, CaptureOptionsWorkOrAreRefusedByName) {
  const std::string out = testing::ScratchDir();
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{"--dmon-interval-ms", "100"},
                                             {"--f-core-mhz", "1980"},
                                             {"--instructions-out", out + "/i.csv"}}) {
    std::vector<std::string> args = {"--capture", H100("ubench_random"), "--gpu", kGpu,
                                     "--tidy",    out + "/t.csv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::CommandResult r = testing::RunStage("wattcal-ingest", args);
    testing::ExpectRefused(r, 1, {extra[0] + " cannot be combined with it"},
                           {out + "/t.csv", out + "/i.csv"});
  }
  // --power-field applies to the log that gives the power: the 1-s average named here is used.
  const testing::CommandResult averaged = testing::RunStage(
      "wattcal-ingest",
      {"--capture", H100("ubench_random"), "--gpu", kGpu, "--capture-power", "nvidia-smi",
       "--power-field", "power.draw.average", "--tidy", out + "/t.csv", "--out", out + "/w.csv"});
  ASSERT_EQ(averaged.exit_code, 0) << averaged.output;
  EXPECT_NE(averaged.output.find("power.draw.average"), std::string::npos) << averaged.output;
  EXPECT_NE(testing::ReadFile(out + "/w.csv").find(",averaged_power,"), std::string::npos);
}

TEST_F(CaptureContracts, AMultiGpuNvidiaSmiLogIsReadWithGpuSelect) {
  // The README's nvidia-smi command on a two-GPU node: every reading twice, index 0 and 1.
  const std::string dir = testing::ScratchDir() + "/capture";
  fs::create_directories(dir);
  testing::WriteFile(dir + "/ncu_raw.csv", Join(RawPage(3)));
  testing::WriteFile(dir + "/windows.csv",
                     Join({windows_[0], windows_[1], windows_[2], windows_[3]}));
  const std::vector<std::string> smi = FileLines(H100("ubench_random/nvidia_smi_power.csv"));
  std::ofstream out(dir + "/nvidia_smi_power.csv");
  out << smi[0] << "\n";
  for (size_t i = 1; i < smi.size(); ++i) {
    out << smi[i] << "\n";
    std::string other = smi[i];
    other.replace(other.find(", 0, "), 5, ", 1, ");
    out << other << "\n";
  }
  out.close();
  const GpuDescription gpu = gpu_;
  CaptureOptions o;
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu, o); }, 3,
                            {"several GPUs", "gpu option"});
  o.gpu_select = "0";
  const CaptureReport r = IngestCaptures({dir}, gpu, o);
  EXPECT_EQ(r.windows.size(), 3u);
}

TEST_F(CaptureContracts, MetricUnitsAreCheckedAgainstTheirRole) {
  // The duration column's unit turned into cycles: every bandwidth utilisation would be 1e-9 of
  // itself. Refused, naming the metric and the unit.
  const std::string dir = Capture(testing::ScratchDir() + "/capture", {windows_[0], windows_[1]});
  std::vector<std::string> raw = RawPage(1);
  const size_t header = 3;  // after the tool lines
  std::vector<std::string> cells;
  {
    std::stringstream ss(raw[header]);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
  }
  size_t column = 0;
  for (size_t j = 0; j < cells.size(); ++j) {
    if (cells[j] == "\"gpu__time_duration.sum\"") column = j;
  }
  ASSERT_GT(column, 0u);
  std::vector<std::string> units;
  {
    std::stringstream ss(raw[header + 1]);
    for (std::string c; std::getline(ss, c, ',');) units.push_back(c);
  }
  units[column] = "\"cycle\"";
  std::string line;
  for (size_t j = 0; j < units.size(); ++j) line += (j ? "," : "") + units[j];
  raw[header + 1] = line;
  fs::remove(dir + "/ncu_raw.csv");
  testing::WriteFile(dir + "/ncu_raw.csv", Join(raw));
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu_, CaptureOptions()); }, 8,
                            {"gpu__time_duration.sum", "its unit is cycle", "a time"});
}

TEST_F(CaptureContracts, OnlyExplicitRunsShareAnExport) {
  const std::string dir = testing::ScratchDir() + "/capture";
  fs::create_directories(dir + "/ncu");
  fs::create_symlink(H100("ubench_random/nvml_power.csv"), dir + "/nvml_power.csv");
  std::vector<std::string> raw = FileLines(H100("ubench_random/ncu_raw.csv"));
  testing::WriteFile(dir + "/ncu/dram_ld.csv", Join({raw[3], raw[4], raw[8]}));
  auto row = [&](const std::string& name, size_t from) {
    std::string w = windows_[from];
    return name + w.substr(w.find(','));
  };
  testing::WriteFile(dir + "/windows.csv",
                     Join({windows_[0], row("dram_ld_run2", 1), row("dram_ld_l2_half", 2)}));
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu_, CaptureOptions()); }, 3,
                            {"no counters for workload 'dram_ld_l2_half'"});
  testing::WriteFile(dir + "/windows.csv", Join({windows_[0], row("dram_ld_run2", 1)}));
  const CaptureReport r = IngestCaptures({dir}, gpu_, CaptureOptions());
  EXPECT_EQ(r.windows.front().counters_path, dir + "/ncu/dram_ld.csv");
}

TEST_F(CaptureContracts, WindowsOutOfTimeOrderAreRefusedForTheLaunchOrderJoin) {
  const std::string dir = Capture(testing::ScratchDir() + "/capture",
                                  {windows_[0], windows_[1], windows_[3], windows_[2]});
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu_, CaptureOptions()); }, 4,
                            {"not in time order", "before int_mul on line 3"});
}

TEST_F(CaptureContracts, AMissingLaunchNamesItsWindow) {
  // fp32_fma's launch is removed from the raw page: its window (line 5) is named, not fp32_add.
  const std::string dir =
      Capture(testing::ScratchDir() + "/capture",
              {windows_[0], windows_[1], windows_[2], windows_[3], windows_[4], windows_[5]});
  // Lines 5-6: the set-up launches; 7: idle_sleep; 8: int_add; 9: int_mul; 10: fp32_fma;
  // 11: fp32_add; 12: fp32_mul. Every window has 1056 blocks of 256 threads: only the names tell.
  std::vector<std::string> kept = RawPage(6);
  kept.erase(kept.begin() + 10);
  // One launch short (fp32_fma's), and one short with fp32_mul's launch in its place.
  for (size_t launches : {kept.size() - 1, kept.size()}) {
    testing::WriteFile(dir + "/ncu_raw.csv",
                       Join(std::vector<std::string>(
                           kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(launches))));
    testing::ExpectInputError(
        [&] { IngestCaptures({dir}, gpu_, CaptureOptions()); }, 5,
        {"window fp32_fma", "has no profiled launch", "next window's kernel (fp32_add)"});
  }
  // An extra launch of int_add: int_mul's window names it.
  std::vector<std::string> extra = RawPage(5);
  extra.insert(extra.begin() + 9, extra[8]);
  extra.pop_back();
  testing::WriteFile(dir + "/ncu_raw.csv", Join(extra));
  testing::ExpectInputError(
      [&] { IngestCaptures({dir}, gpu_, CaptureOptions()); }, 4,
      {"window int_mul", "previous window's kernel (int_add)", "an extra launch of int_add"});
}

TEST_F(CaptureContracts, ZeroLaunchesOrBlocksAreRefused) {
  std::string zero = windows_[1];
  const size_t launches_at = zero.find(',', zero.find(',', zero.find(',') + 1) + 1) + 1;
  zero.replace(launches_at, zero.find(',', launches_at) - launches_at, "0");
  const std::string dir = Capture(testing::ScratchDir() + "/capture", {windows_[0], zero});
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu_, CaptureOptions()); }, 2,
                            {"launches", "expected a whole number >= 1"});
}

TEST_F(CaptureContracts, AnOutputDeepInsideACaptureThatIsAnInputIsRefused) {
  // A capture whose export sits five folders down; --out names it.
  const std::string dir = testing::ScratchDir() + "/capture";
  fs::create_directories(dir + "/ncu/a/b/c/d");
  fs::create_symlink(H100("ubench_random/nvml_power.csv"), dir + "/nvml_power.csv");
  const std::vector<std::string> raw = FileLines(H100("ubench_random/ncu_raw.csv"));
  testing::WriteFile(dir + "/ncu/a/b/c/d/app.csv", Join({raw[3], raw[4], raw[8]}));
  std::string w = windows_[1];
  testing::WriteFile(dir + "/windows.csv",
                     Join({windows_[0], "a/b/c/d/app" + w.substr(w.find(','))}));
  const std::string before = testing::ReadFile(dir + "/ncu/a/b/c/d/app.csv");
  const std::string tidy = fs::path(dir).parent_path().string() + "/t.csv";
  const testing::CommandResult r = testing::RunStage(
      "wattcal-ingest",
      {"--capture", dir, "--gpu", kGpu, "--tidy", tidy, "--out", dir + "/ncu/a/b/c/d/app.csv"});
  testing::ExpectRefused(r, 1, {"is the same file as input"}, {tidy});
  EXPECT_EQ(testing::ReadFile(dir + "/ncu/a/b/c/d/app.csv"), before);
}

TEST(StageContracts23, DotSlashOutputsSeedsAndBootstrapBounds) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = testing::ScratchDir();
  const std::string train =
      testing::Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_fixed_11comp.csv");
  // An output written ./name, from inside the folder (a shell's usual way).
  const std::string cmd = "cd '" + dir + "' && '" + std::string(WATTCAL_BIN_DIR) +
                          "/wattcal-calibrate' --train '" + train +
                          "' --method fixed --out ./model.json 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(fs::exists(dir + "/model.json"));
  for (const char* bad : {"1", "2147483647", "-3"}) {
    const testing::CommandResult r = testing::RunStage(
        "wattcal-calibrate",
        {"--train", train, "--method", "fixed", "--bootstrap", bad, "--out", dir + "/b.json"});
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("--bootstrap"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir + "/b.json"));
  }
  for (const char* bad : {"-1", "18446744073709551616", "1e3"}) {
    const testing::CommandResult r = testing::RunStage(
        "wattcal-calibrate", {"--train", train, "--method", "fixed", "--bootstrap", "20", "--seed",
                              bad, "--out", dir + "/s.json"});
    SCOPED_TRACE(bad);
    testing::ExpectRefused(r, 1, {"--seed", "is not a seed"}, {dir + "/s.json"});
  }
  const testing::CommandResult max = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--bootstrap", "20", "--seed",
                            "18446744073709551615", "--out", dir + "/s.json"});
  EXPECT_EQ(max.exit_code, 0) << max.output;
}

TEST(StageContracts23, APowerLimitBelowTheIdlePowerIsWarned) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = testing::ScratchDir();
  const std::string train =
      testing::Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_fixed_11comp.csv");
  ASSERT_EQ(testing::RunStage("wattcal-calibrate",
                              {"--train", train, "--method", "fixed", "--out", dir + "/m.json"})
                .exit_code,
            0);
  const testing::CommandResult r = testing::RunStage(
      "wattcal-validate",
      {"--model", dir + "/m.json", "--heldout",
       testing::Dataset("gpmtool_tpds2019/gtx_titan_x/DERIVED_real_power_allF_11comp.csv"),
       "--mode", "fixed", "--power-limit-w", "0.25", "--predictions", dir + "/p.csv", "--metrics",
       dir + "/x.json"});
  EXPECT_NE(
      r.output.find("the board power limit 0.2 W is below the model's power with nothing running"),
      std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace wattcal
