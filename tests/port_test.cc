// Tests of carrying models and estimates to another GPU (TPDS'19 §4.6) and another technology
// node (AccelWattch MICRO'21 §7.1):
//
//   PortOptions*    defaults pass Check(); each rule's message names field and value.
//   PortGpu*        count ratios per component and per domain, TPDS Eq. 11, dropped components,
//                   aggregate components, errors naming the description's field; a port with
//                   one common ratio scales every prediction by exactly that ratio.
//   PortProject*    a corpus restricted to the target's components.
//   PortNode*       node table, C V^2 and V I_leak factors, model and estimate scaling, factor
//                   derivation between two versions of the same estimates.
//   PortRealData*   GTX Titan X -> GTX 980 (TPDS Table 5's setting, on the 980's
//                   microbenchmarks); AccelWattch's Pascal scaling and Turing's board constant.
//   PortStage*      wattcal-port end to end: outputs, manifests, reruns, exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/workload_power.h"
#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "model/model_io.h"
#include "port/estimate_table.h"
#include "port/gpu_port.h"
#include "port/node_port.h"
#include "port/technology_node.h"
#include "test_support.h"
#include "util/errors.h"
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace wattcal {
namespace {

using ::wattcal::testing::CommandResult;
using ::wattcal::testing::Dataset;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::HasProvenance;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

const std::string kSpecs = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs";

std::string InputErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

ComponentCounters Compute(const std::string& name, double units) {
  ComponentCounters c;
  c.component = name;
  c.kind = UtilisationKind::kComputeUnit;
  c.units_per_sm = units;
  return c;
}

ComponentCounters Bandwidth(const std::string& name, const std::string& domain) {
  ComponentCounters c;
  c.component = name;
  c.domain = domain;
  c.kind = UtilisationKind::kBandwidth;
  c.peak_bytes_per_s = 1e11;
  return c;
}

// A base GPU whose FP32 units are described per operation (SP ADD, SP MUL), as the 11-component
// descriptions are, with a CF unit the target lacks.
GpuDescription BaseGpu() {
  GpuDescription g;
  g.path = "base.json";
  g.name = "base";
  g.sm_count = 20;
  g.default_core_mhz = 1000;
  g.default_mem_mhz = 3000;
  g.l2_banks = 10;
  g.memory_bus_width_bits = 320;
  g.components = {Compute("SP ADD", 128),  Compute("SP MUL", 128),  Compute("INT", 64),
                  Compute("CF", 32),       Bandwidth("L2", "core"), Bandwidth("Shared", "core"),
                  Bandwidth("DRAM", "mem")};
  return g;
}

GpuDescription TargetGpu() {
  GpuDescription g;
  g.path = "target.json";
  g.name = "target";
  g.sm_count = 10;
  g.default_core_mhz = 1000;
  g.default_mem_mhz = 3000;
  g.l2_banks = 4;
  g.memory_bus_width_bits = 128;
  g.components = {Compute("SP", 128), Compute("INT", 64), Bandwidth("L2", "core"),
                  Bandwidth("Shared", "core"), Bandwidth("DRAM", "mem")};
  return g;
}

// A base model with layout SP, INT, CF, L2, Shared | DRAM.
PowerModel BaseModel() {
  PowerModel m;
  m.method = FitMethod::kDvfs;
  m.trained_on = "synthetic";
  FrequencyDomain core{"core", 1000, {"SP", "INT", "CF", "L2", "Shared"}};
  FrequencyDomain mem{"mem", 3000, {"DRAM"}};
  m.layout.domains = {core, mem};
  m.freq_levels_mhz = {{600, 1000, 1200}, {2000, 3000}};
  m.voltage_rel = {{0.9, 1.0, 1.1}, {0.95, 1.0}};
  m.static_w = {40.0, 10.0};
  m.idle_dyn_w_per_mhz = {0.02, 0.003};
  m.component_w_per_mhz = {0.05, 0.04, 0.01, 0.03, 0.02, 0.012};
  return m;
}

// ---------------------------------------------------------------------------------------

TEST(PortOptions, DefaultsPassCheck) {
  std::string error;
  EXPECT_TRUE(GpuPortOptions().Check(&error)) << error;
  EXPECT_TRUE(NodePortOptions().Check(&error)) << error;
}

TEST(PortOptions, EachRuleNamesFieldAndValue) {
  std::string error;
  GpuPortOptions gpu;
  gpu.constant_scaling = ConstantScaling::kIdlePower;
  gpu.target_idle_w = 65;
  EXPECT_FALSE(gpu.Check(&error));
  EXPECT_NE(error.find("base_idle_w = 0"), std::string::npos) << error;
  gpu.base_idle_w = 75;
  gpu.target_idle_w = -1;
  EXPECT_FALSE(gpu.Check(&error));
  EXPECT_NE(error.find("target_idle_w = -1"), std::string::npos) << error;
  NodePortOptions node;
  node.board_constant_factor = 0;
  EXPECT_FALSE(node.Check(&error));
  EXPECT_NE(error.find("board_constant_factor = 0"), std::string::npos) << error;
  node = NodePortOptions();
  node.idle_sm_factor = -2;
  EXPECT_FALSE(node.Check(&error));
  EXPECT_NE(error.find("idle_sm_factor = -2"), std::string::npos) << error;
}

// ---------------------------------------------------------------------------------------

TEST(PortGpu, EveryComponentScalesWithItsOwnCount) {
  GpuPortReport report;
  const PowerModel out =
      PortModelToGpu(BaseModel(), BaseGpu(), TargetGpu(), GpuPortOptions(), &report);
  // SP: 20x128 -> 10x128 units (the base's SP ADD/SP MUL family); INT: 20x64 -> 10x64;
  // L2: 10 -> 4 banks; Shared: 20 -> 10 SMs; DRAM: 320 -> 128 bits. CF is not on the target.
  EXPECT_EQ(out.layout.ComponentNames(),
            (std::vector<std::string>{"SP", "INT", "L2", "Shared", "DRAM"}));
  const std::vector<double> factors = {0.5, 0.5, 0.4, 0.5, 0.4};
  const std::vector<double> base = {0.05, 0.04, 0.03, 0.02, 0.012};
  ASSERT_EQ(report.components.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(report.components[i].factor, factors[i]) << report.components[i].name;
    EXPECT_DOUBLE_EQ(out.component_w_per_mhz[i], base[i] * factors[i]);
  }
  EXPECT_EQ(report.components[0].scales_with, "units");
  EXPECT_EQ(report.components[0].base_count, 2560);
  EXPECT_EQ(report.components[2].scales_with, "l2_banks");
  EXPECT_EQ(report.components[3].scales_with, "sms");
  EXPECT_EQ(report.components[4].scales_with, "memory_bus");
  EXPECT_EQ(report.dropped_components, (std::vector<std::string>{"CF"}));
  // "components": core terms with the SM ratio, mem terms with the bus ratio.
  EXPECT_DOUBLE_EQ(out.static_w[0], 40.0 * 0.5);
  EXPECT_DOUBLE_EQ(out.static_w[1], 10.0 * 0.4);
  EXPECT_DOUBLE_EQ(out.idle_dyn_w_per_mhz[0], 0.02 * 0.5);
  EXPECT_DOUBLE_EQ(out.idle_dyn_w_per_mhz[1], 0.003 * 0.4);
  // Voltages and levels are the base model's.
  EXPECT_EQ(out.freq_levels_mhz, BaseModel().freq_levels_mhz);
  EXPECT_EQ(out.voltage_rel, BaseModel().voltage_rel);
}

TEST(PortGpu, IdlePowerCorrectionScalesEveryAlphaByTheIdleRatio) {
  GpuPortOptions options;
  options.constant_scaling = ConstantScaling::kIdlePower;
  options.base_idle_w = 80;
  options.target_idle_w = 60;  // TPDS Eq. 11: x0.75
  GpuPortReport report;
  const PowerModel out = PortModelToGpu(BaseModel(), BaseGpu(), TargetGpu(), options, &report);
  EXPECT_DOUBLE_EQ(out.static_w[0], 30.0);
  EXPECT_DOUBLE_EQ(out.static_w[1], 7.5);
  EXPECT_DOUBLE_EQ(out.idle_dyn_w_per_mhz[0], 0.015);
  EXPECT_DOUBLE_EQ(out.idle_dyn_w_per_mhz[1], 0.00225);
  ASSERT_EQ(report.constant_terms.size(), 4u);
  EXPECT_EQ(report.constant_terms[0].name, "alpha0:core");
  EXPECT_EQ(report.constant_terms[3].name, "alpha1:mem");
  EXPECT_EQ(report.constant_terms[0].scales_with, "idle_power");
  // The component coefficients do not depend on the constant-term rule.
  EXPECT_DOUBLE_EQ(out.component_w_per_mhz[0], 0.025);
}

TEST(PortGpu, OneCommonRatioScalesEveryPredictionByIt) {
  // Halve everything: SMs, L2 banks, bus width, and the idle power.
  GpuDescription target = TargetGpu();
  target.l2_banks = 5;
  target.memory_bus_width_bits = 160;
  PowerModel base = BaseModel();
  base.layout.domains[0].components = {"SP", "INT", "L2", "Shared"};
  base.component_w_per_mhz = {0.05, 0.04, 0.03, 0.02, 0.012};
  GpuPortOptions options;
  options.constant_scaling = ConstantScaling::kIdlePower;
  options.base_idle_w = 70;
  options.target_idle_w = 35;
  const PowerModel out = PortModelToGpu(base, BaseGpu(), target, options, nullptr);
  const double util[] = {0.3, 0.9, 0.1, 0.5, 0.7};
  for (double fc : {600.0, 800.0, 1000.0, 1200.0}) {
    for (double fm : {2000.0, 2500.0, 3000.0}) {
      const double f[] = {fc, fm};
      EXPECT_NEAR(out.Predict(util, f), 0.5 * base.Predict(util, f), 1e-12);
    }
  }
}

TEST(PortGpu, MissingCountsAndMismatchesNameTheDescriptionField) {
  GpuDescription target = TargetGpu();
  target.l2_banks = 0;
  EXPECT_NE(InputErrorOf([&] {
              PortModelToGpu(BaseModel(), BaseGpu(), target, {}, nullptr);
            }).find("target.json: l2_banks: missing: component L2 scales with the L2 banks"),
            std::string::npos);
  GpuDescription base_gpu = BaseGpu();
  base_gpu.memory_bus_width_bits = 0;
  EXPECT_NE(InputErrorOf([&] {
              PortModelToGpu(BaseModel(), base_gpu, TargetGpu(), {}, nullptr);
            }).find("base.json: memory_bus_width_bits: missing"),
            std::string::npos);
  target = TargetGpu();
  target.components.insert(target.components.begin() + 2, Compute("DP", 4));
  EXPECT_NE(InputErrorOf([&] { PortModelToGpu(BaseModel(), BaseGpu(), target, {}, nullptr); })
                .find("target.json: components: the base model (trained on synthetic) has no "
                      "component DP"),
            std::string::npos);
  target = TargetGpu();
  target.default_core_mhz = 1100;
  EXPECT_NE(InputErrorOf([&] { PortModelToGpu(BaseModel(), BaseGpu(), target, {}, nullptr); })
                .find("target.json: default_core_mhz: = 1100 MHz differs from the base model's "
                      "default 1000 MHz"),
            std::string::npos);
  base_gpu = BaseGpu();
  base_gpu.components[1].units_per_sm = 64;  // SP ADD and SP MUL disagree
  EXPECT_NE(InputErrorOf([&] {
              PortModelToGpu(BaseModel(), base_gpu, TargetGpu(), {}, nullptr);
            }).find("SP ADD and SP MUL give different counts"),
            std::string::npos);
}

TEST(PortGpu, IdlePowerComesFromTheIdleRowsAtTheDefaultPair) {
  const std::string dir = ScratchDir();
  const std::string path =
      WriteFile(dir + "/c.csv",
                "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000\n"
                "benchmark,power_w,f_core_mhz,f_mem_mhz,core:SP,mem:DRAM\n"
                "idle,50,1000,3000,0,0\n"
                "busy,80,1000,3000,0.5,0.1\n"
                "idle,40,800,3000,0,0\n"
                "idle2,52,1000,3000,0,0\n");
  EXPECT_DOUBLE_EQ(IdlePowerAtDefaultW(ReadCorpus(path)), 51.0);
  const std::string busy =
      WriteFile(dir + "/b.csv",
                "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000\n"
                "benchmark,power_w,f_core_mhz,f_mem_mhz,core:SP,mem:DRAM\n"
                "busy,80,1000,3000,0.5,0.1\n");
  EXPECT_NE(InputErrorOf([&] { IdlePowerAtDefaultW(ReadCorpus(busy)); })
                .find("no idle benchmark (a row with every utilisation 0) at the default pair "
                      "1000/3000 MHz"),
            std::string::npos);
}

TEST(PortGpu, ShippedDescriptionsCiteTheirBanksAndBusWidth) {
  for (const char* name :
       {"gtx_titan_x", "gtx_980", "titan_xp", "tesla_k40c", "titan_v", "quadro_gv100"}) {
    const GpuDescription gpu = ReadGpuDescription(kSpecs + "/gpus/" + name + ".json");
    EXPECT_GT(gpu.l2_banks, 0) << name;
    EXPECT_GT(gpu.memory_bus_width_bits, 0) << name;
    EXPECT_EQ(gpu.sources.count("l2_banks"), 1u) << name;
    EXPECT_EQ(gpu.sources.count("memory_bus_width_bits"), 1u) << name;
  }
}

// ---------------------------------------------------------------------------------------

TEST(PortProject, KeepsTheTargetsComponentsInItsOrder) {
  const std::string dir = ScratchDir();
  const std::string path =
      WriteFile(dir + "/c.csv",
                "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000\n"
                "benchmark,power_w,f_core_mhz,f_mem_mhz,core:INT,core:CF,"
                "core:SP,core:Shared,core:L2,mem:DRAM\n"
                "a,80,1000,3000,0.1,0.2,0.3,0.4,0.5,0.6\n");
  std::vector<std::string> dropped;
  const Corpus out = ProjectCorpus(ReadCorpus(path), TargetGpu().ToLayout(), &dropped);
  EXPECT_EQ(out.layout.ComponentNames(),
            (std::vector<std::string>{"SP", "INT", "L2", "Shared", "DRAM"}));
  EXPECT_EQ(dropped, (std::vector<std::string>{"CF"}));
  EXPECT_EQ(out.util_frac(0, 0), 0.3);
  EXPECT_EQ(out.util_frac(0, 2), 0.5);
  EXPECT_EQ(out.util_frac(0, 4), 0.6);
  EXPECT_EQ(out.power_w[0], 80.0);
  GpuDescription with_dp = TargetGpu();
  with_dp.components.push_back(Compute("DP", 4));
  std::swap(with_dp.components[4], with_dp.components[5]);  // keep mem last
  EXPECT_NE(InputErrorOf([&] {
              ProjectCorpus(ReadCorpus(path), with_dp.ToLayout(), nullptr);
            }).find("c.csv:2: no component DP in the core domain"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------

TEST(PortNode, TableFactorsAreCV2AndVIleak) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/n.csv",
                                     "# a node table\n"
                                     "node,vdd_v,capacitance_rel,leakage_current_rel,source\n"
                                     "A,1.0,1.0,1.0,ref\n"
                                     "B,0.8,0.5,2.0,\"made up, for the test\"\n");
  const NodeTable table = ReadNodeTable(path);
  ASSERT_EQ(table.nodes.size(), 2u);
  EXPECT_EQ(table.nodes[1].source, "made up, for the test");
  NodePortOptions options;
  options.from_node = "A";
  options.to_node = "B";
  options.board_constant_factor = 1.7;
  const NodeScaling s = MakeNodeScaling(&table, options);
  EXPECT_DOUBLE_EQ(s.dynamic_factor, 0.5 * 0.8 * 0.8);
  EXPECT_DOUBLE_EQ(s.static_factor, 0.8 * 2.0);
  EXPECT_DOUBLE_EQ(s.idle_sm_factor, s.static_factor);
  EXPECT_EQ(s.board_constant_factor, 1.7);
  // Given factors replace the table's, one by one.
  options.dynamic_factor = 1.25;
  options.idle_sm_factor = 3.0;
  const NodeScaling g = MakeNodeScaling(&table, options);
  EXPECT_EQ(g.dynamic_factor, 1.25);
  EXPECT_EQ(g.dynamic_source, "given");
  EXPECT_DOUBLE_EQ(g.static_factor, 1.6);
  EXPECT_EQ(g.static_source, "node table");
  EXPECT_EQ(g.idle_sm_factor, 3.0);
  options.to_node = "C";
  options.dynamic_factor = 0;
  EXPECT_NE(InputErrorOf([&] {
              MakeNodeScaling(&table, options);
            }).find("n.csv: node: no node \"C\"; the table has A, B"),
            std::string::npos);
}

TEST(PortNode, TableErrorsNameLineAndField) {
  const std::string dir = ScratchDir();
  const auto read = [&](const std::string& text) {
    const std::string path = WriteFile(dir + "/n.csv", text);
    return InputErrorOf([&] { ReadNodeTable(path); });
  };
  EXPECT_NE(read("node,vdd_v,capacitance_rel,leakage_current_rel,source\nA,0,1,1,x\n")
                .find("n.csv:2: vdd_v: 0 must be > 0"),
            std::string::npos);
  EXPECT_NE(read("node,vdd_v,capacitance_rel,leakage_current_rel,source\nA,1,1,1,\n")
                .find("n.csv:2: source: every row must cite its source"),
            std::string::npos);
  EXPECT_NE(read("node,vdd_v,capacitance_rel,leakage_current_rel,source,year\n")
                .find("n.csv:1: year: unknown column"),
            std::string::npos);
  EXPECT_NE(read("node,vdd_v,capacitance_rel,source\n").find("leakage_current_rel: missing column"),
            std::string::npos);
  EXPECT_NE(read("node,vdd_v,capacitance_rel,leakage_current_rel,source\nA,1,1,1,x\nA,1,1,1,x\n")
                .find("n.csv:3: node: node \"A\" appears twice"),
            std::string::npos);
}

TEST(PortNode, ShippedTableReadsAndCitesEveryRow) {
  const NodeTable table = ReadNodeTable(kSpecs + "/technology_nodes.csv");
  for (const char* node : {"16nm", "12nm", "11nm", "7nm", "5nm"}) {
    ASSERT_NE(table.Find(node), nullptr) << node;
    EXPECT_FALSE(table.Find(node)->source.empty());
  }
  NodePortOptions options;
  options.from_node = "12nm";
  options.to_node = "16nm";
  const NodeScaling s = MakeNodeScaling(&table, options);
  // (1 / 0.6875) (0.80 / 0.75)^2 and (0.80 / 0.75) / 0.6875.
  EXPECT_NEAR(s.dynamic_factor, 1.0 / 0.6875 * (0.8 / 0.75) * (0.8 / 0.75), 1e-15);
  EXPECT_NEAR(s.static_factor, (0.8 / 0.75) / 0.6875, 1e-15);
}

TEST(PortNode, ModelScalingTouchesDynamicAndStaticTermsOnly) {
  NodeScaling s;
  s.dynamic_factor = 1.5;
  s.static_factor = 2.0;
  const PowerModel base = BaseModel();
  const PowerModel out = ScaleModelToNode(base, s);
  for (size_t i = 0; i < base.component_w_per_mhz.size(); ++i) {
    EXPECT_DOUBLE_EQ(out.component_w_per_mhz[i], 1.5 * base.component_w_per_mhz[i]);
  }
  EXPECT_DOUBLE_EQ(out.idle_dyn_w_per_mhz[1], 1.5 * 0.003);
  EXPECT_DOUBLE_EQ(out.static_w[0], 80.0);
  EXPECT_EQ(out.voltage_rel, base.voltage_rel);
  s.board_constant_factor = 1.7;
  EXPECT_THROW(ScaleModelToNode(base, s), OptionError);
}

const char kSheet[] =
    "kernel_id,benchmark,IBP_W,FPUP_W,CONSTP_W,STATICP_W,IDLE_COREP_W,sim_total_W,hw_total_W,"
    "rel_error,error_W\n"
    "k1,b1,1.5,2.5,30,20,1,55,50,0.1,5\n"
    "k2,b2,0.5,0,30,10,2,52.5,60,-0.125,-7.5\n";  // 10 W beyond the columns: a remainder

TEST(PortNode, EstimateTablesReadBothFormsAndRoundTrip) {
  const std::string dir = ScratchDir();
  const EstimateTable t = ReadEstimateTable(WriteFile(dir + "/s.csv", kSheet));
  EXPECT_EQ(t.components, (std::vector<std::string>{"IBP", "FPUP"}));
  EXPECT_EQ(t.measured_w, (std::vector<double>{50, 60}));
  EXPECT_EQ(t.remainder_w, (std::vector<double>{0, 10}));
  EXPECT_EQ(t.const_w, (std::vector<double>{30, 40}));
  EXPECT_DOUBLE_EQ(t.TotalW(1), 52.5);
  const std::string tidy = EstimateTableToCsv(t);
  EXPECT_EQ(tidy.substr(0, tidy.find('\n')),
            "kernel,measured_w,const_w,static_w,idle_w,IBP_w,FPUP_w");
  const EstimateTable back = ReadEstimateTable(WriteFile(dir + "/t.csv", tidy));
  EXPECT_EQ(back.components, t.components);
  EXPECT_EQ(back.dynamic_w, t.dynamic_w);
  EXPECT_EQ(back.const_w, t.const_w);
  EXPECT_EQ(back.measured_w, t.measured_w);
  const EstimateTable mw = ReadEstimateTable(
      WriteFile(dir + "/m.csv", "kernel,const_mw,static_w,idle_w,X_mw\nk,30000,1,1,500\n"));
  EXPECT_EQ(mw.const_w[0], 30.0);
  EXPECT_EQ(mw.dynamic_w[0][0], 0.5);
  EXPECT_TRUE(mw.measured_w.empty());
  EXPECT_NE(
      InputErrorOf([&] {
        ReadEstimateTable(WriteFile(dir + "/bad.csv", "kernel,const_w,static_w,X_w\nk,1,1,1\n"));
      }).find("idle_w: missing column"),
      std::string::npos);
  EXPECT_NE(InputErrorOf([&] {
              ReadEstimateTable(
                  WriteFile(dir + "/bad.csv", "kernel,const_w,static_w,idle_w,X_w\nk,1,-1,1,1\n"));
            }).find("bad.csv:2: static_w: -1 must be a power >= 0"),
            std::string::npos);
  EXPECT_NE(InputErrorOf([&] {
              ReadEstimateTable(
                  WriteFile(dir + "/bad.csv", "kernel,const_w,static_w,idle_w,X\nk,1,1,1,1\n"));
            }).find("bad.csv:1: X: no power unit"),
            std::string::npos);
}

TEST(PortNode, ScalingAndDerivedFactorsAgree) {
  const std::string dir = ScratchDir();
  const EstimateTable t = ReadEstimateTable(WriteFile(dir + "/s.csv", kSheet));
  NodeScaling s;
  s.dynamic_factor = 1.1;
  s.static_factor = 0.9;
  s.idle_sm_factor = 3.0;
  s.board_constant_factor = 1.7;
  EstimateTable scaled;
  const NodeEstimatesReport self = PortEstimatesToNode(t, s, nullptr, &scaled);
  EXPECT_DOUBLE_EQ(scaled.dynamic_w[0][1], 2.75);
  EXPECT_DOUBLE_EQ(scaled.const_w[1], 68.0);  // the remainder is board constant too
  EXPECT_DOUBLE_EQ(self.mape_before_pct, 100.0 * (5.0 / 50 + 7.5 / 60) / 2);
  EXPECT_EQ(self.kernels_with_remainder, 1);
  // The scaled table as someone else's version: every term's factor is found again.
  const NodeEstimatesReport check = PortEstimatesToNode(t, s, &scaled, &scaled);
  ASSERT_EQ(check.checks.size(), 4u);
  for (const TermCheck& c : check.checks) {
    EXPECT_TRUE(c.reproduced) << EstimateTermName(c.term);
  }
  EXPECT_EQ(check.max_abs_total_diff_w, 0.0);
  // Another factor on one term is caught.
  NodeScaling other = s;
  other.static_factor = 1.0;
  EstimateTable unused;
  const NodeEstimatesReport miss = PortEstimatesToNode(t, other, &scaled, &unused);
  EXPECT_FALSE(miss.checks[1].reproduced);
  EXPECT_TRUE(miss.checks[1].reference_single_factor);
  EXPECT_DOUBLE_EQ(miss.checks[1].reference_min, 0.9);
}

// ---------------------------------------------------------------------------------------
// GTX Titan X -> GTX 980 (TPDS §4.6, Table 5). The base model is trained on the Titan X's
// 7-component microbenchmarks without CF (the GTX 980 files have SP, INT, DP, SFU, L2, Shared,
// DRAM and no CF), ported with every count ratio 2/3, and validated on the GTX 980's
// microbenchmarks (its real-benchmark measurements, behind the paper's 7.66 / 7.67 / 2.80%, are
// not public). Measured here (joint solver, Huber loss; wattcal 0.1.0):
//   with the idle-power correction (75.541 W from the Titan X idle benchmark -> 65 W, TPDS):
//     fixed 11.36%, DVFS 8.20%, scaling 6.90%
//   with the constant terms scaled by the counts:  25.79%, 20.85%, 7.20%
// The paper's ordering holds (correction << none for fixed and DVFS, little change for
// scaling); the scaling error is larger than the paper's because at 1164 MHz the 980
// (clocked through nvidia-settings offsets, TPDS §4.3: voltage constant) draws ~16% less than
// the Titan X's voltage curve implies.

double Mape(const PowerModel& model, const Corpus& heldout, PredictMode mode) {
  return ComputeErrorMetrics(PredictHeldout(model, heldout, mode)).mape_pct;
}

TEST(PortRealData, GtxTitanXModelPortedToTheGtx980) {
  WATTCAL_REQUIRE_DATASETS();
  std::vector<std::string> dropped;
  const Corpus titan_x =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp.csv"));
  const GpuDescription base_gpu = ReadGpuDescription(kSpecs + "/gpus/gtx_titan_x.json");
  const GpuDescription target_gpu = ReadGpuDescription(kSpecs + "/gpus/gtx_980.json");
  const Corpus train = ProjectCorpus(titan_x, target_gpu.ToLayout(), &dropped);
  EXPECT_EQ(dropped, (std::vector<std::string>{"CF"}));
  EXPECT_EQ(IdlePowerAtDefaultW(train), 75.541);  // TPDS: 75 W

  CalibrationOptions dvfs_options;
  dvfs_options.show_progress = false;
  CalibrationOptions fixed_options = dvfs_options;
  fixed_options.method = FitMethod::kFixed;
  fixed_options.loss =
      DefaultLoss(fixed_options.method, fixed_options.solver);  // L2, as --method fixed
  const PowerModel dvfs = Calibrate(train, dvfs_options);
  const PowerModel fixed = Calibrate(train, fixed_options);
  const Corpus g980_fixed = ReadCorpus(Dataset("gpmtool_tpds2019/gtx_980/micro_fixed_6comp.csv"));
  const Corpus g980_dvfs = ReadCorpus(Dataset("gpmtool_tpds2019/gtx_980/micro_dvfs_6comp.csv"));

  GpuPortOptions idle;
  idle.constant_scaling = ConstantScaling::kIdlePower;
  idle.base_idle_w = IdlePowerAtDefaultW(train);
  idle.target_idle_w = 65.0;  // TPDS §4.6: measured idle power of the GTX 980
  GpuPortReport report;
  const PowerModel dvfs_idle = PortModelToGpu(dvfs, base_gpu, target_gpu, idle, &report);
  for (const PortedCoefficient& c : report.components) {
    EXPECT_EQ(c.factor, 2.0 / 3.0) << c.name;  // 16/24 SMs, 8/12 L2 banks, 256/384 bits
  }
  EXPECT_DOUBLE_EQ(report.constant_terms[0].factor, 65.0 / 75.541);
  const PowerModel fixed_idle = PortModelToGpu(fixed, base_gpu, target_gpu, idle, nullptr);
  const PowerModel dvfs_counts = PortModelToGpu(dvfs, base_gpu, target_gpu, {}, nullptr);
  const PowerModel fixed_counts = PortModelToGpu(fixed, base_gpu, target_gpu, {}, nullptr);

  const double with_fixed = Mape(fixed_idle, g980_fixed, PredictMode::kFixed);
  const double with_dvfs = Mape(dvfs_idle, g980_dvfs, PredictMode::kDvfs);
  const double with_scaling = Mape(dvfs_idle, g980_dvfs, PredictMode::kScaling);
  const double without_fixed = Mape(fixed_counts, g980_fixed, PredictMode::kFixed);
  const double without_dvfs = Mape(dvfs_counts, g980_dvfs, PredictMode::kDvfs);
  const double without_scaling = Mape(dvfs_counts, g980_dvfs, PredictMode::kScaling);
  // The figures themselves are recorded once, in expected/results.csv (port-gtx980), and checked
  // by HeadlineFigures; here, what the idle correction must do to them.
  EXPECT_LT(with_fixed, without_fixed / 2);
  EXPECT_LT(with_dvfs, without_dvfs / 2);
  EXPECT_LT(with_scaling, without_scaling);
}

// AccelWattch's sheet holds the Pascal SASS SIM estimates before and after the authors'
// technology scaling. What they applied, derived from the two tables: every dynamic component
// x82/77 = 1.0649350649... exactly, the idle SMs x3.8535714142..., the constant term x1, and
// the static term no single factor (per-kernel ratios 0.9897 .. 1.0099: a separate simulator
// output, printed to 6 digits like the raw ones). The node table (12nm at the 11/10 row ->
// 16nm) gives dynamic x1.655 and static x1.552: it does not reproduce them.
TEST(PortRealData, PascalSheetFactorsDerivedAndNotReproducedByTheNodeTable) {
  WATTCAL_REQUIRE_DATASETS();
  const EstimateTable before =
      ReadEstimateTable(Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_unscaled.csv"));
  const EstimateTable after =
      ReadEstimateTable(Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_scaled.csv"));
  const std::vector<ColumnFactor> factors = DeriveColumnFactors(before, after);
  int dynamic_columns = 0;
  for (const ColumnFactor& f : factors) {
    if (f.term == EstimateTerm::kDynamic && f.kernels > 0) {
      ++dynamic_columns;
      EXPECT_TRUE(f.single_factor()) << f.column;
      EXPECT_NEAR(f.mean, 82.0 / 77.0, 1e-15) << f.column;
    } else if (f.term == EstimateTerm::kIdleSm) {
      EXPECT_TRUE(f.single_factor());
      EXPECT_NEAR(f.mean, 3.853571414214524, 1e-14);
    } else if (f.term == EstimateTerm::kStatic) {
      EXPECT_FALSE(f.single_factor());
      EXPECT_NEAR(f.min, 0.98969, 1e-5);
      EXPECT_NEAR(f.max, 1.00993, 1e-5);
    } else if (f.term == EstimateTerm::kConstant) {
      EXPECT_EQ(f.mean, 1.0);
    }
  }
  EXPECT_EQ(dynamic_columns, 19);

  const NodeTable table = ReadNodeTable(kSpecs + "/technology_nodes.csv");
  NodePortOptions from_table;
  from_table.from_node = "12nm";
  from_table.to_node = "16nm";
  EstimateTable scaled;
  const NodeEstimatesReport node =
      PortEstimatesToNode(before, MakeNodeScaling(&table, from_table), &after, &scaled);
  EXPECT_FALSE(node.checks[0].reproduced);              // dynamic
  EXPECT_FALSE(node.checks[1].reproduced);              // static
  EXPECT_FALSE(node.checks[2].reproduced);              // idle SMs
  EXPECT_TRUE(node.checks[3].reproduced);               // constant: x1 both
  EXPECT_NEAR(node.mape_before_pct, 12.8377, 1e-3);     // sheet: 12.84%
  EXPECT_NEAR(node.mape_reference_pct, 10.9873, 1e-3);  // sheet: 10.99%
  EXPECT_GT(node.mape_after_pct, 30.0);                 // over-scaled: 37.0%

  // The sheet's own factors, given explicitly, reproduce every term but the static one.
  NodePortOptions given;
  given.dynamic_factor = 82.0 / 77.0;
  given.static_factor = 1.0;
  given.idle_sm_factor = 3.853571414214524;
  const NodeEstimatesReport sheet =
      PortEstimatesToNode(before, MakeNodeScaling(nullptr, given), &after, &scaled);
  EXPECT_TRUE(sheet.checks[0].reproduced);
  EXPECT_FALSE(sheet.checks[1].reproduced);
  EXPECT_TRUE(sheet.checks[2].reproduced);
  EXPECT_TRUE(sheet.checks[3].reproduced);
  EXPECT_LT(sheet.max_abs_total_diff_w, 0.35);  // the static term's run-to-run difference
  EXPECT_NEAR(sheet.mape_after_pct, 10.96, 0.01);
}

// Turing (AccelWattch §7.1: "constant power for Turing at 1.7x higher than Volta's"): the
// sheet's CONSTP_W column holds Volta's 32.3252 W, and every total exceeds its columns by the
// same 22.8995 W, so the board constant it used is 55.2248 W = 1.708x, not exactly 1.7x.
TEST(PortRealData, TuringBoardConstantIsAbout1p7xVoltas) {
  WATTCAL_REQUIRE_DATASETS();
  const EstimateTable turing =
      ReadEstimateTable(Dataset("accelwattch/turing_rtx2060s/per_kernel_sass_sim.csv"));
  const EstimateTable volta =
      ReadEstimateTable(Dataset("accelwattch/volta_qv100/per_kernel_sass_sim.csv"));
  ASSERT_EQ(turing.num_kernels(), 26);
  for (int k = 0; k < turing.num_kernels(); ++k) {
    EXPECT_NEAR(turing.remainder_w[k], 22.899538364851168, 1e-9) << turing.kernels[k];
    EXPECT_EQ(volta.remainder_w[k], 0.0);
  }
  const double factor = turing.const_w[0] / volta.const_w[0];
  EXPECT_NEAR(factor, 1.70841, 1e-5);
}

// ---------------------------------------------------------------------------------------

TEST(PortStage, GpuProjectAndNodeWriteOutputsManifestsAndRerunByteIdentically) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string titan_x = Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp.csv");
  const std::vector<std::string> project = {
      "project", "--corpus",         titan_x, "--target-gpu", kSpecs + "/gpus/gtx_980.json",
      "--out",   dir + "/train6.csv"};
  const CommandResult p = RunStage("wattcal-port", project);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("dropped: CF"), std::string::npos) << p.output;
  // A fixed model trains in milliseconds: port it with the idle correction.
  const CommandResult c =
      RunStage("wattcal-calibrate",
               {"--method", "fixed", "--train", dir + "/train6.csv", "--out", dir + "/fixed.json"});
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const std::vector<std::string> gpu = {"gpu",
                                        "--model",
                                        dir + "/fixed.json",
                                        "--base-gpu",
                                        kSpecs + "/gpus/gtx_titan_x.json",
                                        "--target-gpu",
                                        kSpecs + "/gpus/gtx_980.json",
                                        "--constant-scaling",
                                        "idle-power",
                                        "--base-idle-from",
                                        dir + "/train6.csv",
                                        "--target-idle-w",
                                        "65",
                                        "--out",
                                        dir + "/ported.json",
                                        "--report",
                                        dir + "/port.json"};
  const CommandResult g = RunStage("wattcal-port", gpu);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("idle 75.541 W -> 65 W"), std::string::npos) << g.output;
  const std::string model = ReadFile(dir + "/ported.json");
  const std::string report = ReadFile(dir + "/port.json");
  const std::string manifest = ReadFile(testing::ProvenancePath(dir + "/ported.json"));
  EXPECT_EQ(ReadModel(dir + "/ported.json").layout.ComponentNames().size(), 7u);
  EXPECT_EQ(nlohmann::json::parse(report)["constant_scaling"], "idle-power");
  EXPECT_EQ(nlohmann::json::parse(manifest)["inputs"].size(), 4u);  // model, 2 GPUs, idle corpus
  ASSERT_EQ(RunStage("wattcal-port", gpu).exit_code, 0);
  EXPECT_EQ(ReadFile(dir + "/ported.json"), model);
  EXPECT_EQ(ReadFile(dir + "/port.json"), report);
  EXPECT_EQ(ReadFile(testing::ProvenancePath(dir + "/ported.json")), manifest);

  const std::vector<std::string> node = {
      "node",
      "--estimates",
      Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_unscaled.csv"),
      "--reference",
      Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_scaled.csv"),
      "--node-table",
      kSpecs + "/technology_nodes.csv",
      "--from-node",
      "12nm",
      "--to-node",
      "16nm",
      "--out",
      dir + "/pascal.csv",
      "--report",
      dir + "/node.json",
      "--totals-out",
      dir + "/totals.csv"};
  const CommandResult n = RunStage("wattcal-port", node);
  ASSERT_EQ(n.exit_code, 0) << n.output;
  EXPECT_NE(n.output.find("NOT reproduced"), std::string::npos) << n.output;
  const std::string scaled = ReadFile(dir + "/pascal.csv");
  const std::string node_report = ReadFile(dir + "/node.json");
  ASSERT_EQ(RunStage("wattcal-port", node).exit_code, 0);
  EXPECT_EQ(ReadFile(dir + "/pascal.csv"), scaled);
  EXPECT_EQ(ReadFile(dir + "/node.json"), node_report);
  EXPECT_TRUE(HasProvenance(dir + "/node.json"));
  const EstimateTable back = ReadEstimateTable(dir + "/pascal.csv");
  EXPECT_EQ(back.num_kernels(), 22);
  // The totals file is an estimate input of wattcal-compare.
  const WorkloadPower totals = ReadWorkloadPower(dir + "/totals.csv");
  ASSERT_EQ(totals.size(), 22);
  EXPECT_EQ(totals.power_w[0], back.TotalW(0));
}

TEST(PortStage, OptionAndInputErrorsMapToExitCodesAndWriteNothing) {
  const std::string dir = ScratchDir();
  const std::string model_path = WriteFile(dir + "/m.json", ModelToJson(BaseModel()));
  const std::string titan_x = kSpecs + "/gpus/gtx_titan_x.json";
  const std::string g980 = kSpecs + "/gpus/gtx_980.json";
  // Both the idle power and a corpus to take it from: exit 1, naming the flags.
  const CommandResult both = RunStage(
      "wattcal-port", {"gpu", "--model", model_path, "--base-gpu", titan_x, "--target-gpu", g980,
                       "--constant-scaling", "idle-power", "--base-idle-w", "75", "--target-idle-w",
                       "65", "--target-idle-from", model_path, "--out", dir + "/o.json"});
  testing::ExpectRefused(both, 1, {"--target-idle-w or --target-idle-from, not both"},
                         {dir + "/o.json"});
  const CommandResult missing = RunStage(
      "wattcal-port", {"gpu", "--model", model_path, "--base-gpu", titan_x, "--target-gpu", g980,
                       "--constant-scaling", "idle-power", "--out", dir + "/o.json"});
  testing::ExpectRefused(missing, 1, {"--base-idle-w"}, {dir + "/o.json"});
  // A target description without its L2 bank count: exit 2 naming the file and field.
  std::string text = ReadFile(g980);
  const size_t at = text.find("  \"l2_banks\": 8,\n");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, std::string("  \"l2_banks\": 8,\n").size());
  const std::string no_banks = WriteFile(dir + "/g980.json", text);
  // A base model whose layout is the 980's (a fixed model with those components).
  PowerModel base = BaseModel();
  base.layout = ReadGpuDescription(g980).ToLayout();
  base.layout.domains[0].default_freq_mhz = 975;
  base.layout.domains[1].default_freq_mhz = 3505;
  base.freq_levels_mhz = {{975}, {3505}};
  base.voltage_rel = {{1.0}, {1.0}};
  base.component_w_per_mhz.assign(7, 0.01);
  const std::string m980 = WriteFile(dir + "/m980.json", ModelToJson(base));
  const CommandResult input =
      RunStage("wattcal-port", {"gpu", "--model", m980, "--base-gpu", titan_x, "--target-gpu",
                                no_banks, "--out", dir + "/out/o.json"});
  EXPECT_EQ(input.exit_code, 2) << input.output;
  EXPECT_NE(input.output.find("g980.json: l2_banks: missing"), std::string::npos) << input.output;
  EXPECT_FALSE(FileExists(dir + "/out/o.json"));
  EXPECT_FALSE(HasProvenance(dir + "/out/o.json"));
  // node: neither --estimates nor --model.
  const CommandResult none =
      RunStage("wattcal-port",
               {"node", "--dynamic-factor", "1", "--static-factor", "1", "--out", dir + "/o.csv"});
  testing::ExpectRefused(none, 1, {"--estimates FILE or --model FILE"}, {dir + "/o.csv"});
}

}  // namespace
}  // namespace wattcal
