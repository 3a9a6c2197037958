// Tests of the GPU descriptions (every shipped microbench_specs/gpus/*.json passes Check()
// and cites its numbers; bad files name the JSON field) and of TPDS Eqs. 7-8: a worked
// example by hand, the round trip utilisations -> counters -> Nsight Compute CSV ->
// ReadCounters -> utilisations, missing metrics, and the tidy activity table.
#include "ingest/utilisation.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ingest/counters.h"
#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::Dataset;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::WriteFile;

std::string GpusDir() { return std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus"; }

std::vector<std::string> ShippedDescriptions() {
  namespace fs = boost::filesystem;
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(GpusDir())) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// ---- GpuDescription ----------------------------------------------------------------------

TEST(GpuDescription, EveryShippedDescriptionPassesCheckAndCitesItsNumbers) {
  const std::vector<std::string> paths = ShippedDescriptions();
  // virtual + the GPUs of ../shared/datasets (5) + AccelWattch's Quadro GV100.
  ASSERT_GE(paths.size(), 7u);
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const GpuDescription gpu = ReadGpuDescription(path);
    std::string error;
    EXPECT_TRUE(gpu.Check(&error)) << error;
    EXPECT_EQ(gpu.sources.count("sm_count"), 1u);
    EXPECT_EQ(gpu.sources.count("default_core_mhz"), 1u);
    for (const ComponentCounters& c : gpu.components) {
      if (c.kind == UtilisationKind::kComputeUnit) {
        EXPECT_TRUE(gpu.sources.count("units_per_sm") > 0 ||
                    gpu.sources.count("components[" + c.component + "].units_per_sm") > 0)
            << c.component << " has no source for units_per_sm";
      } else {
        EXPECT_EQ(gpu.sources.count("components[" + c.component + "].peak_bytes_per_s"), 1u)
            << c.component << " has no source for peak_bytes_per_s";
      }
    }
  }
}

TEST(GpuDescription, TableThreeNumbers) {
  // TPDS 2019 Table 3: SMs and per-SM units; vendor bandwidths.
  const GpuDescription titan_x = ReadGpuDescription(GpusDir() + "/gtx_titan_x.json");
  EXPECT_EQ(titan_x.sm_count, 24);
  EXPECT_EQ(titan_x.components[0].units_per_sm, 128);  // SP ADD
  EXPECT_EQ(titan_x.components[4].units_per_sm, 4);    // DP ADD
  EXPECT_EQ(titan_x.components[7].units_per_sm, 32);   // SFU
  EXPECT_EQ(titan_x.components.back().peak_bytes_per_s, 336.48e9);
  EXPECT_EQ(ReadGpuDescription(GpusDir() + "/titan_xp.json").sm_count, 30);
  EXPECT_EQ(ReadGpuDescription(GpusDir() + "/gtx_980.json").sm_count, 16);
  const GpuDescription k40c = ReadGpuDescription(GpusDir() + "/tesla_k40c.json");
  EXPECT_EQ(k40c.sm_count, 15);
  EXPECT_EQ(k40c.components[0].units_per_sm, 192);
  EXPECT_EQ(ReadGpuDescription(GpusDir() + "/titan_v.json").sm_count, 80);
  EXPECT_EQ(ReadGpuDescription(GpusDir() + "/quadro_gv100.json").components.back().peak_bytes_per_s,
            870.4e9);
}

TEST(GpuDescription, LayoutsMatchTheDatasetFiles) {
  WATTCAL_REQUIRE_DATASETS();
  const std::pair<const char*, const char*> pairs[] = {
      {"gtx_titan_x.json", "gpmtool_tpds2019/gtx_titan_x/train_micro_fixed_11comp.csv"},
      {"titan_xp.json", "gpmtool_tpds2019/titan_xp/train_micro_fixed_11comp.csv"},
      {"tesla_k40c.json", "gpmtool_tpds2019/tesla_k40c/train_micro_fixed_7comp.csv"},
      {"gtx_980.json", "gpmtool_tpds2019/gtx_980/micro_fixed_6comp.csv"},
      {"titan_v.json", "gpmtool_tpds2019/titan_v/micro_dvfs_11comp.csv"},
  };
  for (const auto& [description, corpus_file] : pairs) {
    SCOPED_TRACE(description);
    const Layout layout = ReadGpuDescription(GpusDir() + "/" + description).ToLayout();
    const Corpus corpus = ReadCorpus(Dataset(corpus_file));
    EXPECT_EQ(corpus.layout.Mismatch(layout), "");
  }
}

TEST(GpuDescription, ToLayoutSplitsDomains) {
  const GpuDescription gpu = ReadGpuDescription(GpusDir() + "/gtx_titan_x.json");
  const Layout layout = gpu.ToLayout();
  ASSERT_EQ(layout.num_domains(), 2);
  EXPECT_EQ(layout.domains[0].name, "core");
  EXPECT_EQ(layout.domains[0].default_freq_mhz, 975);
  EXPECT_EQ(layout.domains[0].components.size(), 11u);
  EXPECT_EQ(layout.domains[1].name, "mem");
  EXPECT_EQ(layout.domains[1].default_freq_mhz, 3505);
  EXPECT_EQ(layout.domains[1].components, std::vector<std::string>{"DRAM"});
  GpuDescription core_only = gpu;
  core_only.components.pop_back();
  EXPECT_EQ(core_only.ToLayout().num_domains(), 1);
}

// Writes virtual.json with `edit` applied and returns the InputError of reading it.
template <typename Edit>
InputError DescriptionError(Edit edit) {
  nlohmann::json j = nlohmann::json::parse(ReadFile(GpusDir() + "/virtual.json"));
  edit(j);
  const std::string path = WriteFile(ScratchDir() + "/bad_gpu.json", j.dump(2));
  try {
    ReadGpuDescription(path);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    return e;
  }
  ADD_FAILURE() << "no InputError for " << j.dump();
  return InputError("", 0, "", "");
}

TEST(GpuDescription, ErrorsNameTheJsonField) {
  InputError e = DescriptionError([](nlohmann::json& j) { j["components"][1]["kind"] = "vector"; });
  EXPECT_EQ(e.field(), "components[1].kind");
  EXPECT_NE(e.message().find("\"vector\""), std::string::npos) << e.what();

  e = DescriptionError([](nlohmann::json& j) { j["components"][0].erase("units_per_sm"); });
  EXPECT_EQ(e.field(), "components[0].units_per_sm");
  EXPECT_NE(e.message().find("0 must be > 0"), std::string::npos) << e.what();

  e = DescriptionError([](nlohmann::json& j) { j["components"][11]["peak_bytes_per_s"] = -1; });
  EXPECT_EQ(e.field(), "components[11].peak_bytes_per_s");

  e = DescriptionError([](nlohmann::json& j) { j["sm_cout"] = 3; });
  EXPECT_EQ(e.field(), "sm_cout");
  EXPECT_NE(e.message().find("unknown field"), std::string::npos);

  e = DescriptionError([](nlohmann::json& j) { j["sm_count"] = "24"; });
  EXPECT_EQ(e.field(), "sm_count");
  EXPECT_NE(e.message().find("expected a number"), std::string::npos);

  e = DescriptionError([](nlohmann::json& j) { j["sm_count"] = 24.5; });
  EXPECT_NE(e.message().find("whole number"), std::string::npos);

  e = DescriptionError([](nlohmann::json& j) { j.erase("sm_count"); });
  EXPECT_EQ(e.field(), "sm_count");
  EXPECT_NE(e.message().find("missing"), std::string::npos);

  e = DescriptionError([](nlohmann::json& j) {
    j["components"][1]["thread_metrics"] = j["components"][0]["thread_metrics"];
  });
  EXPECT_EQ(e.field(), "components[1].thread_metrics[0]");
  EXPECT_NE(e.message().find("already a counter of component SP ADD"), std::string::npos);

  e = DescriptionError([](nlohmann::json& j) {
    std::swap(j["components"][10], j["components"][11]);  // DRAM (mem) before Shared (core)
  });
  EXPECT_EQ(e.field(), "components[11].domain");

  e = DescriptionError([](nlohmann::json& j) { j["components"][10].erase("bytes_per_access"); });
  EXPECT_EQ(e.field(), "components[10].bytes_per_access");

  e = DescriptionError([](nlohmann::json& j) { j["components"][0]["thread_metrics"] = {1, 2}; });
  EXPECT_EQ(e.field(), "components[0].thread_metrics[0]");

  // Not JSON at all: the line of the parse error.
  const std::string path =
      WriteFile(ScratchDir() + "/broken.json", "{\n  \"name\": \"x\",\n  oops\n}\n");
  try {
    ReadGpuDescription(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.line(), 3);
    EXPECT_NE(error.message().find("invalid JSON"), std::string::npos);
  }
  EXPECT_THROW(ReadGpuDescription(ScratchDir() + "/absent.json"), InputError);
}

TEST(GpuDescription, CheckMessagesNameFieldAndValue) {
  GpuDescription gpu;
  std::string error;
  EXPECT_FALSE(gpu.Check(&error));
  EXPECT_EQ(error, "name: must not be empty");
  gpu = ReadGpuDescription(GpusDir() + "/virtual.json");
  gpu.sm_count = 0;
  EXPECT_FALSE(gpu.Check(&error));
  EXPECT_EQ(error, "sm_count = 0 must be > 0");
  gpu = ReadGpuDescription(GpusDir() + "/virtual.json");
  gpu.components[9].thread_metrics.push_back("x");  // L2 is a bandwidth component
  EXPECT_FALSE(gpu.Check(&error));
  EXPECT_NE(error.find("components[9].thread_metrics: the bandwidth component L2 cannot"),
            std::string::npos)
      << error;
}

// ---- Utilisation: TPDS Eqs. 7-8 ----------------------------------------------------------

// A two-component GPU small enough to compute by hand.
GpuDescription TinyGpu() {
  const std::string path = WriteFile(ScratchDir() + "/tiny.json", R"({
    "name": "tiny", "sm_count": 2, "warp_size": 32,
    "default_core_mhz": 1000, "default_mem_mhz": 2000,
    "active_cycles_metric": "cycles", "duration_metric": "time",
    "components": [
      {"component": "ALU", "kind": "compute", "units_per_sm": 4,
       "thread_metrics": ["a", "b"], "warp_metrics": ["w"]},
      {"component": "MEM", "domain": "mem", "kind": "bandwidth", "peak_bytes_per_s": 100,
       "bytes_per_access": 8, "byte_metrics": ["x"], "access_metrics": ["y"]}
    ]})");
  return ReadGpuDescription(path);
}

TEST(Utilisation, HandComputedEquations7And8) {
  const GpuDescription gpu = TinyGpu();
  KernelCounters k;
  k.kernel = "k";
  k.metrics = {{"a", 10}, {"b", 6}, {"w", 1}, {"cycles", 4}, {"x", 20}, {"y", 10}, {"time", 2}};
  const std::vector<double> u = ComputeUtilisations(k, gpu);
  ASSERT_EQ(u.size(), 2u);
  // TPDS Eq. 7: (10 + 6 + 32 * 1) / (4 cycles * 2 SMs * 4 units) = 48 / 32 (at the 1.5 bound).
  EXPECT_EQ(u[0], 1.5);
  // TPDS Eq. 8: (20 + 8 * 10) bytes / 2 s / 100 B/s.
  EXPECT_EQ(u[1], 0.5);
  // Above the bound (util/bounds.h): an input error naming the kernel's file and line.
  k.metrics["cycles"] = 3;
  k.path = "counters.csv";
  k.line = 7;
  try {
    ComputeUtilisations(k, gpu);
    ADD_FAILURE() << "a utilisation of 2 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 7);
    EXPECT_NE(std::string(e.what()).find("utilisation 2 is outside"), std::string::npos);
  }
  // A counter of 1e308 (once an internal error): an input error naming the metric.
  k.metrics["cycles"] = 4;
  k.metrics["a"] = 1e308;
  try {
    ComputeUtilisations(k, gpu);
    ADD_FAILURE() << "a counter of 1e308 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.field(), "a");
  }
}

TEST(Utilisation, RoundTripThroughNcuCsvForEveryDescription) {
  constexpr double kRelTol = 1e-9;  // the task's bound; the actual error is a few ulps
  std::mt19937 rng(SeedFromTestName());
  std::uniform_real_distribution<double> util(0.0, 1.2);
  std::uniform_real_distribution<double> log_duration(-4.0, 0.5);
  for (const std::string& path : ShippedDescriptions()) {
    SCOPED_TRACE(path);
    const GpuDescription gpu = ReadGpuDescription(path);
    std::vector<KernelCounters> kernels;
    std::vector<std::vector<double>> truth;
    for (int i = 0; i < 4; ++i) {
      std::vector<double> u(gpu.components.size());
      for (double& x : u) x = util(rng);
      if (i == 0) u[1] = 0.0;  // an idle component
      const double duration_s = std::pow(10.0, log_duration(rng));
      const double active_cycles = 0.9 * duration_s * gpu.default_core_mhz * 1e6;
      KernelCounters k;
      k.kernel = "kernel_" + std::to_string(i) + "(float*, int)";
      k.launches = 1 + i % 3;
      k.metrics = CountersForUtilisations(u, gpu, duration_s, active_cycles);
      kernels.push_back(k);
      truth.push_back(u);
    }
    const std::string csv = WriteFile(ScratchDir() + "/virtual_ncu.csv", NcuDetailsCsv(kernels));
    const auto back = ReadCounters(csv);
    ASSERT_EQ(back.size(), kernels.size());
    for (size_t i = 0; i < back.size(); ++i) {
      EXPECT_EQ(back[i].metrics, kernels[i].metrics);
      const std::vector<double> u = ComputeUtilisations(back[i], gpu);
      ASSERT_EQ(u.size(), truth[i].size());
      for (size_t c = 0; c < u.size(); ++c) {
        EXPECT_NEAR(u[c], truth[i][c], kRelTol * truth[i][c]) << gpu.components[c].component;
      }
    }
  }
}

TEST(Utilisation, MissingMetricIsAnErrorOrNaNWithAList) {
  const GpuDescription gpu = ReadGpuDescription(GpusDir() + "/virtual.json");
  KernelCounters k;
  k.kernel = "k";
  k.path = "counters.csv";
  k.line = 42;
  k.metrics =
      CountersForUtilisations(std::vector<double>(gpu.components.size(), 0.5), gpu, 1.0, 1e9);
  k.metrics.erase("dram__bytes.sum");
  try {
    ComputeUtilisations(k, gpu);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "counters.csv");
    EXPECT_EQ(e.line(), 42);
    EXPECT_EQ(e.field(), "dram__bytes.sum");
    EXPECT_NE(e.message().find("kernel 'k' has no value for metric 'dram__bytes.sum', which "
                               "component DRAM needs"),
              std::string::npos)
        << e.what();
  }
  std::vector<std::string> missing;
  std::vector<double> u = ComputeUtilisations(k, gpu, &missing);
  EXPECT_EQ(missing, std::vector<std::string>{"dram__bytes.sum"});
  EXPECT_TRUE(std::isnan(u.back()));
  EXPECT_NEAR(u[0], 0.5, 1e-12);
  // Without the time base every compute component is NaN, and the metric is listed once.
  k.metrics.erase("sm__cycles_active.avg");
  missing.clear();
  u = ComputeUtilisations(k, gpu, &missing);
  EXPECT_EQ(missing, (std::vector<std::string>{"sm__cycles_active.avg", "dram__bytes.sum"}));
  for (size_t c = 0; c < gpu.components.size(); ++c) {
    EXPECT_EQ(std::isnan(u[c]), gpu.components[c].kind == UtilisationKind::kComputeUnit ||
                                    gpu.components[c].component == "DRAM")
        << gpu.components[c].component;
  }
}

TEST(Utilisation, ZeroTimeBaseAndNegativeCounters) {
  const GpuDescription gpu = TinyGpu();
  KernelCounters k;
  k.kernel = "empty";
  k.metrics = {{"a", 0}, {"b", 0}, {"w", 0}, {"cycles", 0}, {"x", 0}, {"y", 0}, {"time", 0}};
  EXPECT_EQ(ComputeUtilisations(k, gpu), (std::vector<double>{0.0, 0.0}));
  k.metrics["a"] = 5;
  try {
    ComputeUtilisations(k, gpu);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "cycles");
    EXPECT_NE(e.message().find("the time base 'cycles' is 0 but component ALU counts 5"),
              std::string::npos)
        << e.what();
  }
  k.metrics["a"] = -1;
  k.metrics["cycles"] = 1;
  EXPECT_THROW(ComputeUtilisations(k, gpu), InputError);
}

TEST(Utilisation, InverseRejectsBadArguments) {
  const GpuDescription gpu = TinyGpu();
  EXPECT_THROW(CountersForUtilisations({0.5}, gpu, 1.0, 1.0), std::invalid_argument);
  EXPECT_THROW(CountersForUtilisations({0.5, -0.1}, gpu, 1.0, 1.0), std::invalid_argument);
  EXPECT_THROW(CountersForUtilisations({0.5, NAN}, gpu, 1.0, 1.0), std::invalid_argument);
  EXPECT_THROW(CountersForUtilisations({0.5, 0.5}, gpu, 0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(CountersForUtilisations({0.5, 0.5}, gpu, 1.0, 0.0), std::invalid_argument);
  // Ops split evenly: 0.5 * 3 cycles * 2 SMs * 4 units = 12 ops over a, b and w.
  const auto c = CountersForUtilisations({0.5, 0.25}, gpu, 2.0, 3.0);
  EXPECT_EQ(c.at("a"), 4.0);
  EXPECT_EQ(c.at("b"), 4.0);
  EXPECT_EQ(c.at("w"), 4.0 / 32);
  EXPECT_EQ(c.at("x"), 25.0);  // 0.25 * 2 s * 100 B/s = 50 bytes over x and y
  EXPECT_EQ(c.at("y"), 25.0 / 8);
  EXPECT_EQ(c.at("cycles"), 3.0);
  EXPECT_EQ(c.at("time"), 2.0);
}

TEST(Utilisation, TidyCsvReadsBackAsAnActivityCorpus) {
  const GpuDescription gpu = ReadGpuDescription(GpusDir() + "/gtx_titan_x.json");
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  std::vector<double> u(gpu.components.size());
  for (size_t c = 0; c < u.size(); ++c) u[c] = 0.0123456789 * static_cast<double>(c + 1);
  rows.emplace_back("Kernel2(bool*,bool*,bool*,bool*,int)", u);
  rows.emplace_back("plain", std::vector<double>(u.size(), 0.5));
  const std::string text = UtilisationsToTidyCsv(rows, gpu);
  EXPECT_EQ(text.substr(0, text.find('\n', text.find('\n') + 1)),
            "# wattcal-tidy default_f_core_mhz=975 default_f_mem_mhz=3505\n"
            "benchmark,core:SP ADD,core:SP MUL,core:SP FMA,core:INT,core:DP ADD,core:DP MUL,"
            "core:DP FMA,core:SFU,core:CF,core:L2,core:Shared,mem:DRAM");
  EXPECT_NE(text.find("\n\"Kernel2(bool*,bool*,bool*,bool*,int)\",0.0123457,0.0246914,"),
            std::string::npos)
      << text;
  const std::string path = WriteFile(ScratchDir() + "/activity.csv", text);
  const Corpus corpus = ReadCorpus(path);
  EXPECT_EQ(corpus.kind, CorpusKind::kActivity);
  EXPECT_EQ(corpus.layout.Mismatch(gpu.ToLayout()), "");
  ASSERT_EQ(corpus.rows(), 2);
  EXPECT_EQ(corpus.benchmark[0], "Kernel2(bool*,bool*,bool*,bool*,int)");
  for (size_t c = 0; c < u.size(); ++c) {
    EXPECT_NEAR(corpus.util_frac(0, static_cast<int>(c)), u[c], 5e-6 * u[c]);  // %.6g
  }
  rows[1].second[3] = NAN;
  EXPECT_THROW(UtilisationsToTidyCsv(rows, gpu), std::invalid_argument);
}

}  // namespace
}  // namespace wattcal
