// Issue 35, round three, the ingest side: what a capture directory once lost or got wrong
// without a word, on synthetic captures whose truth is known (no outside data): a workload over
// several exports (the time-weighted mean of their utilisations, never their max), an optional
// metric one export lacks (only that export's workloads, flagged), a negative count or a zero
// time base in one launch, an idle window over a benchmark, one workload's marked and unmarked
// recordings, an energy column in an unknown unit, a frozen energy counter, and a launch's
// energy and duration under a settle time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fit/training_rows.h"
#include "ingest/capture.h"
#include "ingest/counters.h"
#include "ingest/kernel_energy_pass.h"
#include "ingest/power_log.h"
#include "ingest/utilisation.h"
#include "io/gpu_description.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::WriteFile;

// Utilisations come back from counts within this (the counts are written as exact decimals).
constexpr double kUtilTol = 1e-9;

GpuDescription H100() {
  return ReadGpuDescription(std::string(WATTCAL_SOURCE_DIR) +
                            "/microbench_specs/gpus/h100_sxm.json");
}

int Index(const GpuDescription& gpu, const std::string& name) {
  for (size_t i = 0; i < gpu.components.size(); ++i) {
    if (gpu.components[i].component == name) return static_cast<int>(i);
  }
  return -1;
}

// `u` for every component of `gpu`, `value` for the named ones and 0.1 elsewhere.
std::vector<double> Utils(const GpuDescription& gpu, const std::map<std::string, double>& value) {
  std::vector<double> u(gpu.components.size(), 0.1);
  for (const auto& [name, v] : value) u[static_cast<size_t>(Index(gpu, name))] = v;
  return u;
}

// One profiled kernel of an export: utilisations over `kernel_s` seconds at the default clock.
KernelCounters Kernel(const GpuDescription& gpu, const std::string& name,
                      const std::vector<double>& u, double kernel_s) {
  KernelCounters k;
  k.kernel = name;
  k.metrics = CountersForUtilisations(u, gpu, kernel_s, kernel_s * gpu.default_core_mhz * 1e6);
  return k;
}

// A capture directory `dir`: windows.csv (`windows`, its header first), an NVML log reading
// `power_w` (instant) every 10 ms over [0, log_s] s, and ncu/<name>.csv for each export.
std::string Capture(const std::string& dir, const std::vector<std::string>& windows,
                    const std::map<std::string, std::vector<KernelCounters>>& exports,
                    double power_w = 300.0, double log_s = 20.0) {
  fs::create_directories(dir + "/ncu");
  std::string w;
  for (const std::string& line : windows) w += line + "\n";
  WriteFile(dir + "/windows.csv", w);
  std::string log = "timestamp_us,power_instant_mw\n";
  for (int64_t t_us = 0; t_us <= static_cast<int64_t>(log_s * 1e6); t_us += 10000)
    log += std::to_string(t_us) + "," + std::to_string(static_cast<int64_t>(power_w * 1e3)) + "\n";
  WriteFile(dir + "/nvml_power.csv", log);
  for (const auto& [name, kernels] : exports)
    WriteFile(dir + "/ncu/" + name + ".csv", NcuDetailsCsv(kernels));
  return dir;
}

bool Warned(const CaptureReport& r, const std::vector<std::string>& parts) {
  return testing::Warned(r.warnings, parts);
}

// A workload measured in two captures, each with its own export: its utilisation is the mean of
// the exports' weighted by their kernel time (TPDS Eqs. 7-8 over the summed counts), which the
// max, the plain mean and either export alone all miss.
TEST(CaptureIntegrity, AWorkloadOverSeveralExportsTakesTheTimeWeightedMean) {
  const GpuDescription gpu = H100();
  const std::string root = ScratchDir();
  const std::string a =
      Capture(root + "/a", {"kernel,start_us,end_us", "w,1000000,3000000"},
              {{"w", {Kernel(gpu, "k", Utils(gpu, {{"FP32", 0.8}, {"DRAM READ", 0.1}}), 1.0)}}});
  const std::string b =
      Capture(root + "/b", {"kernel,start_us,end_us", "w,1000000,3000000"},
              {{"w", {Kernel(gpu, "k", Utils(gpu, {{"FP32", 0.2}, {"DRAM READ", 0.5}}), 3.0)}}});
  const CaptureReport r = IngestCaptures({a, b}, gpu, CaptureOptions());
  const std::vector<AppActivity> apps = r.Workloads();
  ASSERT_EQ(apps.size(), 1u);
  EXPECT_EQ(apps[0].windows, 2);
  EXPECT_NEAR(apps[0].kernel_time_s, 4.0, 1e-12);
  const size_t fp32 = static_cast<size_t>(Index(r.gpu, "FP32"));
  const size_t dram = static_cast<size_t>(Index(r.gpu, "DRAM READ"));
  // (1 s x 0.8 + 3 s x 0.2) / 4 s = 0.35 (max 0.8, mean 0.5); (0.1 + 1.5) / 4 = 0.4.
  EXPECT_NEAR(apps[0].util_frac[fp32], 0.35, kUtilTol);
  EXPECT_NEAR(apps[0].util_frac[dram], 0.40, kUtilTol);
  // The per-workload table (--per-workload) carries the same.
  const Corpus c = r.ToWorkloadCorpus();
  ASSERT_EQ(c.rows(), 1);
  EXPECT_NEAR(c.util_frac(0, static_cast<Eigen::Index>(fp32)), 0.35, kUtilTol);
  EXPECT_NEAR(c.util_frac(0, static_cast<Eigen::Index>(dram)), 0.40, kUtilTol);
}

// One export without the optional DMMA metric: the component stays for every other workload;
// that export's workload counts it 0, flagged metric_absent, named, and left out of training.
TEST(CaptureIntegrity, AnOptionalMetricOneExportLacksTouchesOnlyThatExportsWorkloads) {
  const GpuDescription gpu = H100();
  KernelCounters without = Kernel(gpu, "k_b", Utils(gpu, {{"DMMA", 0.0}}), 1.0);
  const std::string dmma = "sm__inst_executed_pipe_tensor_op_dmma.sum";
  ASSERT_EQ(without.metrics.erase(dmma), 1u);
  const std::string dir = Capture(
      ScratchDir() + "/c", {"kernel,start_us,end_us", "a,1000000,3000000", "b,4000000,6000000"},
      {{"a", {Kernel(gpu, "k_a", Utils(gpu, {{"DMMA", 0.3}}), 1.0)}}, {"b", {without}}});
  const CaptureReport r = IngestCaptures({dir}, gpu, CaptureOptions());
  const int j = Index(r.gpu, "DMMA");
  ASSERT_GE(j, 0) << "DMMA left out for every workload";
  ASSERT_EQ(r.windows.size(), 2u);
  EXPECT_NEAR(r.windows[0].utilisations[static_cast<size_t>(j)], 0.3, kUtilTol);
  EXPECT_EQ(r.windows[0].energy.flags & kFlagMetricAbsent, 0u);
  EXPECT_EQ(r.windows[1].utilisations[static_cast<size_t>(j)], 0.0);
  EXPECT_TRUE(r.windows[1].energy.flags & kFlagMetricAbsent);
  EXPECT_TRUE(Warned(
      r, {"component DMMA", dmma, dir + "/ncu/b.csv", "of b count DMMA as 0", "metric_absent"}));
  const Corpus c = r.ToCorpus();
  EXPECT_EQ(c.flags[1], "metric_absent");
  const TrainingSelection s = SelectTrainingRows(c, /*keep_flagged=*/false);
  EXPECT_EQ(s.left_out, std::vector<int>{1});
  EXPECT_NE(s.message.find("metric_absent: b"), std::string::npos) << s.message;
}

// A negative count in one launch once disappeared into a positive total: refused with its line.
TEST(CaptureIntegrity, ANegativeCountInOneLaunchIsRefusedNamingItsLine) {
  const GpuDescription gpu = H100();
  KernelCounters good = Kernel(gpu, "k", Utils(gpu, {}), 1.0);
  KernelCounters bad = good;
  const std::string metric = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
  ASSERT_TRUE(bad.metrics.count(metric));
  bad.metrics[metric] = -0.5 * good.metrics[metric];  // the sum stays positive
  const int64_t bad_line = 2 + static_cast<int64_t>(good.metrics.size());
  const std::string dir = Capture(
      ScratchDir() + "/c", {"kernel,start_us,end_us", "w,1000000,3000000"}, {{"w", {good, bad}}});
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu, CaptureOptions()); }, bad_line,
                            {dir + "/ncu/w.csv", metric, "negative value", "launch ID 1"});
  // The separate-dump way (--counters) sums and averages launches through the same code.
  testing::ExpectInputError([&] { ReadCounters(dir + "/ncu/w.csv"); }, bad_line,
                            {metric, "negative value"});
}

// A launch whose time base is 0 (the other launch's time carried its counts): refused.
TEST(CaptureIntegrity, ALaunchWithAZeroTimeBaseIsRefusedNamingItsLine) {
  const GpuDescription gpu = H100();
  KernelCounters good = Kernel(gpu, "k", Utils(gpu, {}), 1.0);
  KernelCounters zero = good;
  zero.metrics[gpu.active_cycles_metric] = 0.0;
  const int64_t zero_line = 2 + static_cast<int64_t>(good.metrics.size());
  const std::string dir = Capture(
      ScratchDir() + "/c", {"kernel,start_us,end_us", "w,1000000,3000000"}, {{"w", {good, zero}}});
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu, CaptureOptions()); }, zero_line,
                            {dir + "/ncu/w.csv", gpu.active_cycles_metric, "time base is 0"});
}

// An idle window over a benchmark's window measures the benchmark: flagged overlap, named.
TEST(CaptureIntegrity, AnIdleWindowOverABenchmarkIsFlaggedAndNamed) {
  const GpuDescription gpu = H100();
  const std::string dir =
      Capture(ScratchDir() + "/c", {"kernel,start_us,end_us", "w,4000000,6000000"},
              {{"w", {Kernel(gpu, "k", Utils(gpu, {}), 1.0)}}});
  WriteFile(dir + "/idle_windows.csv",
            "kernel,start_us,end_us\nidle_before,1000000,3000000\nidle_over,5000000,8000000\n");
  const CaptureReport r = IngestCaptures({dir}, gpu, CaptureOptions());
  ASSERT_EQ(r.windows.size(), 3u);
  EXPECT_EQ(r.windows[1].workload, "idle_before");
  EXPECT_EQ(r.windows[1].energy.flags & kFlagOverlap, 0u);
  EXPECT_EQ(r.windows[2].workload, "idle_over");
  EXPECT_TRUE(r.windows[2].energy.flags & kFlagOverlap);
  EXPECT_TRUE(Warned(r, {dir + "/idle_windows.csv:3: idle window idle_over",
                         dir + "/windows.csv:2 (w", "flagged overlap"}));
}

// One app recorded marked and unmarked under one name: two kinds of window, refused.
TEST(CaptureIntegrity, OneWorkloadsMarkedAndUnmarkedRecordingsAreRefused) {
  const GpuDescription gpu = H100();
  const std::string dir = Capture(ScratchDir() + "/c",
                                  {"kernel,start_us,end_us,run,mark", "app,1000000,3000000,1,step",
                                   "app,4000000,9000000,2,", "other,10000000,12000000,1,"},
                                  {{"app", {Kernel(gpu, "k", Utils(gpu, {}), 1.0)}},
                                   {"other", {Kernel(gpu, "k", Utils(gpu, {}), 1.0)}}});
  testing::ExpectInputError([&] { IngestCaptures({dir}, gpu, CaptureOptions()); }, 3,
                            {dir + "/windows.csv", "mark", "workload 'app'",
                             "line 2 is marked 'step'", "unmarked: the whole run", "--app NAME"});
  // All marked (an application's phases may have marks of their own) or all unmarked, the
  // windows of one name are one workload, as before.
  WriteFile(dir + "/windows.csv",
            "kernel,start_us,end_us,run,mark\napp,1000000,3000000,1,forward\n"
            "app,4000000,9000000,1,backward\nother,10000000,12000000,1,\n"
            "other,13000000,14000000,2,\n");
  EXPECT_EQ(IngestCaptures({dir}, gpu, CaptureOptions()).Workloads().size(), 2u);
}

// An energy counter column in a unit wattcal does not read was skipped without a word.
TEST(CaptureIntegrity, AnEnergyColumnInAnUnknownUnitIsRefusedByName) {
  const std::string log =
      WriteFile(ScratchDir() + "/log.csv",
                "timestamp_us,power_instant_mw,energy_kwh\n0,300000,1\n10000,300000,1\n");
  testing::ExpectInputError(
      [&] {
        PowerLogReader reader(log, PowerLogOptions());
        PowerSample s;
        while (reader.Next(&s)) {
        }
      },
      1, {log, "unknown energy column 'energy_kwh'", "energy_mj"});
}

// An NVML log whose counter refreshes every 100 ms, frozen for 10 s from 3.1 s and then caught
// up, over a board drawing 300 W but 320 W in [5.5, 8) s. Across the freeze the counter reads the
// stretch's mean, 305 W: 4.7% low for the window inside, under the 10% mismatch threshold. Every
// window over the freeze is measured from the instant power and flagged; those clear of it keep
// the counter.
TEST(CaptureIntegrity, AFrozenEnergyCounterIsCaughtWhateverTheErrorItCauses) {
  const std::string dir = ScratchDir();
  auto power_w = [](int64_t t_us) { return t_us >= 5500000 && t_us < 8000000 ? 320 : 300; };
  auto energy_mj = [](int64_t t_us) {  // the integral of power_w from 0, mJ
    const int64_t hot_us = std::clamp<int64_t>(t_us, 5500000, 8000000) - 5500000;
    return (300 * t_us + 20 * hot_us) / 1000;
  };
  std::string log = "timestamp_us,power_instant_mw,energy_mj\n";
  for (int64_t t_us = 0; t_us <= 20000000; t_us += 5000) {
    const int64_t refreshed_us = t_us / 100000 * 100000;  // the counter's last refresh
    const bool frozen = refreshed_us >= 3100000 && refreshed_us < 13100000;
    log += fmt::format("{},{},{}\n", t_us, 1000 * power_w(t_us),
                       energy_mj(frozen ? 3100000 : refreshed_us));
  }
  WriteFile(dir + "/nvml_power.csv", log);
  WriteFile(dir + "/windows.csv",
            "kernel,start_us,end_us\nbefore,1000000,2500000\nacross_start,2800000,4300000\n"
            "inside,6000000,7500000\nacross_end,12500000,14000000\nafter,15000000,16500000\n");
  const KernelEnergyReport r = MeasureKernelEnergiesWithReasons(
      dir + "/nvml_power.csv", PowerLogOptions(), "", PowerLogOptions(), dir + "/windows.csv",
      KernelEnergyOptions());
  ASSERT_EQ(r.power_source, PowerSource::kEnergyCounter);
  ASSERT_EQ(r.windows.size(), 5u);
  for (const WindowEnergy& w : r.windows) {
    SCOPED_TRACE(w.kernel);
    const bool over = w.kernel != "before" && w.kernel != "after";
    EXPECT_EQ((w.flags & kFlagCounterMismatch) != 0, over);
    EXPECT_EQ(w.power_source, over ? "instant_power" : "energy_counter");
    EXPECT_NEAR(w.mean_power_w, w.kernel == "inside" ? 320.0 : 300.0, 1.0);
    if (over) {
      EXPECT_GT(w.counter_freeze.held_s, 9.9);
      EXPECT_GT(w.counter_freeze.to_line, w.counter_freeze.from_line);
    }
  }
  EXPECT_NEAR(r.windows[2].counter_energy_j / r.windows[2].duration_s, 305.0, 1.0);
  EXPECT_NEAR(r.windows[2].counter_freeze.power_w, 305.0, 1.0);
}

// A 1.59 s launch whose power rises from 100 to 300 W 0.3 s in: its energy and duration are the
// whole launch's, its mean power the settled part's (what training reads).
TEST(CaptureIntegrity, ALaunchsEnergyAndDurationAreTheWholeLaunchUnderASettleTime) {
  const std::string dir = ScratchDir();
  std::string log = "timestamp_us,power_instant_mw\n";
  for (int64_t t_us = 500000; t_us <= 3000000; t_us += 10000)
    log += fmt::format("{},{}\n", t_us, t_us <= 1300000 ? 100000 : 300000);
  WriteFile(dir + "/log.csv", log);
  WriteFile(dir + "/windows.csv", "kernel,start_us,end_us\nk,1000000,2590000\n");
  KernelEnergyOptions options;
  options.settle_ms = 300.0;
  const KernelEnergyReport r =
      MeasureKernelEnergies(dir + "/log.csv", PowerLogOptions(), dir + "/windows.csv", options);
  ASSERT_EQ(r.windows.size(), 1u);
  const WindowEnergy& w = r.windows[0];
  // Whole: 0.3 s x 100 W + the 10 ms step (2 J) + 1.28 s x 300 W = 416 J over 1.59 s.
  EXPECT_NEAR(w.duration_s, 1.59, 1e-12);
  EXPECT_NEAR(w.start_s, 1.0, 1e-12);
  EXPECT_NEAR(w.energy_j, 416.0, 1e-6);
  // Settled, from 1.3 s: (2 J + 384 J) / 1.29 s.
  EXPECT_NEAR(w.mean_power_w, 386.0 / 1.29, 1e-6);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_NEAR(r.kernels[0].energy_j, 416.0, 1e-6);
  EXPECT_NEAR(r.kernels[0].duration_s, 1.59, 1e-12);
  EXPECT_NEAR(r.kernels[0].mean_power_w, 386.0 / 1.29, 1e-6);
}

}  // namespace
}  // namespace wattcal
