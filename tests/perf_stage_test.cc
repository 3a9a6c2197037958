// wattcal-perf and wattcal-dvfs run as a user runs them (build/bin through RunStage), for the
// contracts every stage keeps (SPEC.md):
//
//   PerfStage*    simulate -> predict -> validate (with figures): exit 0, a manifest beside every
//                 output, byte-identical reruns; bad data -> exit 2 naming file:line: field and
//                 no partial output; bad options -> exit 1 naming the field; the MAPE gate -> 3
//   DvfsStage*    the choice on the virtual GPU with its true power model; the same contracts
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_io.h"
#include "report/validation_plots.h"
#include "synth/synthetic_corpus.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = boost::filesystem;
using ::wattcal::testing::CommandResult;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::HasProvenance;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

const std::string kSpecs = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/";
const char kTargets[] = "100,200,300,400,500,600,700";

// The stage executables are separate targets: say so plainly when they were not built.
#define WATTCAL_REQUIRE_STAGE(name)                                \
  ASSERT_TRUE(FileExists(std::string(WATTCAL_BIN_DIR) + "/" name)) \
      << "build " name " first (cmake --build BUILD --target " name ")"

// Every regular file under `dir` with its bytes.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    if (fs::is_regular_file(it->path())) {
      files[fs::relative(it->path(), dir).string()] = ReadFile(it->path().string());
    }
  }
  return files;
}

bool AnyTemporary(const std::string& dir) {
  for (const auto& [name, bytes] : Snapshot(dir)) {
    if (name.find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

// Simulates the suite into dir/sim and predicts + validates into dir (figures when gnuplot is
// there). Returns the predict run's result.
CommandResult SimulateAndPredict(const std::string& dir, bool plots) {
  const CommandResult sim = RunStage("wattcal-perf", {"--simulate", kSpecs + "perf_kernels.json",
                                                      "--out-dir", dir + "/sim", "-q"});
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  std::vector<std::string> args = {"--counters",
                                   dir + "/sim/counters.csv",
                                   "--targets-mhz",
                                   kTargets,
                                   "--out",
                                   dir + "/times.csv",
                                   "--actual",
                                   dir + "/sim/actual_times.csv",
                                   "--validation-out",
                                   dir + "/validation.json",
                                   "--errors-out",
                                   dir + "/errors.csv"};
  if (plots) {
    args.insert(args.end(),
                {"--plot-prefix", dir + "/fig/perf", "--plot-kernels", "overlap_two_slope"});
  }
  return RunStage("wattcal-perf", args);
}

TEST(PerfStage, SimulatePredictValidateWithManifestsAndByteIdenticalReruns) {
  WATTCAL_REQUIRE_STAGE("wattcal-perf");
  const std::string dir = ScratchDir();
  const bool plots = GnuplotAvailable();
  const CommandResult r = SimulateAndPredict(dir, plots);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Run-time MAPE"), std::string::npos) << r.output;
  std::vector<std::string> outputs = {"sim/counters.csv", "sim/actual_times.csv", "times.csv",
                                      "validation.json", "errors.csv"};
  if (plots) {
    for (const char* f :
         {"fig/perf_mape.png", "fig/perf_mape.svg", "fig/perf_times_overlap_two_slope.png",
          "fig/perf_times_overlap_two_slope.svg"}) {
      outputs.push_back(f);
    }
  }
  for (const std::string& f : outputs) {
    EXPECT_TRUE(FileExists(dir + "/" + f)) << f;
    EXPECT_TRUE(HasProvenance(dir + "/" + f)) << f;
  }
  const std::string times = ReadFile(dir + "/times.csv");
  EXPECT_EQ(times.substr(0, times.find('\n')), "kernel,model,target_mhz,predicted_time_s");
  EXPECT_NE(times.find("\ncompute_bound,crisp,100,"), std::string::npos);
  const nlohmann::json v = nlohmann::json::parse(ReadFile(dir + "/validation.json"));
  ASSERT_EQ(v["models"][0]["model"], "crisp");
  EXPECT_LT(v["models"][0]["mape_pct"].get<double>(), 3.0);
  EXPECT_EQ(v["models"][0]["per_target"].size(), 6u);  // the base (700 MHz) left out
  const nlohmann::json m =
      nlohmann::json::parse(ReadFile(testing::ProvenancePath(dir + "/times.csv")));
  EXPECT_NE(m.dump().find("sim/counters.csv"), std::string::npos) << m.dump();

  const std::map<std::string, std::string> first = Snapshot(dir);
  ASSERT_EQ(SimulateAndPredict(dir, plots).exit_code, 0);
  EXPECT_TRUE(first == Snapshot(dir)) << "a rerun changed some output bytes";
  EXPECT_FALSE(AnyTemporary(dir));
}

TEST(PerfStage, TimelinesGiveTheSimulatedCounters) {
  WATTCAL_REQUIRE_STAGE("wattcal-perf");
  const std::string dir = ScratchDir();
  ASSERT_EQ(RunStage("wattcal-perf", {"--simulate", kSpecs + "perf_kernels.json", "--out-dir", dir,
                                      "--write-timelines", "-q"})
                .exit_code,
            0);
  const CommandResult r =
      RunStage("wattcal-perf", {"--timelines", dir + "/timelines.csv", "--targets-mhz", "350",
                                "--out", dir + "/t.csv", "--counters-out", dir + "/c.csv", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadFile(dir + "/c.csv"), ReadFile(dir + "/counters.csv"));
}

TEST(PerfStage, BadCountersExit2WithoutPartialOutput) {
  WATTCAL_REQUIRE_STAGE("wattcal-perf");
  const std::string dir = ScratchDir();
  const std::string bad =
      WriteFile(dir + "/bad.csv",
                "kernel,base_mhz,total_cycles,lcp_cycles,load_stall_cycles,store_stall_cycles\n"
                "a,700,100,50,10,0\nb,700,100,120,10,0\n");
  const CommandResult r = RunStage(
      "wattcal-perf", {"--counters", bad, "--targets-mhz", "350", "--out", dir + "/out/t.csv"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":3: lcp_cycles: lcp_cycles = 120 exceeds total_cycles = 100"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(FileExists(dir + "/out/t.csv"));
  EXPECT_FALSE(HasProvenance(dir + "/out/t.csv"));
  EXPECT_FALSE(AnyTemporary(dir));
}

TEST(PerfStage, BadOptionsExit1NamingTheField) {
  WATTCAL_REQUIRE_STAGE("wattcal-perf");
  const std::string dir = ScratchDir();
  const std::string counters =
      WriteFile(dir + "/c.csv",
                "kernel,base_mhz,total_cycles,lcp_cycles,load_stall_cycles,store_stall_cycles\n"
                "a,700,100,50,10,0\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--counters", counters, "--targets-mhz", "350", "--out", dir + "/t.csv", "--models",
        "crisp,oracle"},
       "--models: oracle not in {crisp,crisp_l,proportional,stall,lead,crit,miss}"},
      {{"--counters", counters, "--out", dir + "/t.csv"}, "targets_mhz is empty"},
      {{"--counters", counters, "--targets-mhz", "350,-2", "--out", dir + "/t.csv"},
       "targets_mhz[1] = -2"},
      {{"--counters", counters, "--targets-mhz", "350"}, "out_path (--out) is required"},
      {{"--counters", counters, "--simulate", kSpecs + "perf_kernels.json", "--out-dir", dir},
       "give exactly one of"},
      {{"--counters", counters, "--targets-mhz", "350", "--out", dir + "/t.csv", "--validation-out",
        dir + "/v.json"},
       "go together"},
  };
  for (const auto& [args, mention] : cases) {
    const CommandResult r = RunStage("wattcal-perf", args);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(mention), std::string::npos) << r.output;
  }
  EXPECT_FALSE(FileExists(dir + "/t.csv"));
}

TEST(PerfStage, MapeGateExit3AfterWriting) {
  WATTCAL_REQUIRE_STAGE("wattcal-perf");
  const std::string dir = ScratchDir();
  ASSERT_EQ(
      RunStage("wattcal-perf", {"--simulate", kSpecs + "perf_kernels.json", "--out-dir", dir, "-q"})
          .exit_code,
      0);
  const CommandResult r =
      RunStage("wattcal-perf", {"--counters", dir + "/counters.csv", "--targets-mhz", kTargets,
                                "--out", dir + "/t.csv", "--actual", dir + "/actual_times.csv",
                                "--validation-out", dir + "/v.json", "--max-mape-pct", "0.01"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("exceeds --max-mape-pct"), std::string::npos) << r.output;
  EXPECT_TRUE(FileExists(dir + "/v.json"));
}

// The virtual GPU's true model (microbench_specs/virtual_gpu.json) as a model file in `dir`.
std::string WriteTruthModel(const std::string& dir) {
  return WriteFile(dir + "/truth_model.json",
                   ModelToJson(TruthModel(ReadSyntheticSpec(kSpecs + "virtual_gpu.json"))));
}

// The preamble and header of a tidy activity table of the virtual GPU at 975/3505 MHz.
constexpr const char* kActivityHeader =
    "# wattcal-tidy default_f_core_mhz=975 default_f_mem_mhz=3505\n"
    "benchmark,f_core_mhz,f_mem_mhz,core:SP ADD,core:SP MUL,core:SP FMA,core:INT,core:DP ADD,"
    "core:DP MUL,core:DP FMA,core:SFU,core:CF,core:L2,core:Shared,mem:DRAM\n";

// The virtual GPU at its own V-F levels: counters at 975 MHz, the activity in its layout and
// its true power model.
std::string VirtualGpuSetup(const std::string& dir) {
  const CommandResult sim =
      RunStage("wattcal-perf", {"--simulate", kSpecs + "perf_kernels.json", "--activity-spec",
                                kSpecs + "virtual_gpu.json", "--out-dir", dir + "/vg", "-q"});
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  const CommandResult times = RunStage(
      "wattcal-perf", {"--counters", dir + "/vg/counters.csv", "--targets-mhz",
                       "595,671,747,823,899,975,1050,1164", "--out", dir + "/vg/times.csv", "-q"});
  EXPECT_EQ(times.exit_code, 0) << times.output;
  return WriteTruthModel(dir);
}

TEST(DvfsStage, ChoosesAgainstTheTruthWithByteIdenticalReruns) {
  WATTCAL_REQUIRE_STAGE("wattcal-perf");
  WATTCAL_REQUIRE_STAGE("wattcal-dvfs");
  const std::string dir = ScratchDir();
  const std::string model = VirtualGpuSetup(dir);
  std::vector<std::string> args = {"--model",
                                   model,
                                   "--activity",
                                   dir + "/vg/activity.csv",
                                   "--times",
                                   dir + "/vg/times.csv",
                                   "--actual",
                                   dir + "/vg/actual_times.csv",
                                   "--objective",
                                   "energy",
                                   "--max-slowdown-pct",
                                   "5",
                                   "--out",
                                   dir + "/out/choices.csv",
                                   "--summary-out",
                                   dir + "/out/summary.json",
                                   "--curves-out",
                                   dir + "/out/curves.csv"};
  if (GnuplotAvailable()) {
    args.insert(args.end(),
                {"--plot-kernels", "overlap_two_slope", "--plot-prefix", dir + "/out/dvfs"});
  }
  const CommandResult r = RunStage("wattcal-dvfs", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("DVFS choice minimising energy within a 5% slowdown"), std::string::npos)
      << r.output;
  for (const char* f : {"choices.csv", "summary.json", "curves.csv"}) {
    EXPECT_TRUE(HasProvenance(dir + "/out/" + f)) << f;
  }
  if (GnuplotAvailable()) {
    EXPECT_TRUE(FileExists(dir + "/out/dvfs_overlap_two_slope_crisp.png"));
    EXPECT_TRUE(HasProvenance(dir + "/out/dvfs_overlap_two_slope_crisp.svg"));
  }
  const nlohmann::json s = nlohmann::json::parse(ReadFile(dir + "/out/summary.json"));
  ASSERT_EQ(s["models"][0]["perf_model"], "crisp");
  EXPECT_EQ(s["models"][0]["budget_violations"], 0);
  const std::string choices = ReadFile(dir + "/out/choices.csv");
  EXPECT_EQ(choices.substr(0, 58), "kernel,perf_model,objective,f_core_mhz,f_mem_mhz,predicted");
  EXPECT_NE(choices.find("\nbandwidth_bound,crisp,energy,595,3505,"), std::string::npos) << choices;

  const std::map<std::string, std::string> first = Snapshot(dir + "/out");
  ASSERT_EQ(RunStage("wattcal-dvfs", args).exit_code, 0);
  EXPECT_TRUE(first == Snapshot(dir + "/out")) << "a rerun changed some output bytes";
}

TEST(DvfsStage, KernelWithoutActivityExit2AndBadObjectiveExit1) {
  WATTCAL_REQUIRE_STAGE("wattcal-dvfs");
  const std::string dir = ScratchDir();
  const std::string model = WriteTruthModel(dir);
  const std::string activity =
      WriteFile(dir + "/act.csv",
                std::string(kActivityHeader) + "a,975,3505,0,0,0.5,0,0,0,0,0,0,0.1,0,0.3\n");
  const std::string times = WriteFile(dir + "/times.csv",
                                      "kernel,model,target_mhz,predicted_time_s\n"
                                      "a,crisp,975,1e-3\na,crisp,595,1.2e-3\nb,crisp,975,2e-3\n");
  CommandResult r = RunStage("wattcal-dvfs", {"--model", model, "--activity", activity, "--times",
                                              times, "--out", dir + "/c.csv"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(times + ":4: kernel: no activity for kernel 'b'"), std::string::npos)
      << r.output;
  EXPECT_FALSE(FileExists(dir + "/c.csv"));
  r = RunStage("wattcal-dvfs", {"--model", model, "--activity", activity, "--times", times, "--out",
                                dir + "/c.csv", "--objective", "speed"});
  testing::ExpectRefused(r, 1, {"--objective"}, {dir + "/c.csv"});
  r = RunStage("wattcal-dvfs", {"--model", model, "--activity", activity, "--times", times, "--out",
                                dir + "/c.csv", "--plot-kernels", "a"});
  testing::ExpectRefused(r, 1, {"need --plot-prefix"}, {dir + "/c.csv"});
}

// Issue 35: a kernel of --activity without predicted times in --times was dropped from the
// choices without a word; it is refused, naming the activity's file, line and kernel.
TEST(DvfsStage, ActivityKernelWithoutTimesIsRefused) {
  WATTCAL_REQUIRE_STAGE("wattcal-dvfs");
  const std::string dir = ScratchDir();
  const std::string model = WriteTruthModel(dir);
  const std::string activity =
      WriteFile(dir + "/act.csv", std::string(kActivityHeader) +
                                      "a,975,3505,0,0,0.5,0,0,0,0,0,0,0.1,0,0.3\n"
                                      "c,975,3505,0,0,0.2,0,0,0,0,0,0,0.1,0,0.6\n");
  const std::string times = WriteFile(dir + "/times.csv",
                                      "kernel,model,target_mhz,predicted_time_s\n"
                                      "a,crisp,975,1e-3\na,crisp,595,1.2e-3\n");
  const CommandResult r = RunStage("wattcal-dvfs", {"--model", model, "--activity", activity,
                                                    "--times", times, "--out", dir + "/c.csv"});
  testing::ExpectRefused(
      r, 2, {activity + ":4: benchmark: kernel 'c' has no predicted run time in " + times},
      {dir + "/c.csv"});
}

}  // namespace
}  // namespace wattcal
