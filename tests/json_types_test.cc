// Tests of the per-type JSON conversions (nlohmann's to_json, found by ADL) and of the one
// whole-file JSON reader: the model files of a baseline run (tests/fixtures/json, copied from
// `make -f Makefile.runs all` at main 3e67f8c) read and written back to the same bytes, so the
// written key order is the order the files had; every other converted type's keys in the order
// its writer had before the conversion; ReadJsonFile's messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "accelwattch/constant_power.h"
#include "accelwattch/idle_power.h"
#include "accelwattch/scaling_model.h"
#include "accelwattch/static_power.h"
#include "clocks/idle_constant.h"
#include "clocks/vf_model.h"
#include "compare/relative_power.h"
#include "io/sweep.h"
#include "model/model_io.h"
#include "perf/perf_validation.h"
#include "port/estimate_table.h"
#include "port/gpu_port.h"
#include "port/node_port.h"
#include "port/technology_node.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/output.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ReadFile;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Fixture(const std::string& name) {
  return std::string(WATTCAL_SOURCE_DIR) + "/tests/fixtures/json/" + name;
}

// The keys of an object, in the order it holds them.
template <class Json>
std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.push_back(it.key());
  return keys;
}

using Strings = std::vector<std::string>;

TEST(JsonTypes, PowerModelFileReadAndWrittenBackIsTheSameBytes) {
  // h200's model has every optional part: training_range, coefficient_ci95 (--bootstrap).
  const std::string path = Fixture("power_model_h200.json");
  const std::string text = ReadFile(path);
  const PowerModel model = ReadModel(path);
  const nlohmann::ordered_json j = model;
  EXPECT_EQ(Keys(j), Keys(nlohmann::ordered_json::parse(text)));
  EXPECT_EQ(Keys(j),
            (Strings{"format", "version", "wattcal_version", "method", "trained_on", "layout",
                     "freq_levels_mhz", "voltage_rel", "static_w", "idle_dyn_w_per_mhz",
                     "component_w_per_mhz", "power_limit_w", "training_range", "training_notes",
                     "coefficient_ci95", "component_trust", "fit"}));
  EXPECT_EQ(j.dump(2) + "\n", text);
  EXPECT_EQ(ModelToJson(model), text);
  EXPECT_EQ(nlohmann::ordered_json(model.fit), j["fit"]);
  EXPECT_EQ(nlohmann::ordered_json(model.coefficient_ci95), j["coefficient_ci95"]);
  EXPECT_EQ(Keys(nlohmann::ordered_json(model.coefficient_ci95)),
            (Strings{"bootstrap_replicates", "seed", "static_w", "idle_dyn_w_per_mhz",
                     "component_w_per_mhz"}));
}

TEST(JsonTypes, AccelWattchModelFileReadAndWrittenBackIsTheSameBytes) {
  // volta-dynamic's model is a whole AccelWattch Eq. 12 model: energies and fixed terms too.
  const std::string path = Fixture("accelwattch_model_volta.json");
  const std::string text = ReadFile(path);
  const AccelWattchModel model = ReadAccelWattchModel(path);
  ASSERT_TRUE(model.has_terms);
  const nlohmann::ordered_json j = model;
  const nlohmann::ordered_json file = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(Keys(j), Keys(file));
  EXPECT_EQ(j.dump(2) + "\n", text);
  EXPECT_EQ(AccelWattchModelToJson(model), text);
  EXPECT_EQ(nlohmann::ordered_json(model.energies), file["energies"]);
  EXPECT_EQ(nlohmann::ordered_json(model.fixed), file["fixed_terms"]);
  EXPECT_EQ(Keys(nlohmann::ordered_json(model.energies)),
            (Strings{"source", "reference_f_core_mhz", "components"}));
}

TEST(JsonTypes, VfModelFileReadAndWrittenBackIsTheSameBytes) {
  const std::string path = Fixture("vf_model_a100.json");
  const std::string text = ReadFile(path);
  const VfModel model = VfModelFromJson(ReadJsonFile(path, "the vf model"), path);
  const nlohmann::json j = model;
  EXPECT_EQ(DumpJson(j), text);
  const VfModel back = VfModelFromJson(j, path);
  EXPECT_EQ(back.clocks_mhz, model.clocks_mhz);
  EXPECT_EQ(back.v_rel, model.v_rel);
  EXPECT_EQ(back.activity_w_per_mhz, model.activity_w_per_mhz);
  EXPECT_EQ(back.static_w, model.static_w);
}

TEST(JsonTypes, VfModelAndIdleConstantWriteANonFiniteNumberAsNull) {
  // What the writers did before, by writing the JSON and parsing it back: null, not an
  // internal error in DumpJson.
  VfModel m;
  m.clocks_mhz = {1000.0};
  m.v_rel = {1.0};
  m.activity_w_per_mhz["w"] = kNaN;
  m.static_w = kNaN;
  const nlohmann::json j = m;
  EXPECT_TRUE(j["static_w"].is_null());
  EXPECT_TRUE(j["activity_w_per_mhz"]["w"].is_null());
  EXPECT_FALSE(j.contains("power_limit_w"));
  EXPECT_NO_THROW(DumpJson(j));

  IdleConstantFit fit;  // its AccelWattch Eq. 3 fit left NaN
  fit.points = 5;
  const nlohmann::json f = fit;
  EXPECT_TRUE(f["accelwattch_eq3"]["p_const_w"].is_null());
  EXPECT_TRUE(f["points"].is_number_integer());
  EXPECT_NO_THROW(DumpJson(f));
}

TEST(JsonTypes, PortAndCompareRowsKeepTheirWriterOrder) {
  EXPECT_EQ(Keys(nlohmann::ordered_json(ColumnFactor())),
            (Strings{"column", "term", "kernels", "min", "max", "mean", "single_factor"}));
  EXPECT_EQ(Keys(nlohmann::ordered_json(TermCheck())),
            (Strings{"term", "applied_factor", "columns", "reference_min", "reference_max",
                     "reference_single_factor", "reproduced"}));
  EXPECT_EQ(Keys(nlohmann::ordered_json(TechnologyNode())),
            (Strings{"node", "label", "vdd_v", "capacitance_rel", "leakage_current_rel", "source",
                     "line"}));
  EXPECT_EQ(Keys(nlohmann::ordered_json(NodeScaling())),
            (Strings{"from_node", "to_node", "dynamic_factor", "dynamic_factor_from",
                     "static_factor", "static_factor_from", "idle_sm_factor", "idle_sm_factor_from",
                     "board_constant_factor"}));
  EXPECT_EQ(Keys(NodeScalingToJson(NodeScaling(), nullptr)),
            Keys(nlohmann::ordered_json(NodeScaling())));
  EXPECT_EQ(Keys(nlohmann::ordered_json(PortedCoefficient())),
            (Strings{"name", "domain", "scales_with", "base_count", "target_count", "factor",
                     "base_value", "target_value"}));
  GpuPortReport port;
  port.components.resize(2);
  const nlohmann::ordered_json p = port;
  EXPECT_EQ(p["components_w_per_mhz"].size(), 2u);
  EXPECT_TRUE(p["constant_terms"].is_array());
  EXPECT_EQ(Keys(p).front(), "base_gpu");

  RelativePowerComparison c;
  c.workloads.resize(1);
  const nlohmann::ordered_json cj = c;
  EXPECT_EQ(Keys(cj).front(), "definition");
  EXPECT_EQ(Keys(cj).back(), "per_workload");
  EXPECT_EQ(Keys(cj["per_workload"][0]),
            (Strings{"workload", "measured_a_w", "measured_b_w", "estimated_a_w", "estimated_b_w",
                     "measured_rel_pct", "estimated_rel_pct", "abs_diff_pp", "same_direction"}));
}

TEST(JsonTypes, OptionsSweepAndPerfValidationWriteEveryField) {
  const StaticPowerOptions s;
  EXPECT_EQ(nlohmann::json(s)["num_sms"], s.num_sms);
  EXPECT_EQ(nlohmann::json(s).size(), 8u);
  EXPECT_EQ(nlohmann::json(IdlePowerOptions()).size(), 6u);
  ConstantPowerOptions c;
  c.ci_method = ConstantCiMethod::kBootstrap;
  EXPECT_TRUE(nlohmann::json(c).contains("bootstrap_seed"));

  Sweep sweep;
  sweep.path = "s.csv";
  EXPECT_EQ(nlohmann::json(sweep), nlohmann::json({{"path", "s.csv"},
                                                   {"description_path", ""},
                                                   {"rows", 0},
                                                   {"skipped_rows", sweep.skipped_rows}}));

  PerfValidationReport v;
  ModelValidation m;
  m.model = "crisp";
  m.overall.points = 3;
  m.per_target.push_back({1000.0, TimeErrorSummary()});
  m.per_kernel.push_back({"k", TimeErrorSummary()});
  v.models.push_back(m);
  const nlohmann::json j = v;
  EXPECT_EQ(j["models"][0]["points"], 3);
  EXPECT_EQ(j["models"][0]["model"], "crisp");
  EXPECT_EQ(j["models"][0]["per_target"][0]["target_mhz"], 1000.0);
  EXPECT_EQ(j["models"][0]["per_kernel"][0]["kernel"], "k");
  EXPECT_TRUE(j.contains("excluded"));
}

TEST(JsonTypes, ReadJsonFileNamesTheFileAndTolerantReadingDiscards) {
  const std::string dir = ScratchDir();
  const std::string bad = WriteFile(dir + "/bad.json", "{\"a\": ");
  const std::string good = WriteFile(dir + "/good.json", "{\"a\": 1}");
  const std::string missing = dir + "/missing.json";
  EXPECT_EQ(ReadJsonFile(good, "the good file")["a"], 1);
  try {
    ReadJsonFile(missing, "the spec file");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open the spec file: "), std::string::npos)
        << e.what();
  }
  try {
    ReadJsonFile(bad, "the spec file");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    // The line of the offending byte, as every JSON reader names it.
    EXPECT_NE(std::string(e.what()).find(bad + ":1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("invalid JSON: parse error"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(ReadJsonFileOrDiscarded(missing).is_discarded());
  EXPECT_TRUE(ReadJsonFileOrDiscarded(bad).is_discarded());
  EXPECT_FALSE(ReadJsonFileOrDiscarded(bad).is_object());
  EXPECT_EQ(ReadJsonFileOrDiscarded(good)["a"], 1);
}

}  // namespace
}  // namespace wattcal
