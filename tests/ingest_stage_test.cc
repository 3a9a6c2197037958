// wattcal-ingest as a user runs it: real sample files from ../shared/samples, the minimal
// form of the issue (raw NVML log + windows -> KERNELS.csv), and bad inputs.
#include <gtest/gtest.h>
#include <tuple>

#include <algorithm>

#include <boost/filesystem.hpp>

#include "test_support.h"

namespace wattcal {
namespace {

using testing::FileExists;
using testing::HasProvenance;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

std::string Sample(const std::string& relative) {
  const std::string datasets = testing::DatasetsDir();
  return datasets.empty() ? "" : datasets + "/../samples/" + relative;
}

// The value of `column` in the first data row of a CSV written by wattcal (no quoting).
std::string FirstRowValue(const std::string& csv, const std::string& column) {
  std::vector<std::vector<std::string>> rows;
  size_t start = 0;
  while (start < csv.size() && rows.size() < 2) {
    size_t end = csv.find('\n', start);
    const std::string line = csv.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    size_t s = 0;
    while (true) {
      const size_t comma = line.find(',', s);
      fields.push_back(line.substr(s, comma - s));
      if (comma == std::string::npos) break;
      s = comma + 1;
    }
    rows.push_back(fields);
  }
  if (rows.size() < 2) return "";
  for (size_t i = 0; i < rows[0].size(); ++i) {
    if (rows[0][i] == column) return rows[1][i];
  }
  return "";
}

// Files left in `dir` besides the inputs named in `inputs`.
std::vector<std::string> Leftovers(const std::string& dir, const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const auto& entry : boost::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) out.push_back(name);
  }
  return out;
}

// One window between two hand-read readings of each real nvidia-smi log; the MTSM mean power
// is the trapezoid between them.
TEST(IngestStage, RealNvidiaSmiLogsGiveHandComputedWindowPower) {
  WATTCAL_REQUIRE_DATASETS();
  struct Case {
    std::string file;
    std::string start_us, end_us;
    double mean_power_w;
    std::vector<std::string> extra;
  };
  const std::vector<Case> cases = {
      // 64.07 W then 63.40 W (power.draw.instant, preferred over power.draw).
      {"a100-pcie_query-gpu_units_lms.csv", "1692915616285000", "1692915616300000", 63.735, {}},
      {"gtx1650_query-gpu_pstate_units.csv", "1728790411779000", "1728790411792000", 19.46, {}},
      {"h100_power-draw-instant_clocks-sm_lms.csv",
       "1693491403874000",
       "1693491403877000",
       77.08,
       {}},
      // --format=csv,noheader: 11.64 W then 11.36 W, 5.008 s apart.
      {"noheader_units_unknown-gpu.csv",
       "1777133166780000",
       "1777133171788000",
       11.5,
       {"--columns",
        "timestamp,utilization.gpu,utilization.memory,memory.used,memory.free,"
        "temperature.gpu,power.draw"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string dir = ScratchDir();
    const std::string windows = WriteFile(
        dir + "/windows.csv", "kernel,start_us,end_us\nk," + c.start_us + "," + c.end_us + "\n");
    // Whole windows (the hand computation's), not the default 300 ms settle.
    std::vector<std::string> args = {
        "--power-log", Sample("nvidia-smi/" + c.file), "--windows",   windows,
        "--out",       dir + "/kernels.csv",           "--settle-ms", "0",
        "-q"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const auto r = RunStage("wattcal-ingest", args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string kernels = ReadFile(dir + "/kernels.csv");
    EXPECT_NEAR(std::stod(FirstRowValue(kernels, "mean_power_w")), c.mean_power_w, 1e-9) << kernels;
    EXPECT_EQ(FirstRowValue(kernels, "launches"), "1");
    EXPECT_TRUE(HasProvenance(dir + "/kernels.csv"));
  }
}

TEST(IngestStage, RealCounterExportsAndGpmtoolFilesIngest) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  // Each format's table: the header, its row count (one per kernel and metric) and its first row,
  // read from the exports by hand.
  const std::tuple<const char*, size_t, const char*> formats[] = {
      {"ncu/nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-aws.csv", 53,
       "\"Kernel2(bool*,bool*,bool*,bool*,int)\",,7,Achieved Active Warps Per SM,14.912857"},
      {"ncu/nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-lassen.csv", 105,
       "Kernel2,,7,Achieved Active Warps Per SM,14.9742857"},
      {"nvprof/nvprof_csv_metrics-all_k20c.csv", 125,
       "\"__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)\",,2,"},
      {"nvprof/nvprof_csv_metrics-subset_k20c.csv", 77,
       "\"__kernel___forma_kernel__0__(float*, int, int, float*)\",,3,achieved_occupancy,0"},
      {"accelwattch/hw_perf.csv", 426, "findRangeK,b+tree-rodinia-3.1,1,CC_ACC,0"}};
  for (const auto& [f, lines, first_row] : formats) {
    const auto r =
        RunStage("wattcal-ingest", {"--counters", Sample(f), "--counters-table", dir + "/c.csv"});
    ASSERT_EQ(r.exit_code, 0) << f << "\n" << r.output;
    const std::string table = ReadFile(dir + "/c.csv");
    EXPECT_EQ(table.rfind("kernel,benchmark,launches,metric,value\n", 0), 0u) << f;
    EXPECT_EQ(static_cast<size_t>(std::count(table.begin(), table.end(), '\n')), lines) << f;
    const size_t second = table.find('\n') + 1;
    EXPECT_EQ(table.compare(second, std::string(first_row).size(), first_row), 0)
        << f << ":\n"
        << table.substr(second, 200);
  }
  for (const std::string f : {"gpmtool/v2_micro_gtxtitanx.csv", "gpmtool/v2_real_gtxtitanx.csv"}) {
    const auto r =
        RunStage("wattcal-ingest", {"--corpus", Sample(f), "--corpus-out", dir + "/t.csv", "-q"});
    ASSERT_EQ(r.exit_code, 0) << f << "\n" << r.output;
    EXPECT_EQ(ReadFile(dir + "/t.csv")
                  .rfind("# wattcal-tidy default_f_core_mhz=975 default_f_mem_mhz=3505\n", 0),
              0u);
  }
  // AccelWattch's measured power table (CRLF) and its run list; values read by hand.
  auto r2 = RunStage("wattcal-ingest",
                     {"--kernel-power", Sample("accelwattch/hw_power_validation_volta.csv"),
                      "--kernel-power-out", dir + "/p.csv", "--ubench",
                      Sample("accelwattch/ubench.cfg"), "--ubench-out", dir + "/u.csv", "-q"});
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_EQ(FirstRowValue(ReadFile(dir + "/p.csv"), "kernel"), "backprop_k1");
  EXPECT_EQ(FirstRowValue(ReadFile(dir + "/p.csv"), "mean_power_w"), "219.7978");
  EXPECT_EQ(FirstRowValue(ReadFile(dir + "/p.csv"), "samples"), "5");
  EXPECT_EQ(
      ReadFile(dir + "/u.csv")
          .rfind("benchmark,iterations,active_sms,lanes_per_warp\nACT_CORE1,2000000000,1,32\n", 0),
      0u);
  // The real-applications file's first workload, by its name; then the first training row of
  // the gpmTOOL sample, read by hand: 142.6985 W at 1164/4005 MHz.
  EXPECT_EQ(FirstRowValue(ReadFile(dir + "/t.csv"), "benchmark"), "mri-gridding");
  const auto r = RunStage("wattcal-ingest", {"--corpus", Sample("gpmtool/v2_micro_gtxtitanx.csv"),
                                             "--corpus-out", dir + "/m.csv", "-q"});
  ASSERT_EQ(r.exit_code, 0);
  const std::string tidy = ReadFile(dir + "/m.csv");
  EXPECT_EQ(FirstRowValue(tidy, "power_w"), "142.6985");
  EXPECT_EQ(FirstRowValue(tidy, "f_core_mhz"), "1164");
  EXPECT_EQ(FirstRowValue(tidy, "mem:DRAM"), "0.004449");
}

// The minimal form: raw NVML samples (timestamp_us,power_mw) + windows.
TEST(IngestStage, RawNvmlLogAndRepeatedKernelWindows) {
  const std::string dir = ScratchDir();
  // 100 W for 1 s then 200 W for 1 s, sampled every 100 ms.
  std::string log = "timestamp_us,power_mw\n";
  for (int i = 0; i <= 20; ++i) {
    log += std::to_string(1000000 + i * 100000) + "," + (i <= 10 ? "100000" : "200000") + "\n";
  }
  WriteFile(dir + "/log.csv", log);
  // Two launches of k, each inside the flat 100 W part; one of h at 200 W.
  WriteFile(dir + "/windows.csv",
            "kernel,start_us,end_us\nk,1100000,1300000\nk,1400000,1900000\nh,2100000,2900000\n");
  // The log has no clocks: k's two launches could come from two V-F pairs. Kernel-window
  // energy needs no clocks (Arafa et al.): the per-launch and per-kernel tables are written with
  // blank clocks and a warning; only the measured V-F table needs the pair, and is refused.
  const auto clockless =
      RunStage("wattcal-ingest", {"--power-log", dir + "/log.csv", "--windows",
                                  dir + "/windows.csv", "--out", dir + "/clockless.csv",
                                  "--windows-out", dir + "/launches.csv", "--settle-ms", "0"});
  ASSERT_EQ(clockless.exit_code, 0) << clockless.output;
  EXPECT_NE(clockless.output.find("no clock columns"), std::string::npos) << clockless.output;
  EXPECT_NE(clockless.output.find("kernel 'k' has 2 launches"), std::string::npos)
      << clockless.output;
  EXPECT_NE(clockless.output.find("--f-core-mhz"), std::string::npos) << clockless.output;
  EXPECT_NE(ReadFile(dir + "/clockless.csv").find("\nk,"), std::string::npos);
  const std::string launches = ReadFile(dir + "/launches.csv");
  EXPECT_EQ(std::count(launches.begin(), launches.end(), '\n'), 4);  // header + 3 launches
  const auto r = RunStage("wattcal-ingest", {"--power-log", dir + "/log.csv", "--windows",
                                             dir + "/windows.csv", "--out", dir + "/kernels.csv",
                                             "--f-core-mhz", "1000", "--settle-ms", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string kernels = ReadFile(dir + "/kernels.csv");
  EXPECT_EQ(kernels.rfind("kernel,launches,duration_s,energy_j,mean_power_w,samples", 0), 0u)
      << kernels;
  // k: two launches at 100 W; mean energy per launch (0.2 s + 0.5 s) / 2 x 100 W = 35 J.
  EXPECT_NE(kernels.find("\nk,2,0.35,35,100,"), std::string::npos) << kernels;
  // h: one launch of 0.8 s at 200 W.
  EXPECT_NE(kernels.find("\nh,1,0.8,160,200,"), std::string::npos) << kernels;
  // Without --settle-ms: 300 ms settle, and launches shorter than 600 ms (k's) measured over
  // their second half: the same steady powers, and each launch's energy and duration are still
  // the whole launch's (they were once the settled part's: k 0.175 s, h 0.5 s and 100 J).
  const auto settled = RunStage("wattcal-ingest",
                                {"--power-log", dir + "/log.csv", "--windows", dir + "/windows.csv",
                                 "--out", dir + "/settled.csv", "--f-core-mhz", "1000"});
  ASSERT_EQ(settled.exit_code, 0) << settled.output;
  EXPECT_NE(settled.output.find("windows: 2 launches shorter than twice the settle time (300 ms)"),
            std::string::npos)
      << settled.output;
  const std::string s = ReadFile(dir + "/settled.csv");
  EXPECT_NE(s.find("\nk,2,0.35,35,100,"), std::string::npos) << s;
  EXPECT_NE(s.find("\nh,1,0.8,160,200,"), std::string::npos) << s;
}

struct BadCase {
  std::string name;
  std::string log;
  std::string windows;
  std::string counters;         // "" = none
  std::string expect_location;  // "log.csv:3" etc.
  std::string expect_text;
};

TEST(IngestStage, BadInputsNameFileAndLineAndLeaveNoOutput) {
  const std::string good_log =
      "timestamp_us,power_mw\n1000000,100000\n2000000,100000\n3000000,100000\n";
  const std::string good_windows = "kernel,start_us,end_us\nk,1200000,1800000\n";
  const std::vector<BadCase> cases = {
      {"window_outside_log", good_log,
       "kernel,start_us,end_us\nk,1200000,1800000\nk,2500000,3500000\n", "", "windows.csv:3", ""},
      {"empty_log", "", good_windows, "", "log.csv", "empty"},
      {"unknown_unit", "timestamp_us,power_btu\n1000000,1\n2000000,1\n", good_windows, "",
       "log.csv", "power_btu"},
      {"truncated_log", "timestamp_us,power_mw\n1000000,100000\n2000000,100", good_windows, "",
       "log.csv:3", ""},
      {"end_before_start", good_log, "kernel,start_us,end_us\nk,1800000,1200000\n", "",
       "windows.csv:2", ""},
      {"kernel_without_counters", good_log,
       "kernel,start_us,end_us\nk,1200000,1800000\nq,2100000,2500000\n", "counters",
       "windows.csv:3", "no counters for kernel 'q'"},
  };
  const std::string gpu = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/virtual.json";
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = ScratchDir() + "/" + c.name;
    boost::filesystem::create_directories(dir);
    WriteFile(dir + "/log.csv", c.log);
    WriteFile(dir + "/windows.csv", c.windows);
    std::vector<std::string> inputs = {"log.csv", "windows.csv"};
    std::vector<std::string> args = {"--power-log",        dir + "/log.csv", "--windows",
                                     dir + "/windows.csv", "--out",          dir + "/kernels.csv"};
    if (!c.counters.empty()) {
      // Counters for kernel k only, written by the virtual GPU's own writer.
      const auto s = RunStage(
          "wattcal-synth",
          {"--spec", std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json",
           "--out-dir", dir + "/camp", "--campaign", "-q"});
      ASSERT_EQ(s.exit_code, 0) << s.output;
      std::string ncu = ReadFile(dir + "/camp/train/counters_ncu.csv");
      std::string only_k;
      size_t start = 0;
      while (start < ncu.size()) {
        const size_t end = ncu.find('\n', start);
        const std::string line = ncu.substr(start, end - start + 1);
        if (start == 0 || line.find("\"micro_001\"") != std::string::npos) {
          std::string renamed = line;
          const size_t at = renamed.find("\"micro_001\"");
          if (at != std::string::npos) renamed.replace(at, 11, "\"k\"");
          only_k += renamed;
        }
        start = end + 1;
      }
      WriteFile(dir + "/ncu.csv", only_k);
      inputs.push_back("ncu.csv");
      inputs.push_back("camp");
      args.insert(args.end(),
                  {"--counters", dir + "/ncu.csv", "--gpu", gpu, "--tidy", dir + "/tidy.csv"});
    }
    const auto r = RunStage("wattcal-ingest", args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(dir + "/" + c.expect_location), std::string::npos) << r.output;
    if (!c.expect_text.empty()) {
      EXPECT_NE(r.output.find(c.expect_text), std::string::npos) << r.output;
    }
    EXPECT_TRUE(Leftovers(dir, inputs).empty()) << "partial output left behind";
  }
}

}  // namespace
}  // namespace wattcal
