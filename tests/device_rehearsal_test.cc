// The GPU machine's prepared script, scripts/device_capture.sh, rehearsed here end to end on the
// simulated device (WATTCAL_SIMULATED_GPU), the stand-in NVML (tests/fake_nvml.c) and the stand-in
// ncu (tests/fake_ncu.py): the same binary, plan, run loop, sampler, writer, counters run and
// packing as on the GPU, so that the minutes of a lent GPU are not spent finding a typo. And the
// binary it carries needs no library a bare GPU machine lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "runner.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ShellQuote;

// The environment of a rehearsal: everything simulated, `ncu` on the PATH the stand-in.
std::string RehearsalEnvironment(const std::string& dir) {
  fs::create_directories(dir + "/bin");
  fs::create_symlink(std::string(WATTCAL_SOURCE_DIR) + "/tests/fake_ncu.py", dir + "/bin/ncu");
  return "PATH=" + ShellQuote(dir + "/bin") +
         ":\"$PATH\" WATTCAL_SIMULATED_GPU=1 WATTCAL_NVML_LIBRARY=" +
         ShellQuote(WATTCAL_FAKE_NVML) + " FAKE_NVML_LOAD_FILE=" + ShellQuote(dir + "/load") +
         " FAKE_NVML_NAME='NVIDIA H100 80GB HBM3' WATTCAL_CAPTURE=" +
         ShellQuote(std::string(WATTCAL_BIN_DIR) + "/wattcal-capture") +
         " FAKE_NCU_LACKS=sm__inst_executed_pipe_tensor_op_dmma POWER_BUDGET_S=4 "
         "WATTCAL_CAPTURE_ARGS=\"--only '^(idle_sleep|int_add|fp32_fma|dram_ld)\\$' --idle-s 1\" ";
}

TEST(DeviceRehearsal, TheGpuScriptRunsOnTheSimulatedDeviceAndItsCaptureIngests) {
  const std::string dir = testing::ScratchDir();
  const std::string script = std::string(WATTCAL_SOURCE_DIR) + "/scripts/device_capture.sh";
  const std::string env = RehearsalEnvironment(dir);
  const testing::CommandResult r =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 benchmarks x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("WATTCAL_SIMULATED_GPU is set"), std::string::npos) << r.output;
  // A metric this chip's ncu does not list (here the FP64 tensor pipe's) is left out before the
  // run, named, instead of failing the counters run after the power run.
  EXPECT_NE(r.output.find(
                "sm__inst_executed_pipe_tensor_op_dmma.sum: ncu does not list it for this chip"),
            std::string::npos)
      << r.output;
  EXPECT_NE(testing::ReadFile(dir + "/out/suite/capture.json")
                .find("\"metrics_left_out\": [\n      \"sm__inst_"),
            std::string::npos);
  for (const char* f :
       {"suite.tar.gz", "device_capture.log", "env/ldd.txt", "env/ncu_version.txt",
        "suite/windows.csv", "suite/nvml_power.csv", "suite/ncu_raw.csv", "suite/capture.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
  }
  // The carried binary: the C runtime and nothing of the fitting stack (Ceres, glog, SuiteSparse,
  // BLAS), libcsv, OpenSSL or Boost, none of which a bare GPU machine has.
  const std::string ldd = testing::ReadFile(dir + "/out/env/ldd.txt");
  for (const char* lib : {"libceres", "libglog", "libcholmod", "blas", "libcsv", "libcrypto",
                          "libboost", "libstdc++"}) {
    EXPECT_EQ(ldd.find(lib), std::string::npos) << lib << " in\n" << ldd;
  }
  // The packed capture is what comes back from the GPU machine: unpacked, it ingests.
  fs::create_directories(dir + "/back");
  ASSERT_EQ(testing::RunShell("tar xzf " + ShellQuote(dir + "/out/suite.tar.gz") + " -C " +
                              ShellQuote(dir + "/back"))
                .exit_code,
            0);
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest", {"--capture", dir + "/back/suite", "--gpu",
                         std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json",
                         "--tidy", dir + "/measured.csv"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const std::string tidy = testing::ReadFile(dir + "/measured.csv");
  EXPECT_NE(ingest.output.find("DMMA"), std::string::npos)
      << ingest.output;  // its component left out
  EXPECT_EQ(tidy.find("core:DMMA"), std::string::npos);
  EXPECT_NE(tidy.find("core:TENSOR INT"), std::string::npos);
  for (const char* name : {"\nidle_sleep,", "\nint_add,", "\nfp32_fma,", "\ndram_ld,"}) {
    EXPECT_NE(tidy.find(name), std::string::npos) << name << " in\n" << tidy;
  }
  // An earlier capture is never overwritten: the same OUTDIR again is refused.
  const testing::CommandResult again =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/out"));
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("is not an empty directory"), std::string::npos) << again.output;
}

TEST(DeviceRehearsal, TheSecondSuitesScriptPacksPowerFieldsAndCountersThatIngestBothWays) {
  // scripts/device_suite2.sh (issue 41), on a subset of the suite and a tenth of its windows: one
  // capped benchmark with its own window, FP16 on each pipe, tensor intensities (wgmma among them).
  const std::string dir = testing::ScratchDir();
  const std::string script = std::string(WATTCAL_SOURCE_DIR) + "/scripts/device_suite2.sh";
  const std::string env =
      RehearsalEnvironment(dir) + "WORKDIR=" + ShellQuote(dir + "/work") +
      " WATTCAL_CAPTURE_ARGS=\"--only '^(idle_sleep|fp16_hfma2|fp16_hfma2_fma|tensor_fp16|"
      "tensor_fp16_sm[15]of8|wgmma_fp16_sm4of8)\\$' --idle-s 0.5 --window-scale 0.1\" ";
  const testing::CommandResult r =
      testing::RunShell(env + ShellQuote(script) + " h100 " + ShellQuote(dir + "/out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("plan: 7 benchmarks (1 with their own window)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("windows 7 of 7 planned, profiled launches 7"), std::string::npos)
      << r.output;
  // Two files come back: the packed run and the log.
  std::vector<std::string> back;
  for (const auto& e : fs::directory_iterator(dir + "/out")) back.push_back(e.path().filename());
  std::sort(back.begin(), back.end());
  EXPECT_EQ(back, (std::vector<std::string>{"device_suite2.log", "suite2_h100.tar.gz"}));
  fs::create_directories(dir + "/back");
  ASSERT_EQ(testing::RunShell("tar xzf " + ShellQuote(dir + "/out/suite2_h100.tar.gz") + " -C " +
                              ShellQuote(dir + "/back"))
                .exit_code,
            0);
  const std::string cap = dir + "/back/suite2";
  for (const char* f : {"/windows.csv", "/nvml_power.csv", "/gpm_fields.csv", "/ncu_raw.csv",
                        "/capture.json", "/README.md", "/../env/suite2/plan.csv",
                        "/../env/suite2/ldd.txt", "/../logs/device_suite2.log"}) {
    EXPECT_TRUE(fs::exists(cap + f)) << f;
  }
  const std::string readme = testing::ReadFile(cap + "/README.md");
  for (const char* s : {"| GPU | NVIDIA H100 80GB HBM3 |", "| UUID | GPU-",
                        "7 windows of 7 planned", "exit status 0", "--fields gpm"}) {
    EXPECT_NE(readme.find(s), std::string::npos) << s << " in\n" << readme;
  }
  // The capped benchmark ran its own window: ten times the others' (3.3 s and 0.6 s, scaled).
  const std::string windows = testing::ReadFile(cap + "/windows.csv");
  auto seconds_of = [&](const std::string& name) {
    const size_t at = windows.find("\n" + name + ",");
    if (at == std::string::npos) return -1.0;
    long long start = 0, end = 0;
    std::sscanf(windows.c_str() + at + name.size() + 2, "%lld,%lld", &start, &end);
    return (end - start) * 1e-6;
  };
  EXPECT_NEAR(seconds_of("tensor_fp16"), 0.33, 0.05) << windows;
  EXPECT_NEAR(seconds_of("tensor_fp16_sm1of8"), 0.06, 0.03) << windows;
  // One pass trains both models: the ncu description and the GPM field set read the same capture.
  for (const char* desc : {"h100_sxm.json", "fields/h100_sxm_gpm.json"}) {
    const testing::CommandResult ingest = testing::RunStage(
        "wattcal-ingest", {"--capture", cap, "--gpu",
                           std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/" + desc,
                           "--tidy", dir + "/measured.csv"});
    ASSERT_EQ(ingest.exit_code, 0) << desc << ": " << ingest.output;
    const std::string tidy = testing::ReadFile(dir + "/measured.csv");
    for (const char* name : {"\ntensor_fp16,", "\nfp16_hfma2_fma,", "\nwgmma_fp16_sm4of8,"}) {
      EXPECT_NE(tidy.find(name), std::string::npos) << desc << ": " << name;
    }
  }
  // Another GPU than the one named: the capture's own name says so, exit 3, still packed.
  const testing::CommandResult wrong = testing::RunShell(
      env + "FAKE_NVML_NAME='NVIDIA H200' WORKDIR=" + ShellQuote(dir + "/work2") +
      " WATTCAL_CAPTURE_ARGS='--only idle_sleep --idle-s 0.2 --window-scale 0.1' " +
      ShellQuote(script) + " h100 " + ShellQuote(dir + "/out2"));
  EXPECT_EQ(wrong.exit_code, 3) << wrong.output;
  EXPECT_NE(wrong.output.find("the capture's GPU is 'NVIDIA H200', not an H100"), std::string::npos)
      << wrong.output;
  EXPECT_TRUE(fs::exists(dir + "/out2/suite2_h100.tar.gz"));
  testing::ExpectRefused(
      testing::RunShell(env + ShellQuote(script) + " a100 " + ShellQuote(dir + "/out3")), 1,
      {"the GPU is h100 or h200, not 'a100'"}, {dir + "/out3"});
}

TEST(DeviceRehearsal, CaptureRefusesAnSmCountOrSeedOutOfRange) {
  // Both were once taken silently: --sm-count 0 or -5 as 132, --seed -1 as 2^64 - 1.
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--sm-count", "0"},
                                             {"--sm-count", "-5"},
                                             {"--seed", "-1"},
                                             {"--seed", "18446744073709551616"}}) {
    std::vector<std::string> args = {"--list"};
    args.insert(args.end(), bad.begin(), bad.end());
    const testing::CommandResult r = testing::RunStage("wattcal-capture", args);
    EXPECT_EQ(r.exit_code, 1) << bad[0] << " " << bad[1] << ": " << r.output;
    EXPECT_NE(r.output.find(bad[0] + ":"), std::string::npos) << r.output;
  }
  EXPECT_EQ(testing::RunStage("wattcal-capture",
                              {"--list", "--sm-count", "1", "--seed", "18446744073709551615"})
                .exit_code,
            0);
}

TEST(DeviceRehearsal, MetricsAreCheckedAgainstNcusListOnlyWhenThereIsOne) {
  const std::string ncu = std::string(WATTCAL_SOURCE_DIR) + "/tests/fake_ncu.py";
  const std::vector<std::string> metrics = {"gpu__time_duration.sum", "sm__not_a_metric.sum",
                                            "sm__cycles_active.avg"};
  std::string note;
  EXPECT_EQ(capture::MetricsTheChipLacks(ncu, "gh100", metrics, &note),
            std::vector<std::string>{"sm__not_a_metric.sum"});
  EXPECT_NE(note.find("3 metrics checked"), std::string::npos) << note;
  // No list (a chip ncu does not know, ncu failing): nothing is left out, and the note says so.
  EXPECT_TRUE(capture::MetricsTheChipLacks(ncu, "", metrics, &note).empty());
  EXPECT_NE(note.find("not checked"), std::string::npos) << note;
  setenv("FAKE_NCU_QUERY_FAILS", "1", 1);
  EXPECT_TRUE(capture::MetricsTheChipLacks(ncu, "gh100", metrics, &note).empty());
  unsetenv("FAKE_NCU_QUERY_FAILS");
  EXPECT_NE(note.find("gave no metric list"), std::string::npos) << note;
  EXPECT_EQ(capture::NcuChip(90), "gh100");
  EXPECT_EQ(capture::NcuChip(80), "ga100");
  EXPECT_EQ(capture::NcuChip(120), "");
}

TEST(DeviceRehearsal, TheApplicationsScriptRecordsAndTheCapturePredicts) {
  // scripts/device_apps.sh with the stand-in program (the real applications need PyTorch and a
  // GPU): two applications, each its runs, its marked windows and its counters run.
  const std::string dir = testing::ScratchDir();
  const std::string script = std::string(WATTCAL_SOURCE_DIR) + "/scripts/device_apps.sh";
  const std::string env = RehearsalEnvironment(dir) + "APP_SECONDS=0.5 APP_PROGRAM=" +
                          ShellQuote(testing::Python3() + " " + std::string(WATTCAL_SOURCE_DIR) +
                                     "/tests/stand_in_app.py") +
                          " ";
  const testing::CommandResult r =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 applications x 2 runs"), std::string::npos) << r.output;
  for (const char* f :
       {"apps.tar.gz", "device_apps.log", "apps/windows.csv", "apps/nvml_power.csv",
        "apps/ncu/stand_in_a.csv", "apps/ncu/stand_in_b.csv", "apps/capture.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
  }
  const std::string windows = testing::ReadFile(dir + "/out/apps/windows.csv");
  EXPECT_EQ(std::count(windows.begin(), windows.end(), '\n'), 5)
      << windows;  // header + 2 x 2 windows
  // The capture is read as applications: ingested per workload, one row each.
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest", {"--capture", dir + "/out/apps", "--per-workload", "--gpu",
                         std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json",
                         "--tidy", dir + "/apps.csv"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const std::string rows = testing::ReadFile(dir + "/apps.csv");
  EXPECT_NE(rows.find("stand_in_a"), std::string::npos) << rows;
  EXPECT_NE(rows.find("stand_in_b"), std::string::npos) << rows;
  // A non-empty OUTDIR is refused, as the suite's script does.
  EXPECT_EQ(testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/out")).exit_code,
            1);
}

TEST(DeviceRehearsal, TheCampaignRunsBothPhasesInItsLimitAndResumes) {
  // scripts/device_campaign.sh, the one command a lent GPU machine ran (2026-11-27): the suite,
  // then the applications, each phase packed as it ends; run again on the same WORKDIR, it does
  // not run a finished suite or a recorded application again.
  const std::string dir = testing::ScratchDir();
  const std::string script = std::string(WATTCAL_SOURCE_DIR) + "/scripts/device_campaign.sh";
  const std::string env = RehearsalEnvironment(dir) +
                          "APPS_RESERVE_S=30 APP_MIN_S=5 APP_SECONDS=0.5 APP_PROGRAM=" +
                          ShellQuote(testing::Python3() + " " + std::string(WATTCAL_SOURCE_DIR) +
                                     "/tests/stand_in_app.py") +
                          " ";
  const testing::CommandResult r =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/work") + " " +
                        ShellQuote(dir + "/out") + " 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("suite: exit status 0 (with counters)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recorded: stand_in_a stand_in_b"), std::string::npos) << r.output;
  for (const char* f : {"suite_run.tar.gz", "apps_run.tar.gz", "campaign.log"}) {
    EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
  }
  const testing::CommandResult again =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/work") + " " +
                        ShellQuote(dir + "/out2") + " 120");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("suite: finished in an earlier call"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("stand_in_a: recorded already"), std::string::npos) << again.output;
  EXPECT_TRUE(fs::exists(dir + "/out2/suite_run.tar.gz"));
  // A limit too short to be one is refused before anything runs.
  const testing::CommandResult short_limit =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/w3") + " " +
                        ShellQuote(dir + "/o3") + " 5");
  testing::ExpectRefused(short_limit, 1, {"SECONDS must be a whole number of at least 60, not '5'"},
                         {dir + "/o3"});
}

TEST(DeviceRehearsal, WhenNcuFailsTheApplicationsAreRecordedPowerOnly) {
  // On a machine where ncu cannot load its library (seen on gVisor H200 machines), the
  // applications are still worth their power: the first is recorded again without counters and
  // the rest follow.
  const std::string dir = testing::ScratchDir();
  const std::string bad_ncu = testing::WriteFile(dir + "/bad_ncu",
                                                 "#!/bin/sh\necho '==ERROR== Failed to initialize "
                                                 "the profiler: LibraryNotLoaded' >&2\nexit 1\n");
  fs::permissions(bad_ncu, fs::perms::owner_all);
  const std::string script = std::string(WATTCAL_SOURCE_DIR) + "/scripts/device_apps.sh";
  const std::string env = RehearsalEnvironment(dir) + "NCU=" + ShellQuote(bad_ncu) +
                          " REPEAT=1 APP_SECONDS=0.5 APP_PROGRAM=" +
                          ShellQuote(testing::Python3() + " " + std::string(WATTCAL_SOURCE_DIR) +
                                     "/tests/stand_in_app.py") +
                          " ";
  const testing::CommandResult r =
      testing::RunShell(env + ShellQuote(script) + " " + ShellQuote(dir + "/out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("stand_in_a: ncu failed (see env/stand_in_a.log); power only from here on"),
      std::string::npos)
      << r.output;
  const std::string windows = testing::ReadFile(dir + "/out/apps/windows.csv");
  EXPECT_NE(windows.find("\nstand_in_a,"), std::string::npos) << windows;
  EXPECT_NE(windows.find("\nstand_in_b,"), std::string::npos) << windows;
  EXPECT_FALSE(fs::exists(dir + "/out/apps/ncu/stand_in_a.csv"));
}

}  // namespace
}  // namespace wattcal
