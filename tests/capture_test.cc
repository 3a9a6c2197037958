// Capture directories (issue 10) on the real H100 campaign: every folder ingests, counters
// join to windows by launch (never by name), the energy counter gives a window's power,
// power-capped windows are flagged, and a broken join is an error naming both files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fit/identifiability.h"
#include "ingest/capture.h"
#include "ingest/counters.h"
#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::Dataset;

std::string H100(const std::string& folder) { return Dataset("h100_capture/" + folder); }

GpuDescription H100Gpu() {
  return ReadGpuDescription(std::string(WATTCAL_SOURCE_DIR) +
                            "/microbench_specs/gpus/h100_sxm.json");
}

const CaptureWindow& Find(const CaptureReport& r, const std::string& name) {
  for (const CaptureWindow& w : r.windows) {
    if (w.workload == name) return w;
  }
  ADD_FAILURE() << "no window " << name;
  return r.windows.front();
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// A scratch capture directory whose power log links to ubench_random's and whose windows.csv
// and counters are given.
std::string ScratchCapture(const std::string& windows_csv) {
  const std::string dir = testing::ScratchDir() + "/capture";
  fs::create_directories(dir);
  fs::create_symlink(H100("ubench_random/nvml_power.csv"), dir + "/nvml_power.csv");
  testing::WriteFile(dir + "/windows.csv", windows_csv);
  return dir;
}

// ubench_random's raw page joined to `windows` (edited windows.csv lines) must fail with an
// InputError whose message holds every one of `parts`.
void ExpectJoinError(const std::vector<std::string>& windows,
                     const std::vector<std::string>& parts) {
  const std::string dir = ScratchCapture(JoinLines(windows));
  fs::create_symlink(H100("ubench_random/ncu_raw.csv"), dir + "/ncu_raw.csv");
  try {
    IngestCaptures({dir}, H100Gpu(), CaptureOptions());
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(Capture, EveryH100FolderIngests) {
  WATTCAL_REQUIRE_DATASETS();
  const GpuDescription gpu = H100Gpu();
  const std::pair<const char*, int> folders[] = {
      {"ubench_random", 39}, {"mix_random", 100}, {"ubench_zeros", 39}, {"mix_zeros", 100}};
  for (const auto& [folder, benchmarks] : folders) {
    SCOPED_TRACE(folder);
    const CaptureReport r = IngestCaptures({H100(folder)}, gpu, CaptureOptions());
    int measured = 0, idle = 0;
    for (const CaptureWindow& w : r.windows) {
      if (w.kind == "idle") {
        ++idle;
        EXPECT_GT(w.energy.mean_power_w, 50.0);
        EXPECT_LT(w.energy.mean_power_w, 130.0);
        continue;
      }
      ++measured;
      EXPECT_EQ(w.energy.power_source, "energy_counter") << w.workload;
      EXPECT_GT(w.energy.mean_power_w, 60.0) << w.workload;
      EXPECT_LT(w.energy.mean_power_w, 760.0) << w.workload;
      ASSERT_EQ(w.utilisations.size(), r.gpu.components.size());
      for (double u : w.utilisations) EXPECT_TRUE(std::isfinite(u) && u >= 0.0) << w.workload;
    }
    EXPECT_EQ(measured, benchmarks);
    // mix_random's idle_after ends 43 us after the last NVML reading: skipped and named.
    EXPECT_GE(idle + static_cast<int>(r.skipped_idle.size()), 1);
    if (std::string(folder) == "mix_random") {
      ASSERT_EQ(r.skipped_idle.size(), 1u);
      EXPECT_NE(r.skipped_idle[0].find("idle_windows.csv:2: idle_after"), std::string::npos)
          << r.skipped_idle[0];
    }
    EXPECT_DOUBLE_EQ(r.power_limit_w.value(), 700.0);
  }
}

TEST(Capture, TheH200CaptureIngestsWithItsDescription) {
  WATTCAL_REQUIRE_DATASETS();
  const GpuDescription gpu =
      ReadGpuDescription(std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h200_sxm.json");
  const CaptureReport r =
      IngestCaptures({Dataset("h200_capture/ubench_random"), Dataset("h200_capture/mix_random")},
                     gpu, CaptureOptions());
  const Corpus c = r.ToCorpus();
  EXPECT_EQ(c.rows(), 139);
  EXPECT_DOUBLE_EQ(c.power_limit_w.value(), 700.0);
  EXPECT_DOUBLE_EQ(c.layout.domains[1].default_freq_mhz, 3201.0);
  int throttled = 0;
  for (int i = 0; i < c.rows(); ++i) throttled += IsThrottledRow(c, i);
  EXPECT_GE(throttled, 5);
  // The H200's HBM3e: dram_ld reads ~4.47 TB/s of the 4.8 TB/s peak.
  const CaptureWindow& dram = Find(r, "dram_ld");
  EXPECT_NEAR(dram.utilisations[r.gpu.components.size() - 2], 4.47 / 4.8, 0.02);
}

TEST(Capture, CountersJoinByLaunchNotByName) {
  WATTCAL_REQUIRE_DATASETS();
  const CaptureReport r = IngestCaptures({H100("ubench_random")}, H100Gpu(), CaptureOptions());
  // Nine benchmarks run k_int_add: each keeps its own launch.
  const CaptureWindow& one = Find(r, "sm_sweep_int_add_001");
  const CaptureWindow& all = Find(r, "sm_sweep_int_add_132");
  const CaptureWindow& full = Find(r, "int_add");
  EXPECT_EQ(one.counters_kernel, "k_int_add(P)");
  EXPECT_EQ(one.blocks, 1);
  EXPECT_EQ(all.blocks, 132);
  EXPECT_EQ(full.blocks, 1056);
  EXPECT_NE(one.counters_line, all.counters_line);
  EXPECT_NE(all.counters_line, full.counters_line);
  EXPECT_EQ(one.counters_launches, 1);
  // ncu_raw.csv: 3 tool lines, header, units row, 2 set-up launches, then the windows in order.
  EXPECT_EQ(Find(r, "idle_sleep").counters_line, 8);
  EXPECT_EQ(one.counters_line, 8 + 23);
  // The INT utilisation of one SM is 1/132 of all 132 SMs' (elapsed-cycle time base).
  const int int_index = 1;
  ASSERT_EQ(r.gpu.components[int_index].component, "INT");
  EXPECT_NEAR(one.utilisations[int_index] / all.utilisations[int_index], 1.0 / 132.0, 0.002);
  // The two set-up launches are named.
  ASSERT_EQ(r.dropped_launches.size(), 2u);
  EXPECT_NE(r.dropped_launches[0].find("k_fill_random"), std::string::npos);
  EXPECT_NE(r.dropped_launches[1].find("ncu_raw.csv:7"), std::string::npos);
}

TEST(Capture, EnergyCounterPowerMatchesAHandComputation) {
  WATTCAL_REQUIRE_DATASETS();
  const CaptureReport r = IngestCaptures({H100("ubench_random")}, H100Gpu(), CaptureOptions());
  // int_add's window, windows.csv line 3.
  const double start_s = 1795519849900923e-6, end_s = 1795519851496551e-6;
  // The README's reference: (energy_mj at the end - energy_mj 300 ms after the start) / the
  // time between those two readings (the last readings at or before those times).
  double t_a = 0, e_a = 0, t_b = 0, e_b = 0;
  std::ifstream in(H100("ubench_random/nvml_power.csv"));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    std::vector<std::string> f;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    const double t = std::stod(f[0]) * 1e-6, e = std::stod(f[3]) * 1e-3;
    if (t <= start_s + 0.3) t_a = t, e_a = e;
    if (t <= end_s) t_b = t, e_b = e;
  }
  const double hand_w = (e_b - e_a) / (t_b - t_a);
  const CaptureWindow& w = Find(r, "int_add");
  EXPECT_EQ(w.energy.line, 3);
  EXPECT_NEAR(w.energy.mean_power_w, hand_w, 0.015 * hand_w);
  EXPECT_GT(hand_w, 300.0);
}

TEST(Capture, PowerCappedMixesAreFlagged) {
  WATTCAL_REQUIRE_DATASETS();
  const CaptureReport r = IngestCaptures({H100("mix_random")}, H100Gpu(), CaptureOptions());
  int flagged = 0;
  for (const CaptureWindow& w : r.windows) {
    if (w.kind != "benchmark") continue;
    const bool moved =
        w.energy.f_core_max_mhz - w.energy.f_core_min_mhz > 0.01 * w.energy.f_core_max_mhz;
    if (moved) {
      ++flagged;
      EXPECT_NE(w.energy.flags & kFlagClockMoved, 0u) << w.workload;
    }
  }
  EXPECT_GE(flagged, 5);
  const CaptureWindow& capped = Find(r, "mix006_f12_i8_d4_s1_h0_l1_m2_t2_b4");
  EXPECT_NE(capped.energy.flags & kFlagPowerCap, 0u);
  EXPECT_NE(capped.energy.flags & kFlagClockMoved, 0u);
  EXPECT_GT(capped.energy.mean_power_w, 680.0);
  EXPECT_LT(capped.energy.f_core_min_mhz, 1800.0);
  // The measured table carries the flags and the board limit.
  const Corpus c = r.ToCorpus();
  EXPECT_DOUBLE_EQ(c.power_limit_w.value(), 700.0);
  ASSERT_EQ(static_cast<int>(c.flags.size()), c.rows());
  int tagged = 0;
  for (const std::string& f : c.flags) tagged += f.find("power_cap") != std::string::npos;
  EXPECT_GE(tagged, 5);
}

TEST(Capture, ACountMismatchNamesBothFiles) {
  WATTCAL_REQUIRE_DATASETS();
  std::vector<std::string> windows = Lines(H100("ubench_random/windows.csv"));
  windows.pop_back();  // one window fewer than the profiled launches
  ExpectJoinError(windows, {"ncu_raw.csv", "windows.csv", "39 profiled launches", "38 windows"});
}

TEST(Capture, ALaunchConfigurationMismatchNamesTheWindow) {
  WATTCAL_REQUIRE_DATASETS();
  std::vector<std::string> windows = Lines(H100("ubench_random/windows.csv"));
  // windows.csv line 26 is sm_sweep_int_add_002 (2 blocks); say 3.
  ASSERT_EQ(windows[25].rfind("sm_sweep_int_add_002,", 0), 0u);
  const size_t pos = windows[25].find(",2,1024,");
  ASSERT_NE(pos, std::string::npos);
  windows[25].replace(pos, 8, ",3,1024,");
  ExpectJoinError(windows, {"ncu_raw.csv:32", "windows.csv:26", "(2, 1, 1)"});
}

TEST(Capture, ANvidiaSmiLogThatStopsEarlyIsLeftOutWithAWarning) {
  WATTCAL_REQUIRE_DATASETS();
  // nvidia-smi stopped half-way: the NVML log still gives every window's energy.
  std::vector<std::string> smi = Lines(H100("ubench_random/nvidia_smi_power.csv"));
  smi.resize(smi.size() / 2);
  const std::string dir = ScratchCapture(JoinLines(Lines(H100("ubench_random/windows.csv"))));
  fs::create_symlink(H100("ubench_random/ncu_raw.csv"), dir + "/ncu_raw.csv");
  testing::WriteFile(dir + "/nvidia_smi_power.csv", JoinLines(smi));
  const CaptureReport r = IngestCaptures({dir}, H100Gpu(), CaptureOptions());
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("nvidia_smi_power.csv: it covers"), std::string::npos)
      << r.warnings[0];
  EXPECT_FALSE(r.power_limit_w.has_value());
  EXPECT_EQ(Find(r, "int_add").energy.power_source, "energy_counter");
}

TEST(Capture, TheSmSweepIsUnidentifiableWithActiveCyclesAndNotWithElapsedCycles) {
  WATTCAL_REQUIRE_DATASETS();
  // With sm__cycles_active.avg as TPDS Eq. 7's time base, one block on 1...132 SMs gives the same
  // utilisations at 133-346 W: the identifiability check names the nine rows.
  GpuDescription active = H100Gpu();
  active.active_cycles_metric = "sm__cycles_active.avg";
  const Corpus a = IngestCaptures({H100("ubench_random")}, active, CaptureOptions()).ToCorpus();
  const std::vector<IndistinguishableRows> groups = FindIndistinguishableRows(a);
  bool sweep = false;
  for (const IndistinguishableRows& g : groups) {
    if (g.benchmarks.back() != "sm_sweep_int_add_132") continue;
    sweep = true;
    // int_add (1056 blocks) and the nine sweep rows.
    ASSERT_EQ(g.benchmarks.size(), 10u);
    EXPECT_EQ(g.benchmarks.front(), "int_add");
    EXPECT_EQ(g.benchmarks[1], "sm_sweep_int_add_001");
    EXPECT_LT(g.min_power_w, 140.0);
    EXPECT_GT(g.max_power_w, 330.0);
    EXPECT_NE(g.message.find("cannot tell them apart"), std::string::npos) << g.message;
  }
  EXPECT_TRUE(sweep);
  // The shipped description's elapsed cycles tell them apart.
  const Corpus e = IngestCaptures({H100("ubench_random")}, H100Gpu(), CaptureOptions()).ToCorpus();
  for (const IndistinguishableRows& g : FindIndistinguishableRows(e)) {
    for (const std::string& b : g.benchmarks) {
      EXPECT_EQ(b.rfind("sm_sweep", 0), std::string::npos) << g.message;
    }
  }
}

TEST(Capture, AWorkloadsKernelsAreSummedOverTheirTime) {
  WATTCAL_REQUIRE_DATASETS();
  // One workload made of two real launches (int_add and fp32_fma), measured over int_add's
  // window: ncu/app.csv holds the raw page's header, units row and those two rows.
  const std::vector<std::string> raw = Lines(H100("ubench_random/ncu_raw.csv"));
  ASSERT_GT(raw.size(), 12u);
  const std::string dir =
      ScratchCapture("kernel,start_us,end_us\napp,1795519849900923,1795519851496551\n");
  fs::create_directories(dir + "/ncu");
  // Lines 4-5: header and units; line 9: k_int_add (1056 blocks); line 11: k_fp32_fma.
  testing::WriteFile(dir + "/ncu/app.csv", JoinLines({raw[3], raw[4], raw[8], raw[10]}));
  testing::WriteFile(dir + "/ncu/unused.csv", JoinLines({raw[3], raw[4], raw[8]}));
  const GpuDescription gpu = H100Gpu();
  const CaptureReport r = IngestCaptures({dir}, gpu, CaptureOptions());
  const CaptureWindow& app = Find(r, "app");
  EXPECT_EQ(app.counters_launches, 2);
  ASSERT_EQ(r.unused_exports.size(), 1u);
  // By hand: INT = summed integer thread ops / (summed elapsed cycles per SM x 132 x 128: 64 INT32
  // + 64 FMA-pipe integer lanes, h100_sxm.json).
  const std::vector<CounterLaunch> launches = ReadCounterLaunches(dir + "/ncu/app.csv");
  ASSERT_EQ(launches.size(), 2u);
  const char* ops = "sm__sass_thread_inst_executed_op_integer_pred_on.sum";
  const char* cycles = "sm__cycles_elapsed.avg";
  const double int_ops = launches[0].metrics.at(ops) + launches[1].metrics.at(ops);
  const double elapsed = launches[0].metrics.at(cycles) + launches[1].metrics.at(cycles);
  EXPECT_NEAR(app.utilisations[1], int_ops / (elapsed * 132 * 128), 1e-12);
  // DRAM read = summed bytes / summed duration / peak.
  const char* bytes = "dram__bytes_read.sum";
  const char* time = "gpu__time_duration.sum";
  const double dram = (launches[0].metrics.at(bytes) + launches[1].metrics.at(bytes)) /
                      (launches[0].metrics.at(time) + launches[1].metrics.at(time)) / 3.35e12;
  EXPECT_NEAR(app.utilisations[r.gpu.components.size() - 2], dram, 1e-12);
}

TEST(Capture, RunsOfOneWorkloadShareItsExportAndExportsWinOverARawPage) {
  WATTCAL_REQUIRE_DATASETS();
  const std::vector<std::string> raw = Lines(H100("ubench_random/ncu_raw.csv"));
  // Two runs of one workload, "app_run1" and "app_run2", and one export ncu/suite/app.csv; a
  // stray ncu_raw.csv beside it.
  const std::string dir = ScratchCapture(
      "kernel,start_us,end_us\n"
      "suite/app_run1,1795519849900923,1795519851496551\n"
      "suite/app_run2,1795519851900923,1795519853496551\n");
  fs::create_directories(dir + "/ncu/suite");
  testing::WriteFile(dir + "/ncu/suite/app.csv", JoinLines({raw[3], raw[4], raw[8], raw[10]}));
  fs::create_symlink(H100("ubench_random/ncu_raw.csv"), dir + "/ncu_raw.csv");
  const CaptureReport r = IngestCaptures({dir}, H100Gpu(), CaptureOptions());
  ASSERT_EQ(r.windows.size(), 2u);
  EXPECT_EQ(r.windows[0].counters_path, dir + "/ncu/suite/app.csv");
  EXPECT_EQ(r.windows[1].counters_path, dir + "/ncu/suite/app.csv");
  EXPECT_EQ(r.windows[0].counters_launches, 2);
  EXPECT_EQ(r.windows[0].utilisations, r.windows[1].utilisations);
  bool raw_named = false, run_named = false;
  for (const std::string& w : r.warnings) {
    raw_named = raw_named || w.find("both ncu_raw.csv and ncu/ are present") != std::string::npos;
    run_named = run_named || w.find("workload 'suite/app_run2' has no export of its own name") !=
                                 std::string::npos;
  }
  EXPECT_TRUE(raw_named);
  EXPECT_TRUE(run_named);
  // Without the export, the raw page's 39 launches do not match 2 windows: an error naming both.
  fs::remove_all(dir + "/ncu");
  fs::create_directories(dir + "/ncu");
  testing::WriteFile(dir + "/ncu/other.csv", JoinLines({raw[3], raw[4], raw[8]}));
  EXPECT_THROW(IngestCaptures({dir}, H100Gpu(), CaptureOptions()), InputError);
}

// Splits a fully quoted CSV line ("a","b,c","d") into its fields, and joins them back.
std::vector<std::string> QuotedFields(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 1;
  while (start < line.size()) {
    const size_t end = line.find("\",\"", start);
    if (end == std::string::npos) {
      f.push_back(line.substr(start, line.rfind('"') - start));
      break;
    }
    f.push_back(line.substr(start, end - start));
    start = end + 3;
  }
  return f;
}
std::string QuotedLine(const std::vector<std::string>& f) {
  std::string s;
  for (size_t i = 0; i < f.size(); ++i) s += (i > 0 ? ",\"" : "\"") + f[i] + "\"";
  return s;
}

TEST(Capture, AMetricMissingFromOneKernelOfAWorkloadCountsZeroWithAWarning) {
  WATTCAL_REQUIRE_DATASETS();
  const std::vector<std::string> raw = Lines(H100("ubench_random/ncu_raw.csv"));
  const std::vector<std::string> header = QuotedFields(raw[3]);
  const size_t col =
      std::find(header.begin(), header.end(), "dram__bytes_read.sum") - header.begin();
  ASSERT_LT(col, header.size());
  std::vector<std::string> second = QuotedFields(raw[10]);
  ASSERT_EQ(second.size(), header.size());
  second[col] = "n/a";
  const std::string dir =
      ScratchCapture("kernel,start_us,end_us\napp,1795519849900923,1795519851496551\n");
  fs::create_directories(dir + "/ncu");
  testing::WriteFile(dir + "/ncu/app.csv", JoinLines({raw[3], raw[4], raw[8], QuotedLine(second)}));
  const GpuDescription gpu = H100Gpu();
  const CaptureReport r = IngestCaptures({dir}, gpu, CaptureOptions());
  bool warned = false;
  for (const std::string& w : r.warnings) {
    warned = warned || (w.find("dram__bytes_read.sum: 1 of 2 launches") != std::string::npos &&
                        w.find("counted as 0") != std::string::npos);
  }
  EXPECT_TRUE(warned);
  // DRAM read = the first launch's bytes over both launches' time.
  const std::vector<CounterLaunch> launches = ReadCounterLaunches(dir + "/ncu/app.csv");
  const double t = launches[0].metrics.at("gpu__time_duration.sum") +
                   launches[1].metrics.at("gpu__time_duration.sum");
  EXPECT_NEAR(Find(r, "app").utilisations[r.gpu.components.size() - 2],
              launches[0].metrics.at("dram__bytes_read.sum") / t / 3.35e12, 1e-12);
  // A time base missing from a launch is an error.
  std::vector<std::string> untimed = QuotedFields(raw[10]);
  untimed[std::find(header.begin(), header.end(), "gpu__time_duration.sum") - header.begin()] =
      "n/a";
  testing::WriteFile(dir + "/ncu/app.csv",
                     JoinLines({raw[3], raw[4], raw[8], QuotedLine(untimed)}));
  EXPECT_THROW(IngestCaptures({dir}, gpu, CaptureOptions()), InputError);
}

TEST(Capture, StageWritesTheMeasuredTableAndRefusesWhatItCannotRead) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string out = testing::ScratchDir();
  const std::string gpu = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";
  const std::vector<std::string> args = {
      "--capture", H100("ubench_random"), "--capture", H100("mix_random"),  "--gpu", gpu,
      "--tidy",    out + "/measured.csv", "--out",     out + "/windows.csv"};
  const testing::CommandResult r = testing::RunStage("wattcal-ingest", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("set-up launch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mix006_f12_i8_d4_s1_h0_l1_m2_t2_b4"), std::string::npos) << r.output;
  EXPECT_TRUE(testing::HasProvenance(out + "/measured.csv"));
  const Corpus c = ReadCorpus(out + "/measured.csv");
  EXPECT_EQ(c.rows(), 139);
  EXPECT_DOUBLE_EQ(c.power_limit_w.value(), 700.0);
  EXPECT_DOUBLE_EQ(c.layout.domains[0].default_freq_mhz, 1980.0);
  // A rerun is byte-identical.
  const std::string first = testing::ReadFile(out + "/measured.csv");
  const std::string first_windows = testing::ReadFile(out + "/windows.csv");
  ASSERT_EQ(testing::RunStage("wattcal-ingest", args).exit_code, 0);
  EXPECT_EQ(testing::ReadFile(out + "/measured.csv"), first);
  EXPECT_EQ(testing::ReadFile(out + "/windows.csv"), first_windows);
  // Without --gpu: a clear error and no output.
  const testing::CommandResult no_gpu = testing::RunStage(
      "wattcal-ingest", {"--capture", H100("ubench_random"), "--tidy", out + "/x.csv"});
  EXPECT_EQ(no_gpu.exit_code, 1);
  EXPECT_NE(no_gpu.output.find("--capture needs --gpu"), std::string::npos) << no_gpu.output;
  EXPECT_FALSE(testing::FileExists(out + "/x.csv"));
  // A folder that is not a capture.
  fs::create_directories(out + "/empty");
  const testing::CommandResult not_capture = testing::RunStage(
      "wattcal-ingest", {"--capture", out + "/empty", "--gpu", gpu, "--tidy", out + "/y.csv"});
  EXPECT_EQ(not_capture.exit_code, 2);
  EXPECT_NE(not_capture.output.find("no windows.csv"), std::string::npos) << not_capture.output;
  EXPECT_FALSE(testing::FileExists(out + "/y.csv"));
}

// The journey on the real capture, stage by stage: a DVFS fit of single-clock data is refused,
// and a model that never saw tensor work flags the tensor microbenchmark it is asked about.
TEST(Capture, SingleClockDvfsIsRefusedAndExtrapolationIsFlagged) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string out = testing::ScratchDir();
  const std::string gpu = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";
  ASSERT_EQ(testing::RunStage("wattcal-ingest", {"--capture", H100("mix_random"), "--gpu", gpu,
                                                 "--tidy", out + "/mix.csv"})
                .exit_code,
            0);
  ASSERT_EQ(testing::RunStage("wattcal-ingest", {"--capture", H100("ubench_random"), "--gpu", gpu,
                                                 "--tidy", out + "/ubench.csv"})
                .exit_code,
            0);
  // One V-F pair (1980/2619 MHz): DVFS is an error pointing to --method fixed, nothing written.
  const testing::CommandResult dvfs = testing::RunStage(
      "wattcal-calibrate",
      {"--train", out + "/mix.csv", "--method", "dvfs", "--out", out + "/dvfs.json"});
  EXPECT_EQ(dvfs.exit_code, 1);
  EXPECT_NE(dvfs.output.find("DVFS needs at least two V-F pairs"), std::string::npos)
      << dvfs.output;
  EXPECT_NE(dvfs.output.find("use --method fixed"), std::string::npos) << dvfs.output;
  EXPECT_FALSE(testing::FileExists(out + "/dvfs.json"));
  // The mixes' tensor pipes are at most ~56% busy; tensor_fp16 keeps them ~100% busy.
  const testing::CommandResult fixed = testing::RunStage(
      "wattcal-calibrate",
      {"--train", out + "/mix.csv", "--method", "fixed", "--out", out + "/mix_model.json"});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.output;
  const testing::CommandResult v = testing::RunStage(
      "wattcal-validate",
      {"--model", out + "/mix_model.json", "--heldout", out + "/ubench.csv", "--mode", "fixed",
       "--apps-predictions", out + "/apps.csv", "--metrics", out + "/m.json", "--predictions",
       out + "/p.csv", "--summary-md", out + "/s.md"});
  ASSERT_EQ(v.exit_code, 0) << v.output;
  // The summary reports the capped workload (tensor_fp16) apart from those at full clock.
  const std::string summary = testing::ReadFile(out + "/s.md");
  EXPECT_NE(summary.find("| at full clock | 38 |"), std::string::npos) << summary;
  EXPECT_NE(summary.find("| power-capped | 1 |"), std::string::npos) << summary;
  EXPECT_NE(v.output.find("tensor_fp16"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("TENSOR"), std::string::npos) << v.output;
  bool flagged = false;
  int rows = 0;
  for (const std::string& line : Lines(out + "/apps.csv")) {
    ++rows;
    if (line.rfind("tensor_fp16,", 0) == 0) {
      flagged = line.find("util_beyond_training:TENSOR") != std::string::npos;
      // Measured at the power cap: capped in the measurement, and predicted at the reference clock.
      EXPECT_NE(line.find("predicted_at_reference_clock"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(flagged);
  EXPECT_EQ(rows, 1 + 39);  // header + every microbenchmark, capped ones included
}

}  // namespace
}  // namespace wattcal
