// The stage layer (pipeline/usecases/, issue 12 step 1) of the data stages and the run's stages,
// driven in-process: synth, ingest, constant, static, idle, report, check and the front door.
//
//   StageDataCheck*   each options struct's Check() refuses what the main refused, naming the
//                     flag(s), before anything is read or written.
//   StageDataRun*     Run<Stage>Stage writes the same bytes as the executable, on the virtual
//                     Volta's sweeps and on the real H100 capture.
//   IngestSettle*     --settle-ms defaults to 300 ms (shortened for short windows) on the
//                     --power-log way too: the real H100/H200 windows are no longer flagged
//                     high_cv wholesale.
//   IngestExclude*    --exclude-flagged writes a table calibrate accepts, and says how many rows
//                     it left out.
//   StageDataHelp*    no flag of these stages shows CLI11's "{false}".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "usecases/check_stage.h"
#include "usecases/constant_stage.h"
#include "usecases/idle_stage.h"
#include "usecases/ingest_stage.h"
#include "usecases/report_stage.h"
#include "usecases/static_stage.h"
#include "usecases/synth_stage.h"
#include "usecases/wattcal_stage.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {
namespace {

using testing::Dataset;
using testing::FileExists;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;

const std::string kSource = WATTCAL_SOURCE_DIR;
const std::string kVolta = kSource + "/microbench_specs/virtual_volta.json";
const std::string kH100Gpu = kSource + "/microbench_specs/gpus/h100_sxm.json";

// Expects `check` to throw OptionError whose message holds every one of `parts`.
void ExpectOptionError(const std::function<void()>& check, const std::vector<std::string>& parts) {
  try {
    check();
  } catch (const OptionError& e) {
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
    }
    return;
  }
  ADD_FAILURE() << "no OptionError (expected one naming " << parts.front() << ")";
}

// Lines of `csv` holding `text`.
int CountLines(const std::string& csv, const std::string& text) {
  int n = 0;
  size_t start = 0;
  while (start < csv.size()) {
    size_t end = csv.find('\n', start);
    if (end == std::string::npos) end = csv.size();
    n += csv.substr(start, end - start).find(text) != std::string::npos;
    start = end + 1;
  }
  return n;
}

class QuietLogs : public ::testing::Test {
 protected:
  void SetUp() override {
    level_ = GetLogLevel();
    SetLogLevel(LogLevel::kQuiet);
  }
  void TearDown() override { SetLogLevel(level_); }
  LogLevel level_ = LogLevel::kInfo;
};

// ---------------------------------------------------------------------------------------
// Check(): the mains' rules, naming the flags.

TEST(StageDataCheck, SynthNamesItsFlags) {
  SynthStageOptions o;
  ExpectOptionError([&] { o.Check(); }, {"--spec"});
  o.spec_path = kVolta;
  ExpectOptionError([&] { o.Check(); }, {"--out-dir"});
  o.out_dir = ScratchDir() + "/out";
  o.Check();
  o.f_core_levels_mhz = "1447,1140";
  ExpectOptionError([&] { o.Check(); }, {"--f-core-levels-mhz", "--accelwattch-sweeps"});
  o.accelwattch_sweeps = true;
  o.Check();
  o.campaign = true;
  ExpectOptionError([&] { o.Check(); }, {"--campaign", "--accelwattch-sweeps"});
  o.campaign = false;
  o.f_core_levels_mhz = "1447,0";
  ExpectOptionError([&] { o.Check(); }, {"--f-core-levels-mhz", "'0'"});
  o.f_core_levels_mhz = "1447,1447";
  ExpectOptionError([&] { o.Check(); }, {"--f-core-levels-mhz", "twice"});
  // Nothing was written by Check() or by the refused runs.
  EXPECT_FALSE(FileExists(o.out_dir));
  ExpectOptionError([&] { RunSynthStage(o); }, {"--f-core-levels-mhz"});
  EXPECT_FALSE(FileExists(o.out_dir));
}

TEST(StageDataCheck, IngestNamesItsFlags) {
  IngestStageOptions o;
  o.Check();  // nothing asked, nothing refused
  o.captures = {"capture_dir"};
  ExpectOptionError([&] { o.Check(); }, {"--capture needs --gpu"});
  o.inputs.gpu_description = kH100Gpu;
  ExpectOptionError([&] { o.Check(); }, {"--capture needs --tidy"});
  o.tidy_path = "t.csv";
  o.Check();
  o.inputs.power_log = "log.csv";
  ExpectOptionError([&] { o.Check(); }, {"--capture", "--power-log cannot be combined"});
  o.inputs.power_log.clear();
  o.accelwattch_activity_path = "a.csv";
  ExpectOptionError([&] { o.Check(); }, {"--capture", "--accelwattch-activity"});
  o.accelwattch_activity_path.clear();

  IngestStageOptions d;
  d.inputs.power_log = "log.csv";
  ExpectOptionError([&] { d.Check(); }, {"--power-log needs --out"});
  d.out_path = "k.csv";
  d.Check();
  d.settle_ms = -1.0;
  ExpectOptionError([&] { d.Check(); }, {"--settle-ms", "-1"});
  d.settle_ms = 0.0;
  d.tidy_path = "t.csv";
  ExpectOptionError([&] { d.Check(); }, {"--tidy needs --power-log, --windows, --counters"});
  d.tidy_path.clear();
  d.inputs.description = "sweep.csv";
  ExpectOptionError([&] { d.Check(); }, {"--description needs --accelwattch-activity"});
  d.inputs.description.clear();
  d.inputs.instructions = "pairs.csv";
  ExpectOptionError([&] { d.Check(); }, {"--instructions needs --instructions-out"});
  d.inputs.instructions.clear();
  d.inputs.counters = "ncu.csv";
  ExpectOptionError([&] { d.Check(); }, {"--counters needs --gpu"});
}

TEST(StageDataCheck, SweepStagesNameTheirFlags) {
  ConstantStageOptions c;
  ExpectOptionError([&] { c.Check(); }, {"--sweep"});
  c.sweep_path = "sweep.csv";
  c.out_path = "constant.json";
  c.Check();
  c.ci_method = "jackknife";
  ExpectOptionError([&] { c.Check(); }, {"--ci-method", "'jackknife'"});

  StaticStageOptions s;
  s.files.sweep_path = "sweep.csv";
  s.files.out_path = "static.json";
  ExpectOptionError([&] { s.Check(); }, {"--constant", "--p-const-w"});
  s.files.p_const_w = 40.0;
  s.Check();
  s.files.constant_path = "constant.json";
  ExpectOptionError([&] { s.Check(); }, {"--constant excludes --p-const-w"});
  s.files.constant_path.clear();
  s.files.p_const_w = -1.0;
  ExpectOptionError([&] { s.Check(); }, {"p_const_w = -1"});

  IdleStageOptions i;
  i.files.sweep_path = "sweep.csv";
  ExpectOptionError([&] { i.Check(); }, {"--out"});
  i.files.out_path = "idle.json";
  ExpectOptionError([&] { i.Check(); }, {"--constant", "--p-const-w"});
  i.files.constant_path = "constant.json";
  i.Check();  // --constant's value is read and checked by Run
}

TEST(StageDataCheck, ReportCheckAndFrontDoor) {
  ReportStageOptions r;
  r.no_figures = true;
  r.Check();
  r.models = {"gpmTOOL=" + ScratchDir() + "/no_such_model.json"};
  ExpectOptionError([&] { r.Check(); }, {"--model", "no_such_model.json: no such file"});
  r.models.clear();
  r.report.auto_benchmarks = -1;
  ExpectOptionError([&] { r.Check(); }, {"auto_benchmarks = -1"});

  CheckStageOptions k;
  k.Check();
  k.expected_path.clear();
  ExpectOptionError([&] { k.Check(); }, {"--expected"});

  WattcalStageOptions w;
  w.program_dir = WATTCAL_BIN_DIR;
  w.args = {"nosuchstage", "--help"};
  WattcalStageReport f = RunWattcalStage(w);
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_EQ(f.error, "error: unknown stage 'nosuchstage'\n\n");
  EXPECT_NE(f.summary.find("  calibrate  "), std::string::npos) << f.summary;
  EXPECT_TRUE(f.program.empty());
  w.args = {"constant", "--sweep", "s.csv"};
  f = RunWattcalStage(w);
  EXPECT_EQ(f.program, std::string(WATTCAL_BIN_DIR) + "/wattcal-constant");
  EXPECT_EQ(f.argv, (std::vector<std::string>{"wattcal-constant", "--sweep", "s.csv"}));
  EXPECT_TRUE(f.summary.empty());
  // What the front door prints is what the library says.
  const auto help = RunStage("wattcal", {"--help"});
  w.args = {"--help"};
  EXPECT_EQ(help.output, RunWattcalStage(w).summary);
  EXPECT_EQ(help.exit_code, 0);
}

// ---------------------------------------------------------------------------------------
// Run<Stage>Stage against the executables: same files, byte for byte.

using StageDataRun = QuietLogs;

TEST_F(StageDataRun, VoltaSweepsThroughIngestConstantStaticIdleAsTheExecutablesDo) {
  const std::string dir = ScratchDir();
  SynthStageOptions synth;
  synth.spec_path = kVolta;
  synth.out_dir = dir + "/lib/data";
  synth.accelwattch_sweeps = true;
  const SynthStageReport s = RunSynthStage(synth);
  ASSERT_EQ(s.exit_code, 0);
  auto r = RunStage("wattcal-synth", {"--spec", kVolta, "--out-dir", dir + "/exe/data",
                                      "--accelwattch-sweeps", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_FALSE(s.written.empty());
  for (const std::string& path : s.written) {
    const std::string name = path.substr((dir + "/lib/data").size());
    EXPECT_EQ(ReadFile(path), ReadFile(dir + "/exe/data" + name)) << name;
  }
  // Every later stage reads the library's sweep, so only the stage differs.
  const std::string data = dir + "/lib/data";
  IngestStageOptions ingest;
  ingest.inputs.power_log = data + "/power_log.csv";
  ingest.inputs.windows = data + "/windows.csv";
  ingest.settle_ms = 100.0;
  ingest.out_path = dir + "/lib/kernels.csv";
  ASSERT_EQ(RunIngestStage(ingest).exit_code, 0);
  r = RunStage("wattcal-ingest",
               {"--power-log", data + "/power_log.csv", "--windows", data + "/windows.csv",
                "--settle-ms", "100", "--out", dir + "/exe/kernels.csv", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(dir + "/lib/kernels.csv"), ReadFile(dir + "/exe/kernels.csv"));

  const std::string kernels = dir + "/lib/kernels.csv";
  ConstantStageOptions constant;
  constant.sweep_path = kernels;
  constant.description_path = data + "/sweep.csv";
  constant.out_path = dir + "/lib/constant.json";
  const ConstantStageReport c = RunConstantStage(constant);
  ASSERT_EQ(c.exit_code, 0);
  EXPECT_GT(c.result.p_const_w, 0.0);
  r = RunStage("wattcal-constant", {"--sweep", kernels, "--description", data + "/sweep.csv",
                                    "--out", dir + "/exe/constant.json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(dir + "/lib/constant.json"), ReadFile(dir + "/exe/constant.json"));

  StaticStageOptions st;
  st.files = {kernels, data + "/sweep.csv", dir + "/lib/constant.json", dir + "/lib/static.json",
              std::nullopt};
  st.fit.reference_f_core_mhz = 1447;
  const StaticStageReport sr = RunStaticStage(st);
  r = RunStage("wattcal-static",
               {"--sweep", kernels, "--description", data + "/sweep.csv", "--constant",
                dir + "/lib/constant.json", "--reference-f-core-mhz", "1447", "--out",
                dir + "/exe/static.json", "-q"});
  EXPECT_EQ(sr.exit_code, r.exit_code) << r.output;
  EXPECT_EQ(sr.result.p_const_w, c.result.p_const_w);
  EXPECT_EQ(ReadFile(dir + "/lib/static.json"), ReadFile(dir + "/exe/static.json"));

  IdleStageOptions idle;
  idle.files = {kernels, data + "/sweep.csv", "", dir + "/lib/idle.json", 40.0};
  idle.fit.f_core_mhz = 1447;
  const IdleStageReport ir = RunIdleStage(idle);
  r = RunStage("wattcal-idle",
               {"--sweep", kernels, "--description", data + "/sweep.csv", "--p-const-w", "40",
                "--f-core-mhz", "1447", "--out", dir + "/exe/idle.json", "-q"});
  EXPECT_EQ(ir.exit_code, r.exit_code) << r.output;
  EXPECT_EQ(ir.result.p_const_w, 40.0);
  EXPECT_EQ(ReadFile(dir + "/lib/idle.json"), ReadFile(dir + "/exe/idle.json"));
  EXPECT_EQ(ReadFile(testing::ProvenancePath(dir + "/lib/idle.json")).find("constant.json"),
            std::string::npos);  // --p-const-w: no constant file among the inputs
}

TEST_F(StageDataRun, RealCaptureIngestAsTheExecutableDoes) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string capture = Dataset("h100_capture/ubench_random");
  IngestStageOptions o;
  o.captures = {capture};
  o.inputs.gpu_description = kH100Gpu;
  o.tidy_path = dir + "/lib.csv";
  o.out_path = dir + "/lib_windows.csv";
  const IngestStageReport r = RunIngestStage(o);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.written, (std::vector<std::string>{o.tidy_path, o.out_path}));
  EXPECT_EQ(r.left_out_rows, 0);
  EXPECT_NE(r.brief.find("windows: 39 measured, 1 idle"), std::string::npos) << r.brief;
  const auto e = RunStage("wattcal-ingest", {"--capture", capture, "--gpu", kH100Gpu, "--tidy",
                                             dir + "/exe.csv", "--out", dir + "/exe_windows.csv"});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find(r.brief), std::string::npos) << e.output;
  EXPECT_EQ(ReadFile(dir + "/lib.csv"), ReadFile(dir + "/exe.csv"));
  EXPECT_EQ(ReadFile(dir + "/lib_windows.csv"), ReadFile(dir + "/exe_windows.csv"));
}

// ---------------------------------------------------------------------------------------
// --settle-ms on the --power-log way.

using IngestSettle = QuietLogs;

// The real captures' 39 microbenchmark windows (1.2-1.6 s), read as a separate power log and
// windows file: unsettled, the sensor's rise at each window's start flags most of them
// high_cv; with the default 300 ms settle only power-capped windows (clock_moved) stay flagged.
TEST_F(IngestSettle, DefaultSettleLeavesHealthyRealWindowsUnflagged) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  for (const char* folder :
       {"h100_capture/ubench_random", "h100_capture/ubench_zeros", "h200_capture/ubench_random"}) {
    SCOPED_TRACE(folder);
    const std::string capture = Dataset(folder);
    IngestStageOptions o;
    o.inputs.power_log = capture + "/nvml_power.csv";
    o.inputs.windows = capture + "/windows.csv";
    o.out_path = dir + "/default.csv";
    ASSERT_EQ(RunIngestStage(o).exit_code, 0);
    o.settle_ms = 0.0;
    o.out_path = dir + "/unsettled.csv";
    ASSERT_EQ(RunIngestStage(o).exit_code, 0);
    const std::string settled = ReadFile(dir + "/default.csv");
    const std::string unsettled = ReadFile(dir + "/unsettled.csv");
    EXPECT_EQ(std::count(settled.begin(), settled.end(), '\n'), 40);  // header + 39 windows
    EXPECT_EQ(std::count(unsettled.begin(), unsettled.end(), '\n'), 40);
    const int high_cv = CountLines(settled, "high_cv");
    EXPECT_GE(CountLines(unsettled, "high_cv"), 17);  // 17-29 of 39 on these folders
    EXPECT_LE(high_cv, 2);
    // Every window still flagged high_cv moved its clock (a power-capped mix).
    EXPECT_EQ(high_cv, CountLines(settled, "high_cv:1;clock_moved:1"));
    EXPECT_NE(ReadFile(testing::ProvenancePath(dir + "/default.csv")).find("\"settle_ms\": 300"),
              std::string::npos);
  }
}

// A window shorter than twice the default settle time is measured over its second half (and
// counted in the summary), as capture directories do; a settle time given is applied as given.
TEST_F(IngestSettle, ShortWindowsAreMeasuredOverTheirSecondHalf) {
  const std::string dir = ScratchDir();
  std::string log = "timestamp_us,power_mw\n";
  // 100 W for the first 200 ms of each window, 200 W after (a rise the settle skips).
  for (int t_ms = 0; t_ms <= 3000; t_ms += 10) {
    const int in_window = t_ms < 2000 ? t_ms : t_ms - 2000;
    const int mw = (t_ms > 1000 && t_ms < 2000) ? 50000 : (in_window < 200 ? 100000 : 200000);
    log += std::to_string(t_ms * 1000) + "," + std::to_string(mw) + "\n";
  }
  testing::WriteFile(dir + "/log.csv", log);
  // A 1 s window (settled by 300 ms) and a 0.4 s one (< 600 ms: its second half).
  testing::WriteFile(dir + "/windows.csv",
                     "kernel,start_us,end_us\nlong,0,1000000\nshort,2000000,2400000\n");
  IngestStageOptions o;
  o.inputs.power_log = dir + "/log.csv";
  o.inputs.windows = dir + "/windows.csv";
  o.out_path = dir + "/k.csv";
  const IngestStageReport r = RunIngestStage(o);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.brief.find("windows: 1 launches shorter than twice the settle time (300 ms) "
                         "measured over their second half"),
            std::string::npos)
      << r.brief;
  // The steady 200 W from the settled part; the energy and duration of the whole launch (the
  // rise included): 0.19 s x 100 W + 0.01 s x 150 W + 0.8 (0.2) s x 200 W. They were once the
  // settled part's, 0.7 s and 140 J, 0.2 s and 40 J.
  const std::string k = ReadFile(dir + "/k.csv");
  EXPECT_NE(k.find("\nlong,1,1,180.5,200,"), std::string::npos) << k;
  EXPECT_NE(k.find("\nshort,1,0.4,60.5,200,"), std::string::npos) << k;
  // Given explicitly, a settle time as long as the short window is an error naming its line, as
  // before.
  o.settle_ms = 400.0;
  try {
    RunIngestStage(o);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("windows.csv:3"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------
// --exclude-flagged: a table calibrate accepts, and the count of rows left out.

using IngestExclude = QuietLogs;

TEST_F(IngestExclude, CaptureTableLeavesFlaggedWindowsOutAndCalibrateAcceptsIt) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string capture = Dataset("h100_capture/ubench_random");
  const std::string tidy = dir + "/measured.csv";
  auto r = RunStage("wattcal-ingest",
                    {"--capture", capture, "--gpu", kH100Gpu, "--tidy", tidy, "--exclude-flagged"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("measured table: 1 row left out by --exclude-flagged"), std::string::npos)
      << r.output;
  const std::string table = ReadFile(tidy);
  EXPECT_EQ(table.find("tensor_fp16,"), std::string::npos) << table;  // power-capped window
  EXPECT_EQ(CountLines(table, ",1980,"), 38);                         // 39 windows - 1
  const auto manifest = nlohmann::json::parse(ReadFile(testing::ProvenancePath(tidy)));
  EXPECT_EQ(manifest["options"]["left_out_rows"], 1) << manifest.dump(2);
  EXPECT_EQ(manifest["options"]["exclude_flagged"], true);
  // One V-F pair: the fixed-frequency model.
  r = RunStage("wattcal-calibrate",
               {"--train", tidy, "--method", "fixed", "--out", dir + "/model.json", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(FileExists(dir + "/model.json"));
}

TEST_F(IngestExclude, PowerLogTableLeavesWhollyExcludedKernelsOutAndCalibrateAcceptsIt) {
  const std::string dir = ScratchDir();
  auto r = RunStage("wattcal-synth", {"--spec", kSource + "/microbench_specs/virtual_gpu.json",
                                      "--out-dir", dir + "/data", "--campaign", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string d = dir + "/data/train";
  const std::string tidy = dir + "/measured.csv";
  // 100 readings per launch flags (too_few_samples) about half of the 2 s launches.
  r = RunStage("wattcal-ingest",
               {"--power-log", d + "/power_log.csv", "--windows", d + "/windows.csv", "--counters",
                d + "/counters_ncu.csv", "--gpu", kSource + "/microbench_specs/gpus/virtual.json",
                "--out", dir + "/kernels.csv", "--tidy", tidy, "--min-samples", "100",
                "--exclude-flagged", "--settle-ms", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto manifest = nlohmann::json::parse(ReadFile(testing::ProvenancePath(tidy)));
  const int left_out = manifest["options"]["left_out_rows"];
  EXPECT_GT(left_out, 100);
  EXPECT_NE(r.output.find("measured table: " + std::to_string(left_out) +
                          " rows left out by --exclude-flagged"),
            std::string::npos)
      << r.output.substr(0, 2000);
  const std::string table = ReadFile(tidy);
  EXPECT_EQ(CountLines(table, ",,"), 0);  // no empty power cell
  // Preamble, header, then a row per kernel and V-F pair (one launch each) not left out.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n') - 2, 1944 - left_out);
  r = RunStage("wattcal-calibrate", {"--train", tidy, "--out", dir + "/model.json", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// ---------------------------------------------------------------------------------------
// Help.

TEST(StageDataHelp, NoFlagShowsFalse) {
  for (const char* stage : {"wattcal-ingest", "wattcal-synth", "wattcal-report", "wattcal-static",
                            "wattcal-constant", "wattcal-idle", "wattcal-check"}) {
    const auto help = RunStage(stage, {"--help"});
    EXPECT_EQ(help.exit_code, 0) << stage;
    EXPECT_EQ(help.output.find("{false}"), std::string::npos) << stage << "\n" << help.output;
    EXPECT_EQ(help.output.find("{true}"), std::string::npos) << stage << "\n" << help.output;
  }
  // --settle-ms says its default and what it does to short windows.
  const auto ingest = RunStage("wattcal-ingest", {"--help"});
  EXPECT_NE(ingest.output.find("Default: 300 ms"), std::string::npos) << ingest.output;
}

}  // namespace
}  // namespace wattcal
