// wattcal-capture's suite (issue 13) without a GPU: the plan (216 benchmarks on 132 SMs covering
// every unit, the tensor families, atomics, the SM, lane and toggle sweeps, the random mixes
// and idle; unique names), which of it a GPU's compute capability runs, the run loop and
// the capture writer driven by a simulated GPU and NVML, and the directory they write
// ingested by build/bin/wattcal-ingest --capture. Tests named CaptureSuiteGpu.* run the real
// wattcal-capture and skip with a message when it was not built or no GPU answers (CTest
// label `gpu`).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "capture_writer.h"
#include "io/corpus_io.h"
#include "nvml_loader.h"
#include "runner.h"
#include "suite_plan.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using namespace capture;

const std::string kH100 = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

TEST(CaptureSuite, DefaultOptionsPassTheirChecks) {
  std::string error;
  EXPECT_TRUE(SuiteOptions().Check(&error)) << error;
  RunOptions run;
  EXPECT_FALSE(run.Check(&error));
  EXPECT_NE(error.find("--out"), std::string::npos) << error;
  run.out_dir = "x";
  EXPECT_TRUE(run.Check(&error)) << error;
  run.gap_ms = -1.0;
  EXPECT_FALSE(run.Check(&error));
  EXPECT_NE(error.find("--gap-ms: -1"), std::string::npos) << error;
  run.gap_ms = 400.0;
  run.lock_clocks_mhz = {1410, 5};
  EXPECT_FALSE(run.Check(&error));
  EXPECT_NE(error.find("--lock-clocks: 5"), std::string::npos) << error;
  SuiteOptions suite;
  suite.sm_count = 0;
  EXPECT_FALSE(suite.Check(&error));
  EXPECT_NE(error.find("sm_count: 0"), std::string::npos) << error;
}

TEST(CaptureSuite, ThePlanCoversUnitsSweepsMixesAndIdleUnderUniqueNames) {
  SuiteOptions options;  // 132 SMs, 60 mixes
  const std::vector<Benchmark> plan = BuildSuitePlan(options);
  EXPECT_GE(plan.size(), 100u);
  std::set<std::string> names;
  std::map<std::string, int> groups;
  std::set<KernelKind> kernels;
  for (const Benchmark& b : plan) {
    EXPECT_TRUE(names.insert(b.name).second) << "duplicate name " << b.name;
    EXPECT_EQ(b.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"), std::string::npos)
        << b.name;
    ++groups[b.group];
    kernels.insert(b.kernel);
    EXPECT_GE(b.blocks, 1) << b.name;
    EXPECT_TRUE(b.threads >= 32 && b.threads <= 1024 && b.threads % 32 == 0) << b.name;
    EXPECT_TRUE(b.lanes >= 1 && b.lanes <= 32) << b.name;
    if (b.kernel == KernelKind::kMix && b.name != "fma_per_dram_000") {
      EXPECT_FALSE(b.mix.Empty()) << b.name;
    }
  }
  for (const char* g : {"idle", "unit", "tensor", "atomic", "occupancy", "fma_per_byte", "unit_mix",
                        "sm_sweep", "lane_sweep", "toggle", "mix"}) {
    EXPECT_GT(groups[g], 0) << g;
  }
  EXPECT_EQ(groups["mix"], options.mixes);
  // Every kernel of kernels.cu is used, each under its own plain name.
  EXPECT_EQ(kernels.size(), AllKernels().size());
  std::set<std::string> kernel_names;
  for (KernelKind k : AllKernels()) {
    EXPECT_TRUE(kernel_names.insert(KernelName(k)).second) << KernelName(k);
    EXPECT_EQ(std::string(KernelName(k)).rfind("k_", 0), 0u) << KernelName(k);
  }
  // One unit per kernel for each unit the issue names.
  for (const char* unit : {"int_add", "int_mul", "fp32_fma", "fp32_add", "fp32_mul", "fp64_fma",
                           "fp16_hfma2", "sfu_sin", "tensor_fp16", "shared_ld", "l1_ld", "l2_ld",
                           "dram_ld", "dram_write", "dram_copy", "idle_sleep"}) {
    EXPECT_TRUE(names.count(unit)) << unit;
  }
  // SM sweep: 1 ... all SMs, one 1024-thread block per SM; lane sweep 1 ... 32.
  std::vector<int64_t> sms;
  std::vector<int> lanes;
  std::set<int64_t> mix_blocks;
  for (const Benchmark& b : plan) {
    if (b.group == "sm_sweep") {
      sms.push_back(b.blocks);
      EXPECT_TRUE(b.one_block_per_sm);
      EXPECT_EQ(b.threads, 1024);
      EXPECT_EQ(b.kernel, KernelKind::kIntAdd);
    }
    if (b.group == "lane_sweep") lanes.push_back(b.lanes);
    if (b.group == "mix") mix_blocks.insert(b.blocks / options.sm_count);
  }
  ASSERT_GE(sms.size(), 8u);
  EXPECT_EQ(sms.front(), 1);
  EXPECT_EQ(sms.back(), options.sm_count);
  EXPECT_TRUE(std::is_sorted(sms.begin(), sms.end()));
  ASSERT_GE(lanes.size(), 6u);
  EXPECT_EQ(lanes.front(), 1);
  EXPECT_EQ(lanes.back(), 32);
  EXPECT_EQ(mix_blocks, (std::set<int64_t>{1, 4, 8}));
}

// Every unit a modern GPU spends power in: each family at full occupancy (its group) and at
// 1 and 2 blocks of 256 per SM (occupancy), with the compute capabilities it needs.
TEST(CaptureSuite, ThePlanCoversTensorFamiliesUnitsAtomicsAndTheToggleSweep) {
  SuiteOptions options;
  const std::vector<Benchmark> plan = BuildSuitePlan(options);
  std::map<std::string, const Benchmark*> by_name;
  for (const Benchmark& b : plan) by_name[b.name] = &b;
  ASSERT_EQ(by_name.size(), plan.size());  // unique names
  struct Family {
    const char* name;
    const char* group;
    const char* kernel;
    int min_cc, max_cc;
  };
  const Family families[] = {
      {"tensor_bf16", "tensor", "k_tensor_bf16", 80, 0},
      {"tensor_tf32", "tensor", "k_tensor_tf32", 80, 0},
      {"tensor_int8", "tensor", "k_tensor_int8", 80, 0},
      {"tensor_fp64", "tensor", "k_tensor_fp64_dmma", 80, 0},
      {"wgmma_fp16", "tensor", "k_wgmma_fp16", 90, 90},
      {"wgmma_bf16", "tensor", "k_wgmma_bf16", 90, 90},
      {"wgmma_fp8", "tensor", "k_wgmma_fp8", 90, 90},
      {"fp64_mul", "unit", "k_fp64_mul", 70, 0},
      {"int_mad", "unit", "k_int_mad", 70, 0},
      {"sfu_ex2", "unit", "k_sfu_ex2", 70, 0},
      {"sfu_rsqrt", "unit", "k_sfu_rsqrt", 70, 0},
      {"convert", "unit", "k_convert", 70, 0},
      {"l2_write", "unit", "k_l2_write", 70, 0},
      {"shared_conflict", "unit", "k_shared_conflict", 70, 0},
      {"atomic_global", "atomic", "k_atomic_global", 70, 0},
      {"atomic_shared", "atomic", "k_atomic_shared", 70, 0},
  };
  for (const Family& f : families) {
    for (const auto& [suffix, group, blocks_per_sm] :
         {std::tuple<std::string, std::string, int>{"", f.group, 8},
          {"_occ_b1", "occupancy", 1},
          {"_occ_b2", "occupancy", 2}}) {
      const std::string name = f.name + suffix;
      ASSERT_TRUE(by_name.count(name)) << name;
      const Benchmark& b = *by_name[name];
      EXPECT_EQ(b.group, group) << name;
      EXPECT_EQ(KernelName(b.kernel), std::string(f.kernel)) << name;
      EXPECT_EQ(b.blocks, options.sm_count * blocks_per_sm) << name;
      EXPECT_EQ(b.threads, 256) << name;
      EXPECT_EQ(b.min_cc, f.min_cc) << name;
      EXPECT_EQ(b.max_cc, f.max_cc) << name;
      EXPECT_EQ(b.toggle_pct, -1) << name;
    }
  }
  // The toggle sweep: three kernels x four toggle rates x three occupancies.
  int toggles = 0;
  for (const auto& [name, kernel] :
       {std::pair<std::string, std::string>{"dram_write", "k_dram_write"},
        {"dram_ld", "k_dram_ld"},
        {"fp32_fma", "k_fp32_fma"}}) {
    for (int pct : {0, 25, 50, 100}) {
      for (const auto& [suffix, blocks_per_sm] :
           {std::pair<std::string, int>{"", 8}, {"_b1", 1}, {"_b2", 2}}) {
        const std::string n = fmt::format("toggle_{}_{:03d}{}", name, pct, suffix);
        ASSERT_TRUE(by_name.count(n)) << n;
        const Benchmark& b = *by_name[n];
        EXPECT_EQ(b.group, "toggle") << n;
        EXPECT_EQ(KernelName(b.kernel), kernel) << n;
        EXPECT_EQ(b.toggle_pct, pct) << n;
        EXPECT_EQ(b.blocks, options.sm_count * blocks_per_sm) << n;
        ++toggles;
      }
    }
  }
  int toggle_group = 0;
  for (const Benchmark& b : plan) {
    toggle_group += b.group == "toggle";
    if (b.group != "toggle") {
      EXPECT_EQ(b.toggle_pct, -1) << b.name;
    }
  }
  EXPECT_EQ(toggle_group, toggles);
  EXPECT_EQ(toggles, 36);
  // The whole plan on a 132-SM GPU: 132 before the tensor, atomic and toggle groups; FP16 on the
  // FMA pipe and eight tensor families at five intensities with issue 41.
  EXPECT_EQ(plan.size(), 132u + 16u * 3u + 36u + 1u + 8u * 5u);
  // --list names every family and says what each needs.
  const std::string listing = PlanListing(plan);
  EXPECT_EQ(Lines(listing)[0],
            "name,group,kernel,blocks,threads,lanes,fma,int,fp64,sfu,shared,l2,dram,mma,min_cc,max_"
            "cc,toggle_pct,one_block_per_sm,window_s");
  EXPECT_NE(
      listing.find("\nwgmma_fp8,tensor,k_wgmma_fp8,1056,256,32,0,0,0,0,0,0,0,0,90,90,-1,0,3.3\n"),
      std::string::npos);
  EXPECT_NE(
      listing.find(
          "\ntoggle_dram_ld_050_b2,toggle,k_dram_ld,264,256,32,0,0,0,0,0,0,0,0,70,0,50,0,0\n"),
      std::string::npos);
}

// The GPU's compute capability decides, in host code, which benchmarks run: sm_80's mma.sync
// families need 8.0, the wgmma kernels (sm_90a) run on 9.0 only; each left out with a reason.
TEST(CaptureSuite, PlanForGpuLeavesOutWhatTheComputeCapabilityCannotRun) {
  const std::vector<Benchmark> plan = BuildSuitePlan(SuiteOptions());
  auto names_of = [](const std::vector<SkippedBenchmark>& skipped) {
    std::set<std::string> names;
    for (const SkippedBenchmark& s : skipped) names.insert(s.name);
    return names;
  };
  auto family = [](const std::vector<std::string>& bases) {
    std::set<std::string> names;
    for (const std::string& b : bases) {
      for (const char* suffix :
           {"", "_occ_b1", "_occ_b2", "_sm1of8", "_sm2of8", "_sm3of8", "_sm4of8", "_sm5of8"}) {
        names.insert(b + suffix);
      }
    }
    return names;
  };
  const std::set<std::string> wgmma = family({"wgmma_fp16", "wgmma_bf16", "wgmma_fp8"});
  std::set<std::string> sm80_and_wgmma =
      family({"tensor_bf16", "tensor_tf32", "tensor_int8", "tensor_fp64"});
  sm80_and_wgmma.insert(wgmma.begin(), wgmma.end());

  std::vector<SkippedBenchmark> skipped;
  // Turing (7.5): no DMMA, IMMA, BF16, TF32 or wgmma.
  std::vector<Benchmark> runs = PlanForGpu(plan, 75, &skipped);
  EXPECT_EQ(names_of(skipped), sm80_and_wgmma);
  EXPECT_EQ(runs.size() + skipped.size(), plan.size());
  for (const SkippedBenchmark& s : skipped) {
    EXPECT_NE(s.reason.find("this GPU is 7.5"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find(wgmma.count(s.name) ? "9.0 or newer" : "8.0 or newer"),
              std::string::npos)
        << s.reason;
  }
  const std::string listing = SkippedListing(skipped);
  EXPECT_EQ(Lines(listing).size(), 7u) << listing;  // one line per kernel (its reason)
  EXPECT_NE(
      listing.find(
          "not run: tensor_fp64, tensor_fp64_occ_b1, tensor_fp64_occ_b2, tensor_fp64_sm1of8, "
          "tensor_fp64_sm2of8, tensor_fp64_sm3of8, tensor_fp64_sm4of8, tensor_fp64_sm5of8: "
          "k_tensor_fp64_dmma needs compute capability 8.0 or newer (mma.sync f64, DMMA); this "
          "GPU is 7.5\n"),
      std::string::npos)
      << listing;
  // The order of the plan is kept.
  EXPECT_EQ(runs[1].name, "int_add");
  // Ampere and Ada (8.x): only the wgmma kernels are left out.
  for (int cc : {80, 86, 89}) {
    runs = PlanForGpu(plan, cc, &skipped);
    EXPECT_EQ(names_of(skipped), wgmma) << cc;
    EXPECT_EQ(runs.size(), plan.size() - 24) << cc;
  }
  EXPECT_NE(skipped[0].reason.find(
                "k_wgmma_fp16 needs compute capability 9.0 or newer (wgmma.mma_async, sm_90a: "
                "Hopper); this GPU is 8.9"),
            std::string::npos)
      << skipped[0].reason;
  // Hopper (9.0): everything.
  runs = PlanForGpu(plan, 90, &skipped);
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(runs.size(), plan.size());
  EXPECT_EQ(SkippedListing(skipped), "");
  // Newer than Hopper: sm_90a code does not run there.
  runs = PlanForGpu(plan, 100, &skipped);
  EXPECT_EQ(names_of(skipped), wgmma);
  EXPECT_NE(skipped[0].reason.find("runs only up to compute capability 9.0"), std::string::npos)
      << skipped[0].reason;
  EXPECT_NE(skipped[0].reason.find("this GPU is 10.0"), std::string::npos) << skipped[0].reason;
  // What only the device knows (code a build lacks for this GPU) is added to the same list.
  runs = PlanForGpu(plan, 90, &skipped, [](const Benchmark& b) {
    return b.kernel == KernelKind::kWgmmaFp8 ? std::string("k_wgmma_fp8 has no code for this GPU")
                                             : std::string();
  });
  EXPECT_EQ(names_of(skipped), family({"wgmma_fp8"}));
  EXPECT_EQ(skipped[0].reason, "k_wgmma_fp8 has no code for this GPU");
  std::string reason;
  EXPECT_TRUE(RunsOn(plan[1], 75, &reason));
  // --only selects from the whole plan; the GPU's filter comes after.
  std::vector<Benchmark> selected;
  ASSERT_TRUE(SelectBenchmarks(plan, "tensor_.*", &selected, &reason)) << reason;
  runs = PlanForGpu(selected, 75, &skipped);
  EXPECT_EQ(runs.size(), 8u);  // tensor_fp16, its two occupancies and its five intensities
  EXPECT_EQ(skipped.size(), 32u);
}

TEST(CaptureSuite, MixesFollowTheSeedAndTheGridFollowsTheSmCount) {
  SuiteOptions a, b;
  b.seed = 2;
  const std::vector<Benchmark> pa = BuildSuitePlan(a), pa2 = BuildSuitePlan(a),
                               pb = BuildSuitePlan(b);
  ASSERT_EQ(pa.size(), pb.size());
  EXPECT_EQ(PlanListing(pa), PlanListing(pa2));
  EXPECT_NE(PlanListing(pa), PlanListing(pb));
  SuiteOptions v100;
  v100.sm_count = 80;
  const std::vector<Benchmark> pv = BuildSuitePlan(v100);
  EXPECT_EQ(pv[1].blocks, 80 * 8);
  EXPECT_EQ(pv[1].name, "int_add");
  bool has_80 = false;
  for (const Benchmark& x : pv) has_80 = has_80 || x.name == "sm_sweep_int_add_080";
  EXPECT_TRUE(has_80);
}

TEST(CaptureSuite, OnlySelectsByNamesOrByRegex) {
  const std::vector<Benchmark> plan = BuildSuitePlan(SuiteOptions());
  std::vector<Benchmark> s;
  std::string error;
  ASSERT_TRUE(SelectBenchmarks(plan, "fp32_fma,int_add", &s, &error)) << error;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "int_add");  // plan order
  ASSERT_TRUE(SelectBenchmarks(plan, "lane_sweep_.*", &s, &error)) << error;
  EXPECT_EQ(s.size(), 10u);
  ASSERT_TRUE(SelectBenchmarks(plan, "", &s, &error));
  EXPECT_EQ(s.size(), plan.size());
  EXPECT_FALSE(SelectBenchmarks(plan, "nothing_like_this", &s, &error));
  EXPECT_NE(error.find("selects no benchmark"), std::string::npos) << error;
  EXPECT_FALSE(SelectBenchmarks(plan, "(", &s, &error));
  EXPECT_NE(error.find("--only"), std::string::npos) << error;
}

TEST(CaptureSuite, IterationCounts) {
  EXPECT_EQ(CalibratedIterations(100, 2.0, 25.0), 1250);
  EXPECT_EQ(CalibratedIterations(1, 100.0, 25.0), 1);  // never below one
  EXPECT_EQ(CalibratedIterations(7, 0.0, 25.0), 7);    // an unusable probe keeps its count
  EXPECT_EQ(ProfileIterations(24000, 12), 2000);
  EXPECT_EQ(ProfileIterations(5, 12), 1);
}

TEST(CaptureSuite, ProfilePlanRoundTripsAndBadLinesNameTheirLine) {
  const std::string dir = testing::ScratchDir();
  const std::vector<ProfileEntry> entries = {{"int_add", 565},
                                             {"mix001_f1_i0_d0_s0_h0_l0_m1_t0_b4", 3}};
  testing::WriteFile(dir + "/plan.csv", ProfilePlanCsv(entries));
  const std::vector<ProfileEntry> back = ReadProfilePlan(dir + "/plan.csv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].name, entries[1].name);
  EXPECT_EQ(back[0].iters, 565);
  testing::WriteFile(dir + "/bad.csv", "name,iters\nint_add,0\n");
  try {
    ReadProfilePlan(dir + "/bad.csv");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2: iters"), std::string::npos) << e.what();
  }
}

TEST(CaptureSuite, MetricsAreTheDescriptionsOwn) {
  const std::vector<std::string> m = DescriptionMetrics(kH100);
  std::set<std::string> unique(m.begin(), m.end());
  EXPECT_EQ(unique.size(), m.size());  // FP32 lists FFMA twice: asked for once
  EXPECT_TRUE(unique.count("gpu__time_duration.sum"));
  EXPECT_TRUE(unique.count("sm__cycles_elapsed.avg"));
  EXPECT_TRUE(unique.count("dram__bytes_write.sum"));
  EXPECT_TRUE(unique.count("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"));
  const std::set<std::string> defaults = [] {
    const std::vector<std::string> d = DefaultMetrics();
    return std::set<std::string>(d.begin(), d.end());
  }();
  for (const std::string& x : m)
    EXPECT_TRUE(defaults.count(x)) << x << " is not in the default list";
  const std::vector<std::string> cmd =
      NcuCommand("ncu", {"a.sum", "b.avg"}, {"/bin/wattcal-capture", "--profile-plan", "p"});
  const std::string line = ShellJoin(cmd);
  EXPECT_NE(line.find("'--clock-control' 'none'"), std::string::npos) << line;
  EXPECT_NE(line.find("'--metrics' 'a.sum,b.avg'"), std::string::npos) << line;
  EXPECT_NE(line.find("'--page' 'raw'"), std::string::npos) << line;
  EXPECT_EQ(ShellJoin({"it's"}), "'it'\\''s'");
}

TEST(CaptureSuite, PowerLogColumnsAreThoseTheFirstReadingGave) {
  PowerSample s;
  s.timestamp_us = 1795519843106649;
  s.power_mw = 71158;
  s.energy_mj = 3001646;
  s.sm_clock_mhz = 345;
  s.has_clocks_event_reasons = true;
  s.clocks_event_reasons = 0x4;
  const PowerColumns columns = PowerColumns::Of(s);
  EXPECT_EQ(PowerLogHeader(columns),
            "timestamp_us,power_mw,energy_mj,sm_clock_mhz,clocks_event_reasons\n");
  EXPECT_EQ(PowerLogLine(s, columns), "1795519843106649,71158,3001646,345,0x4\n");
  s.sm_clock_mhz = -1;  // refused later: N/A
  EXPECT_EQ(PowerLogLine(s, columns), "1795519843106649,71158,3001646,N/A,0x4\n");
  EXPECT_EQ(
      PowerLogHeader(),
      "timestamp_us,power_mw,power_instant_mw,energy_mj,sm_clock_mhz,mem_clock_mhz,temperature_c,"
      "clocks_event_reasons,power_limit_mw\n");
}

// The counters run with a stand-in for ncu (a script that prints its arguments the way ncu
// prints its tool lines): the command line, stdout -> ncu_raw.csv, stderr -> ncu_stderr.log.
TEST(CaptureSuite, CountersRunNcuAndKeepItsStdoutAsTheRawPage) {
  const std::string dir = testing::ScratchDir();
  const std::string fake = testing::WriteFile(
      dir + "/ncu", "#!/bin/sh\necho \"==PROF== args: $*\"\necho oops >&2\nexit 0\n");
  fs::permissions(fake, fs::perms::owner_all);
  EXPECT_EQ(FindProgram(fake), fake);
  EXPECT_EQ(FindProgram(dir + "/absent"), "");
  EXPECT_EQ(FindProgram("sh").empty(), false);  // found on the PATH
  std::string error;
  ASSERT_TRUE(RunCounters(fake, {"a.sum", "b.avg"},
                          {"/x/wattcal-capture", "--profile-plan", "p.csv"}, dir, &error))
      << error;
  const std::string raw = testing::ReadFile(dir + "/ncu_raw.csv");
  EXPECT_EQ(raw,
            "==PROF== args: --csv --page raw --clock-control none --target-processes all --metrics "
            "a.sum,b.avg /x/wattcal-capture --profile-plan p.csv\n");
  EXPECT_EQ(testing::ReadFile(dir + "/ncu_stderr.log"), "oops\n");
  testing::WriteFile(fake, "#!/bin/sh\necho partial\nexit 7\n");
  EXPECT_FALSE(RunCounters(fake, {"a.sum"}, {"x"}, dir, &error));
  EXPECT_NE(error.find("exited with status 7"), std::string::npos) << error;
  EXPECT_NE(error.find("ncu_stderr.log"), std::string::npos) << error;
  EXPECT_EQ(LastLineOf(ShellJoin({"printf", "NVIDIA (R) Nsight Compute\\nVersion 2025.3\\n"})),
            "Version 2025.3");
}

TEST(CaptureSuite, MissingNvmlIsAClearError) {
  Nvml nvml;
  std::string error;
  EXPECT_FALSE(nvml.Open("", "", &error, "libnvidia-ml-absent-for-this-test.so.1"));
  EXPECT_FALSE(nvml.is_open());
  EXPECT_NE(error.find("NVML is not available"), std::string::npos) << error;
  EXPECT_NE(error.find("libnvidia-ml-absent-for-this-test.so.1"), std::string::npos) << error;
}

// A simulated GPU: launches take `ms_per_iter` x iters (slept), and the meter draws a power
// that depends on the running benchmark's group (made up but well formed).
class SimulatedGpu : public BenchmarkDevice, public PowerMeter {
 public:
  double TimedLaunch(const Benchmark& b, int64_t iters) override {
    (void)b;
    return 0.001 * static_cast<double>(iters);
  }
  void Launch(const Benchmark& b, int64_t iters) override {
    running_w_ = b.group == "idle"  ? 90.0
                 : b.group == "mix" ? 300.0 + 10.0 * b.mix.fma
                                    : 250.0 + b.blocks % 97;
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(iters, 2000)));
  }
  void Synchronize() override { running_w_ = 72.0; }
  PowerSample Read() override {
    std::lock_guard<std::mutex> lock(mutex_);
    PowerSample s;
    s.timestamp_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const double w = running_w_;
    if (last_us_ > 0) energy_mj_ += w * (s.timestamp_us - last_us_) * 1e-3;
    last_us_ = s.timestamp_us;
    s.power_mw = static_cast<int64_t>(w * 1000.0) - 1500;  // an averaged reading, lagging
    s.power_instant_mw = static_cast<int64_t>(w * 1000.0);
    s.energy_mj = static_cast<int64_t>(energy_mj_);
    const int locked = locked_mhz_;
    s.sm_clock_mhz = locked > 0 ? locked : 1980;
    s.mem_clock_mhz = 2619;
    s.temperature_c = 40;
    s.has_clocks_event_reasons = true;
    s.clocks_event_reasons = w < 80.0 ? 0x1 : 0x0;
    s.power_limit_mw = 700000;
    return s;
  }
  bool LockCoreClock(int mhz, std::string*) override {
    locked_mhz_ = mhz;
    ++locks_;
    return true;
  }
  bool ResetCoreClock(std::string*) override {
    locked_mhz_ = 0;
    ++resets_;
    return true;
  }
  int locks_ = 0, resets_ = 0;

 private:
  std::atomic<double> running_w_{72.0};
  std::atomic<int> locked_mhz_{0};
  std::mutex mutex_;
  int64_t last_us_ = 0;
  double energy_mj_ = 3.0e6;
};

// Nsight Compute's raw page for the profile plan, as ncu prints it (tool lines, header, units
// row, digit grouping), with made-up but well-formed counts of every metric asked for.
std::string SyntheticNcuRaw(const std::vector<Benchmark>& plan,
                            const std::vector<ProfileEntry>& profile,
                            const std::vector<std::string>& metrics) {
  std::map<std::string, const Benchmark*> by_name;
  for (const Benchmark& b : plan) by_name[b.name] = &b;
  auto q = [](const std::string& s) { return "\"" + s + "\""; };
  auto unit = [](const std::string& m) -> std::string {
    if (m.find("time_duration") != std::string::npos) return "ns";
    if (m.find("cycles") != std::string::npos && m.find("per_second") == std::string::npos)
      return "cycle";
    if (m.find("bytes") != std::string::npos) return "byte";
    if (m.find("wavefronts") != std::string::npos) return "";
    if (m.find("pct") != std::string::npos) return "%";
    return "inst";
  };
  std::string s =
      "==WARNING== Note: Running with unmodified GPU clocks.\n==PROF== Connected to process 1 "
      "(wattcal-capture)\n";
  std::string header =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel "
      "Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\"";
  std::string units = "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\"";
  for (const std::string& m : metrics) header += "," + q(m), units += "," + q(unit(m));
  s += header + "\n" + units + "\n";
  int id = 0;
  for (const ProfileEntry& e : profile) {
    const Benchmark& b = *by_name.at(e.name);
    s += fmt::format(
        "\"{}\",\"1\",\"wattcal-capture\",\"127.0.0.1\",\"{}\",\"1\",\"7\",\"({}, 1, 1)\",\"({}, "
        "1, 1)\",\"0\",\"9.0\"",
        id, KernelName(b.kernel), b.threads, b.blocks);
    for (size_t j = 0; j < metrics.size(); ++j) {
      const std::string& m = metrics[j];
      double v = 1.0e3 * (1 + (id * 7 + static_cast<int>(j) * 13) % 50);
      if (m == "gpu__time_duration.sum") v = 2.0e6;
      if (m.find("cycles_elapsed") != std::string::npos ||
          m.find("cycles_active") != std::string::npos)
        v = 3.96e6;
      s += "," + q(fmt::format("{:.0f}", v));
    }
    s += "\n";
    ++id;
  }
  s += "==PROF== Disconnected from process 1\n";
  return s;
}

TEST(CaptureSuite, TheRunWritesACaptureThatIngestsUnchanged) {
  const std::string scratch = testing::ScratchDir();  // (each call empties it)
  const std::string dir = scratch + "/capture";
  const std::vector<Benchmark> plan = BuildSuitePlan(SuiteOptions());
  RunOptions options;
  options.out_dir = dir;
  // 0.02-s windows, and the plan's own (the 3.3-s windows of the benchmarks that reach the power
  // cap) 0.066 s.
  options.seconds = 1.0;
  options.window_scale = 0.02;
  options.gap_ms = 2.0;
  options.sample_ms = 1.0;
  options.launch_ms = 2.0;
  options.idle_s = 0.05;
  SimulatedGpu gpu;
  int progress_lines = 0;
  std::string last_progress;
  const RunResult r = RunPowerCapture(plan, options, gpu, gpu, [&](const std::string& line) {
    ++progress_lines;
    last_progress = line;
  });
  EXPECT_EQ(gpu.locks_, 0);  // clocks are never touched by default
  EXPECT_EQ(progress_lines, static_cast<int>(plan.size()));
  EXPECT_NE(last_progress.find(fmt::format("[{}/{}]", plan.size(), plan.size())), std::string::npos)
      << last_progress;
  EXPECT_NE(last_progress.find("left"), std::string::npos) << last_progress;
  ASSERT_EQ(r.windows.size(), plan.size());
  ASSERT_EQ(r.profile.size(), plan.size());
  ASSERT_EQ(r.idle.size(), 2u);
  for (size_t i = 0; i < plan.size(); ++i) {
    const WindowRecord& w = r.windows[i];
    EXPECT_EQ(w.kernel, plan[i].name);
    EXPECT_GE(w.end_us - w.start_us, 20000) << w.kernel;
    EXPECT_GE(w.launches, 1);
    EXPECT_EQ(w.iters, 2000);  // 2 ms at the simulated 1 us per iteration
    EXPECT_EQ(r.profile[i].iters, 167);
    if (i > 0) {
      EXPECT_GE(w.start_us, r.windows[i - 1].end_us + 2000);  // the idle gap
    }
  }
  // The files, exactly in the documented layout.
  const std::vector<std::string> windows = Lines(testing::ReadFile(dir + "/windows.csv"));
  ASSERT_EQ(windows.size(), plan.size() + 1);
  EXPECT_EQ(windows[0], "kernel,start_us,end_us,launches,iters,blocks,threads,lanes");
  const std::vector<std::string> power = Lines(testing::ReadFile(dir + "/nvml_power.csv"));
  EXPECT_EQ(
      power[0],
      "timestamp_us,power_mw,power_instant_mw,energy_mj,sm_clock_mhz,mem_clock_mhz,temperature_c,"
      "clocks_event_reasons,power_limit_mw");
  EXPECT_GT(power.size(), 1000u);
  EXPECT_EQ(Lines(testing::ReadFile(dir + "/idle_windows.csv"))[0], "kernel,start_us,end_us");
  EXPECT_EQ(ReadProfilePlan(dir + "/profile_plan.csv").size(), plan.size());

  // Counters as ncu would print them for the profile plan, then wattcal-ingest --capture.
  testing::WriteFile(dir + "/ncu_raw.csv",
                     SyntheticNcuRaw(plan, r.profile, DescriptionMetrics(kH100)));
  const std::string out = scratch;
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest", {"--capture", dir, "--gpu", kH100, "--settle-ms", "5", "--tidy",
                         out + "/measured.csv", "--out", out + "/windows.csv"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const Corpus c = ReadCorpus(out + "/measured.csv");
  ASSERT_EQ(c.rows(), static_cast<int>(plan.size()));
  EXPECT_DOUBLE_EQ(c.power_limit_w.value(), 700.0);  // from nvml_power.csv's power_limit_mw
  for (int i = 0; i < c.rows(); ++i) {
    EXPECT_EQ(c.benchmark[i], plan[i].name);
    EXPECT_GT(c.power_w(i), 60.0) << c.benchmark[i];
    EXPECT_LT(c.power_w(i), 700.0) << c.benchmark[i];
    EXPECT_DOUBLE_EQ(c.freq_mhz(i, 0), 1980.0);
  }
  // Both idle windows are measured.
  const std::string measured_windows = testing::ReadFile(out + "/windows.csv");
  EXPECT_NE(measured_windows.find(",idle_before,idle,"), std::string::npos);
  EXPECT_NE(measured_windows.find(",idle_after,idle,"), std::string::npos);
}

TEST(CaptureSuite, LockedClocksAreResetAfterEveryPass) {
  const std::string dir = testing::ScratchDir() + "/capture";
  std::vector<Benchmark> plan;
  std::string error;
  ASSERT_TRUE(SelectBenchmarks(BuildSuitePlan(SuiteOptions()), "int_add,dram_ld", &plan, &error));
  RunOptions options;
  options.out_dir = dir;
  options.seconds = 0.01;
  options.gap_ms = 1.0;
  options.sample_ms = 1.0;
  options.launch_ms = 1.0;
  options.idle_s = 0.01;
  options.lock_clocks_mhz = {1410, 1980};
  SimulatedGpu gpu;
  const RunResult r = RunPowerCapture(plan, options, gpu, gpu, nullptr);
  EXPECT_EQ(gpu.locks_, 2);
  EXPECT_EQ(gpu.resets_, 2);
  ASSERT_EQ(r.windows.size(), 4u);
  EXPECT_EQ(r.windows[2].kernel, "int_add");  // the same names at each clock
  const std::string power = testing::ReadFile(dir + "/nvml_power.csv");
  EXPECT_NE(power.find(",1410,2619,"), std::string::npos);
}

// --- With a GPU (CTest label `gpu`) ----------------------------------------------------------

std::string CaptureBinary() { return std::string(WATTCAL_BIN_DIR) + "/wattcal-capture"; }

// wattcal-capture is always built; its suite's kernels only when CMake found the CUDA toolkit.
constexpr bool kCaptureHasCuda = WATTCAL_CAPTURE_HAS_CUDA != 0;

TEST(CaptureSuiteGpu, ListNeedsNoGpu) {
  ASSERT_TRUE(testing::FileExists(CaptureBinary())) << CaptureBinary() << " was not built";
  const testing::CommandResult r = testing::RunStage("wattcal-capture", {"--list"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(Lines(r.output).size(), 101u);
  EXPECT_NE(r.output.find("sm_sweep_int_add_132"), std::string::npos);
  // Every family, whatever GPU (or none) this machine has.
  for (const char* name : {"tensor_bf16,",
                           "tensor_tf32,",
                           "tensor_int8,",
                           "tensor_fp64,",
                           "wgmma_fp16,",
                           "wgmma_bf16,",
                           "wgmma_fp8,",
                           "fp64_mul,",
                           "int_mad,",
                           "sfu_ex2,",
                           "sfu_rsqrt,",
                           "convert,",
                           "l2_write,",
                           "atomic_global,",
                           "atomic_shared,",
                           "shared_conflict,",
                           "toggle_dram_write_000,",
                           "toggle_dram_ld_025,",
                           "toggle_fp32_fma_100_b2,",
                           "wgmma_fp8_occ_b1,"}) {
    EXPECT_NE(r.output.find(std::string("\n") + name), std::string::npos) << name;
  }
}

TEST(CaptureSuiteGpu, ShortRunOnThisGpuIngests) {
  if (!kCaptureHasCuda) {
    GTEST_SKIP()
        << "wattcal-capture was built without the CUDA toolkit (nvcc not found by CMake, or "
           "-DWATTCAL_CUDA=OFF): it has no suite kernels to run";
  }
  const std::string scratch = testing::ScratchDir();
  const std::string dir = scratch + "/capture";
  const testing::CommandResult r = testing::RunStage(
      "wattcal-capture", {"--out", dir, "--only",
                          "idle_sleep,int_add,fp32_fma,tensor_fp16,dram_ld,sm_sweep_int_add_001",
                          "--seconds", "0.5", "--gap-ms", "100", "--idle-s", "0.5"});
  if (r.exit_code == 2 && (r.output.find("no CUDA GPU answers") != std::string::npos ||
                           r.output.find("NVML is not available") != std::string::npos)) {
    GTEST_SKIP() << "no GPU on this machine (wattcal-capture says: " << r.output << ")";
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(testing::FileExists(dir + "/capture.json"));
  const std::vector<std::string> windows = Lines(testing::ReadFile(dir + "/windows.csv"));
  ASSERT_EQ(windows.size(), 7u);
  // Counters: the real ones when ncu is on the PATH, else synthetic ones for the same plan.
  const testing::CommandResult with_counters = testing::RunStage(
      "wattcal-capture",
      {"--out", dir, "--only",
       "idle_sleep,int_add,fp32_fma,tensor_fp16,dram_ld,sm_sweep_int_add_001", "--seconds", "0.5",
       "--gap-ms", "100", "--idle-s", "0.5", "--counters", "--gpu-description", kH100});
  if (with_counters.exit_code != 0) {
    EXPECT_NE(with_counters.output.find("ncu"), std::string::npos) << with_counters.output;
    std::vector<Benchmark> plan;
    std::string error;
    SuiteOptions suite;
    suite.sm_count =
        nlohmann::json::parse(testing::ReadFile(dir + "/capture.json"))["gpu"]["sm_count"]
            .get<int>();
    ASSERT_TRUE(SelectBenchmarks(BuildSuitePlan(suite), "", &plan, &error));
    testing::WriteFile(dir + "/ncu_raw.csv",
                       SyntheticNcuRaw(plan, ReadProfilePlan(dir + "/profile_plan.csv"),
                                       DescriptionMetrics(kH100)));
  }
  const std::string out = scratch;
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest", {"--capture", dir, "--gpu", kH100, "--tidy", out + "/measured.csv"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  EXPECT_EQ(ReadCorpus(out + "/measured.csv").rows(), 6);
}

}  // namespace
}  // namespace wattcal
