// Components added for newer paths (ACTIVE SM, TENSOR INT, DMMA in the GH100 descriptions):
// on the existing H100 capture the old components' utilisations are unchanged, a component
// marked optional whose metric an export lacks is left out with a warning naming it (the
// export still ingests), a required metric that is absent is still refused, and a model
// trained without an optional component ports to a GPU whose description has it.
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/capture.h"
#include "ingest/kernel_energy.h"
#include "io/gpu_description.h"
#include "port/gpu_port.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;

const std::string kGpus = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/";

std::string H100(const std::string& folder) { return testing::Dataset("h100_capture/" + folder); }

int Index(const GpuDescription& gpu, const std::string& name) {
  for (size_t i = 0; i < gpu.components.size(); ++i) {
    if (gpu.components[i].component == name) return static_cast<int>(i);
  }
  return -1;
}

TEST(OptionalComponents, TheShippedGh100DescriptionsMarkTheNewPathsOptional) {
  for (const char* file : {"h100_sxm.json", "h200_sxm.json", "a100_pcie_40gb.json"}) {
    const GpuDescription gpu = ReadGpuDescription(kGpus + file);
    ASSERT_GE(Index(gpu, "DMMA"), 0) << file;
    EXPECT_TRUE(gpu.components[Index(gpu, "DMMA")].optional) << file;
    EXPECT_TRUE(gpu.components[Index(gpu, "TENSOR INT")].optional) << file;
    EXPECT_FALSE(gpu.components[Index(gpu, "ACTIVE SM")].optional) << file;
    EXPECT_FALSE(gpu.components[Index(gpu, "FP32")].optional) << file;
  }
  const GpuDescription a100 = ReadGpuDescription(kGpus + "a100_pcie_40gb.json");
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_EQ(a100.default_core_mhz, 1410.0);
}

TEST(OptionalComponents, AnExportWithoutTheMetricIngestsWithoutTheComponent) {
  WATTCAL_REQUIRE_DATASETS();
  const GpuDescription gpu = ReadGpuDescription(kGpus + "h100_sxm.json");
  const CaptureReport r = IngestCaptures({H100("ubench_random")}, gpu, CaptureOptions());
  // DMMA's metric is not in the 2026-11-24 capture: left out, named.
  EXPECT_LT(Index(r.gpu, "DMMA"), 0);
  EXPECT_GE(Index(r.gpu, "TENSOR INT"), 0);  // its metric is there
  bool warned = false;
  for (const std::string& w : r.warnings) {
    warned = warned || (w.find("component DMMA left out") != std::string::npos &&
                        w.find("sm__inst_executed_pipe_tensor_op_dmma.sum") != std::string::npos &&
                        w.find("ubench_random/ncu_raw.csv") != std::string::npos);
  }
  EXPECT_TRUE(warned);
  for (const CaptureWindow& w : r.windows) {
    if (w.kind == "benchmark") {
      ASSERT_EQ(w.utilisations.size(), r.gpu.components.size()) << w.workload;
    }
  }
  // The old components keep exactly their former utilisations (the description without the
  // new components, as before they were added).
  const GpuDescription old = gpu.Without({"ACTIVE SM", "TENSOR INT", "DMMA"});
  const CaptureReport before = IngestCaptures({H100("ubench_random")}, old, CaptureOptions());
  ASSERT_EQ(before.windows.size(), r.windows.size());
  for (size_t i = 0; i < r.windows.size(); ++i) {
    if (r.windows[i].kind != "benchmark") continue;
    for (size_t j = 0; j < old.components.size(); ++j) {
      EXPECT_EQ(
          r.windows[i].utilisations[static_cast<size_t>(Index(r.gpu, old.components[j].component))],
          before.windows[i].utilisations[j])
          << r.windows[i].workload << " " << old.components[j].component;
    }
  }
  // ACTIVE SM: the SM sweep's kernel on 1 of 132 SMs is ~1/132 active, the full one ~1.
  const int active = Index(r.gpu, "ACTIVE SM");
  for (const CaptureWindow& w : r.windows) {
    if (w.workload == "sm_sweep_int_add_001") {
      EXPECT_NEAR(w.utilisations[active], 1.0 / 132, 0.2 / 132);
    }
    if (w.workload == "fp32_fma") {
      EXPECT_NEAR(w.utilisations[active], 1.0, 0.05);
    }
  }
  // The same metric made required is refused, naming it.
  GpuDescription strict = gpu;
  strict.components[Index(strict, "DMMA")].optional = false;
  testing::ExpectInputError(
      [&] { IngestCaptures({H100("ubench_random")}, strict, CaptureOptions()); }, 8,
      {"sm__inst_executed_pipe_tensor_op_dmma.sum"});
}

// The committed H100 applications with one export (random) made without the DMMA metric: the
// component once went from every workload (gemm_fp64's prediction 580 -> 466 W, unflagged); now
// only random counts it 0, flagged metric_absent, and gemm_fp64 keeps its 0.237.
TEST(OptionalComponents, OneExportWithoutTheMetricTouchesOnlyItsWorkload) {
  const std::string apps = std::string(WATTCAL_SOURCE_DIR) + "/datasets/captures/h100/apps";
  const std::string dir = testing::ScratchDir() + "/apps";
  fs::create_directories(dir + "/ncu");
  for (const char* f : {"windows.csv", "nvml_power.csv", "capture.json"})
    fs::create_symlink(apps + "/" + f, dir + "/" + f);
  const std::string dmma = "sm__inst_executed_pipe_tensor_op_dmma.sum";
  for (const fs::directory_entry& e : fs::directory_iterator(apps + "/ncu")) {
    const std::string name = e.path().filename().string();
    if (name != "random.csv") {
      fs::create_symlink(e.path(), dir + "/ncu/" + name);
      continue;
    }
    std::string text = testing::ReadFile(e.path().string());
    const size_t at = text.find("\"" + dmma + "\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at + 1, dmma.size(), "sm__not_collected.sum");
    testing::WriteFile(dir + "/ncu/random.csv", text);
  }
  const GpuDescription gpu = ReadGpuDescription(kGpus + "h100_sxm.json");
  const CaptureReport r = IngestCaptures({dir}, gpu, CaptureOptions());
  const int j = Index(r.gpu, "DMMA");
  ASSERT_GE(j, 0);
  bool warned = false;
  for (const std::string& w : r.warnings) {
    warned = warned || (w.find("component DMMA: its metric " + dmma) != std::string::npos &&
                        w.find(dir + "/ncu/random.csv") != std::string::npos &&
                        w.find("of random count DMMA as 0") != std::string::npos);
  }
  EXPECT_TRUE(warned);
  for (const CaptureWindow& w : r.windows) {
    const double u = w.utilisations[static_cast<size_t>(j)];
    EXPECT_EQ((w.energy.flags & kFlagMetricAbsent) != 0, w.workload == "random") << w.workload;
    if (w.workload == "random") {
      EXPECT_EQ(u, 0.0);
    }
    if (w.workload == "gemm_fp64") {
      EXPECT_NEAR(u, 0.237, 0.001);
    }
  }
}

TEST(OptionalComponents, AModelWithoutThemPortsToADescriptionWithThem) {
  const GpuDescription h100 = ReadGpuDescription(kGpus + "h100_sxm.json");
  const GpuDescription h200 = ReadGpuDescription(kGpus + "h200_sxm.json");
  PowerModel model;
  model.method = FitMethod::kFixed;
  model.layout = h100.Without({"DMMA"}).ToLayout();
  for (int d = 0; d < model.layout.num_domains(); ++d) {
    model.freq_levels_mhz.push_back({model.layout.domains[d].default_freq_mhz});
    model.voltage_rel.push_back({1.0});
    model.static_w.push_back(50.0);
    model.idle_dyn_w_per_mhz.push_back(0.0);
  }
  model.component_w_per_mhz.assign(model.layout.num_components(), 0.01);
  GpuPortReport report;
  const PowerModel ported = PortModelToGpu(model, h100, h200, GpuPortOptions(), &report);
  EXPECT_EQ(ported.layout.num_components(), model.layout.num_components());
  ASSERT_EQ(report.left_out_optional, std::vector<std::string>{"DMMA"});
  EXPECT_NE(FormatGpuPortReport(report).find(
                "left out (optional components the base model was trained without): DMMA"),
            std::string::npos);
}

}  // namespace
}  // namespace wattcal
