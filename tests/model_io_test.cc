// Tests of the model writers and ReadModel: the authors' gpmTOOL reference models, exact
// round trips through both formats, and one bad input per validation rule.
#include "model/model_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/corpus_io.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/output.h"

namespace wattcal {
namespace {

using ::wattcal::testing::Dataset;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

// Hand-read facts of the reference model files (README section 1).
struct ReferenceModel {
  std::string file;
  std::string method;
  std::vector<size_t> levels_per_domain;
  std::vector<double> default_freq_mhz;
  int num_components;
  double first_coefficient;  // beta0 (core static)
  double last_coefficient;   // omega of DRAM
};

const std::vector<ReferenceModel>& ReferenceModels() {
  static const std::vector<ReferenceModel> models = {
      {"gpmtool_tpds2019/gtx_titan_x/ref_model_dvfs_11comp.csv",
       "dvfs",
       {16, 4},
       {975, 3505},
       12,
       7.326180314010544,
       0.015553777411951061},
      {"gpmtool_tpds2019/gtx_titan_x/ref_model_fixed_11comp.csv",
       "fixed",
       {1, 1},
       {975, 3505},
       12,
       0.0,
       0.01820430351818043},
      {"gpmtool_tpds2019/titan_xp/ref_model_dvfs_11comp.csv",
       "dvfs",
       {12, 2},
       {1404, 5705},
       12,
       0.998976811458823,
       0.012029038910332376},
      {"gpmtool_tpds2019/titan_xp/ref_model_fixed_11comp.csv",
       "fixed",
       {1, 1},
       {1404, 5705},
       12,
       0.0,
       0.012802743865158412},
      {"gpmtool_tpds2019/tesla_k40c/ref_model_dvfs_7comp.csv",
       "dvfs",
       {4, 1},
       {875, 3004},
       8,
       0.0,
       0.018956027733608546},
      {"gpmtool_tpds2019/tesla_k40c/ref_model_fixed_7comp.csv",
       "fixed",
       {1, 1},
       {875, 3004},
       8,
       0.0,
       0.022309884985371536},
  };
  return models;
}

// Exact equality of every field ReadModel restores.
void ExpectSameModel(const PowerModel& a, const PowerModel& b, bool compare_fit = true) {
  EXPECT_EQ(a.method, b.method);
  ASSERT_EQ(a.layout.num_domains(), b.layout.num_domains());
  for (int d = 0; d < a.layout.num_domains(); ++d) {
    EXPECT_EQ(a.layout.domains[d].name, b.layout.domains[d].name);
    EXPECT_EQ(a.layout.domains[d].default_freq_mhz, b.layout.domains[d].default_freq_mhz);
    EXPECT_EQ(a.layout.domains[d].components, b.layout.domains[d].components);
  }
  EXPECT_EQ(a.freq_levels_mhz, b.freq_levels_mhz);
  EXPECT_EQ(a.voltage_rel, b.voltage_rel);
  EXPECT_EQ(a.static_w, b.static_w);
  EXPECT_EQ(a.idle_dyn_w_per_mhz, b.idle_dyn_w_per_mhz);
  EXPECT_EQ(a.component_w_per_mhz, b.component_w_per_mhz);
  if (!compare_fit) return;
  EXPECT_EQ(a.trained_on, b.trained_on);
  const FitReport& f = a.fit;
  const FitReport& g = b.fit;
  EXPECT_EQ(f.solver, g.solver);
  EXPECT_EQ(f.loss, g.loss);
  EXPECT_EQ(f.loss_scale, g.loss_scale);
  EXPECT_EQ(f.residual, g.residual);
  EXPECT_EQ(f.converged, g.converged);
  EXPECT_EQ(f.iterations, g.iterations);
  EXPECT_EQ(f.initial_cost, g.initial_cost);
  EXPECT_EQ(f.final_cost, g.final_cost);
  EXPECT_EQ(g.time_s, 0.0);  // wall time is not written: reruns must be byte-identical
  EXPECT_EQ(f.termination, g.termination);
  EXPECT_EQ(f.train_rows, g.train_rows);
  EXPECT_EQ(f.train_benchmarks, g.train_benchmarks);
  EXPECT_EQ(f.train_rmse_w, g.train_rmse_w);
  EXPECT_EQ(f.train_mape_pct, g.train_mape_pct);
  EXPECT_EQ(f.train_max_ape_pct, g.train_max_ape_pct);
  EXPECT_EQ(f.train_r2, g.train_r2);
}

// A two-domain model whose numbers do not print exactly in few digits.
PowerModel AwkwardModel() {
  PowerModel model;
  model.method = FitMethod::kDvfs;
  model.layout.domains = {{"core", 975, {"SP ADD", "INT", "L2"}}, {"mem", 3505, {"DRAM"}}};
  model.freq_levels_mhz = {{595, 975, 1164.5}, {810, 3505}};
  model.voltage_rel = {{0.1 + 0.2, 1.0, 1.0 / 3.0 + 1.0}, {0.5, 1.0}};
  model.static_w = {7.326180314010544, -2.5e-300};  // negative coefficients are allowed
  model.idle_dyn_w_per_mhz = {0.021181844011137548, 1.0 / 7.0};
  // The last one: 17 significant digits near the coefficient bound (1e6, util/bounds.h).
  model.component_w_per_mhz = {0.1, 2.0 / 3.0, 1e-17, 123456.789123456789};
  model.trained_on = "gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv";
  model.fit.solver = ModelSolver::kAlternating;
  model.fit.loss = FitLoss::kHuber;
  model.fit.loss_scale = 0.05;
  model.fit.residual = "relative";
  model.fit.converged = true;
  model.fit.iterations = 37;
  model.fit.initial_cost = 1234.5678901234567;
  model.fit.final_cost = 1.0 / 9.0;
  model.fit.time_s = 0.123;
  model.fit.termination = "Function tolerance reached. |cost_change|/cost: 9.9e-13";
  model.fit.train_rows = 6528;
  model.fit.train_benchmarks = 102;
  model.fit.train_rmse_w = 3.3;
  model.fit.train_mape_pct = 2.2;
  model.fit.train_max_ape_pct = 11.1;
  model.fit.train_r2 = 0.987654321;
  return model;
}

// 1-based line of the first occurrence of `needle` in `text`.
int64_t LineOf(const std::string& text, const std::string& needle) {
  const size_t pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  return 1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(pos), '\n');
}

void ExpectInputError(const std::string& name, const std::string& content, int64_t line,
                      const std::string& field, const std::string& message_part) {
  SCOPED_TRACE(name);
  const std::string path = WriteFile(ScratchDir() + "/" + name, content);
  try {
    ReadModel(path);
    ADD_FAILURE() << name << ": expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(e.message().find(message_part), std::string::npos) << e.what();
  }
}

TEST(ModelIoGpmtool, ReadsEveryReferenceModel) {
  WATTCAL_REQUIRE_DATASETS();
  for (const ReferenceModel& ref : ReferenceModels()) {
    SCOPED_TRACE(ref.file);
    const PowerModel model = ReadModel(Dataset(ref.file));
    EXPECT_STREQ(FitMethodName(model.method), ref.method.c_str());
    ASSERT_EQ(model.layout.num_domains(), 2);
    EXPECT_EQ(model.DefaultFrequencies(), ref.default_freq_mhz);
    EXPECT_EQ(model.layout.num_components(), ref.num_components);
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(model.freq_levels_mhz[d].size(), ref.levels_per_domain[d]);
      // Voltages are relative to the default frequency's (gpmTOOL pins it to 1).
      double v = 0.0;
      ASSERT_TRUE(model.VoltageAt(d, ref.default_freq_mhz[d], &v));
      EXPECT_EQ(v, 1.0);
    }
    const std::vector<double> x = model.Coefficients();
    ASSERT_EQ(static_cast<int>(x.size()), 4 + ref.num_components);
    EXPECT_EQ(x.front(), ref.first_coefficient);
    EXPECT_EQ(x.back(), ref.last_coefficient);
    EXPECT_FALSE(model.fit.solver.has_value());
  }
}

TEST(ModelIoGpmtool, TitanXReferenceModelValues) {
  WATTCAL_REQUIRE_DATASETS();
  const PowerModel model =
      ReadModel(Dataset("gpmtool_tpds2019/gtx_titan_x/ref_model_dvfs_11comp.csv"));
  EXPECT_EQ(model.static_w[0], 7.326180314010544);
  EXPECT_EQ(model.static_w[1], 37.06114605001337);
  EXPECT_EQ(model.idle_dyn_w_per_mhz[0], 0.021181844011137548);
  EXPECT_EQ(model.idle_dyn_w_per_mhz[1], 0.006179155309201794);
  EXPECT_EQ(model.component_w_per_mhz[0], 0.06467771795022714);  // SP ADD
  double v = 0.0;
  ASSERT_TRUE(model.VoltageAt(0, 975, &v));
  EXPECT_EQ(v, 1.0);
  ASSERT_TRUE(model.VoltageAt(0, 1164, &v));
  EXPECT_EQ(v, 1.1272851);
  // README quirk: the memory voltage at 810 MHz sits on gpmTOOL's lower bound 0.5.
  ASSERT_TRUE(model.VoltageAt(1, 810, &v));
  EXPECT_EQ(v, 0.5);
  EXPECT_EQ(model.freq_levels_mhz[1], (std::vector<double>{810, 3300, 3505, 4005}));
}

TEST(ModelIoGpmtool, RoundTripIsExactForEveryReferenceModel) {
  WATTCAL_REQUIRE_DATASETS();
  for (const ReferenceModel& ref : ReferenceModels()) {
    SCOPED_TRACE(ref.file);
    const PowerModel model = ReadModel(Dataset(ref.file));
    const std::string csv = ModelToGpmtoolCsv(model);
    const PowerModel again = ReadModel(WriteFile(ScratchDir() + "/model.csv", csv));
    ExpectSameModel(model, again);
    // Header and frequency lines are written as gpmTOOL writes them.
    const std::string original = ReadFile(Dataset(ref.file));
    size_t end = 0;
    for (int k = 0; k < 6; ++k) end = original.find('\n', end) + 1;
    EXPECT_EQ(csv.substr(0, end), original.substr(0, end));
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  }
}

TEST(ModelIoGpmtool, SampleModelWithFp32NamesEqualsTheReference) {
  WATTCAL_REQUIRE_DATASETS();
  const PowerModel sample = ReadModel(Dataset("../samples/gpmtool/v2_model_gtxtitanx.csv"));
  const PowerModel ref =
      ReadModel(Dataset("gpmtool_tpds2019/gtx_titan_x/ref_model_dvfs_11comp.csv"));
  EXPECT_EQ(sample.layout.ComponentNames().front(), "FP32 ADD");
  EXPECT_EQ(ref.layout.ComponentNames().front(), "SP ADD");
  EXPECT_EQ(sample.layout.Mismatch(ref.layout), "");
  EXPECT_EQ(sample.Coefficients(), ref.Coefficients());
  EXPECT_EQ(sample.voltage_rel, ref.voltage_rel);
}

TEST(ModelIoGpmtool, LayoutMismatchBetween11And7Components) {
  WATTCAL_REQUIRE_DATASETS();
  const PowerModel model =
      ReadModel(Dataset("gpmtool_tpds2019/gtx_titan_x/ref_model_dvfs_11comp.csv"));
  const Corpus seven =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/real_power_allF_7comp.csv"));
  const std::string mismatch = model.layout.Mismatch(seven.layout);
  EXPECT_NE(mismatch, "");
  EXPECT_NE(mismatch.find("11 component(s) in the core domain here, 7 there"), std::string::npos)
      << mismatch;
  const Corpus eleven =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/DERIVED_real_power_allF_11comp.csv"));
  EXPECT_EQ(model.layout.Mismatch(eleven.layout), "");
}

TEST(ModelIoGpmtool, ToleratesOneTrailingComma) {
  const std::string text =
      "2\n975,3505\n1,1\nSP,DRAM\n595,975\n3505,\n1.5,2.5,0.25,0.125,0.0625,0.03125,\n"
      "0.75,1.0\n1.0\n";
  const PowerModel model = ReadModel(WriteFile(ScratchDir() + "/m.csv", text));
  EXPECT_EQ(model.method, FitMethod::kDvfs);
  EXPECT_EQ(model.Coefficients(), (std::vector<double>{1.5, 2.5, 0.25, 0.125, 0.0625, 0.03125}));
  EXPECT_EQ(model.freq_levels_mhz[1], (std::vector<double>{3505}));
}

TEST(ModelIoGpmtool, NonIntegralFrequenciesAndOneDomainRoundTrip) {
  PowerModel model;
  model.method = FitMethod::kDvfs;
  model.layout.domains = {{"core", 1200.5, {"SP", "INT"}}};
  model.freq_levels_mhz = {{135.25, 1200.5, 1402}};
  model.voltage_rel = {{0.8, 1.0, 1.1}};
  model.SetCoefficients({3.0, 0.01, 0.1 / 3.0, -0.02});
  const std::string csv = ModelToGpmtoolCsv(model);
  EXPECT_EQ(csv.substr(0, csv.find("\n", csv.find("SP,INT\n") + 7) + 1),
            "1\n1200.5\n2\nSP,INT\n135.25,1200.5,1402\n");
  ExpectSameModel(model, ReadModel(WriteFile(ScratchDir() + "/m.csv", csv)), false);
  ExpectSameModel(model, ReadModel(WriteFile(ScratchDir() + "/m.json", ModelToJson(model))));
}

TEST(ModelIoGpmtool, BadInputsNameFileLineAndField) {
  const std::string h = "2\n975,3505\n1,1\nSP,DRAM\n";
  const std::string levels = "595,975\n3505\n";
  const std::string coefficients = "1,2,0.1,0.2,0.3,0.4\n";
  const std::string volts = "0.9,1.0\n1.0\n";
  ExpectInputError("empty.csv", "", 1, "", "empty");
  ExpectInputError("domains.csv", "3\n1,2,3\n1,1,1\nA,B,C\n", 1, "header line 1", "1 or 2");
  ExpectInputError("names.csv", "2\n975,3505\n1,1\nSP\n", 4, "header line 4", "names 1");
  ExpectInputError("levels_order.csv", h + "975,595\n3505\n" + coefficients + volts, 5,
                   "freq_levels_mhz[core]", "strictly increasing");
  ExpectInputError("levels_zero.csv", h + levels.substr(0, 8) + "0\n" + coefficients + volts, 6,
                   "freq_levels_mhz[mem]", "> 0");
  ExpectInputError("coefficient_count.csv", h + levels + "1,2,0.1,0.2,0.3\n" + volts, 7,
                   "coefficients", "expected 6 coefficients");
  ExpectInputError("coefficient_nan.csv", h + levels + "1,2,0.1,0.2,nan,0.4\n" + volts, 7,
                   "component_w_per_mhz[SP]", "finite");
  ExpectInputError("coefficient_text.csv", h + levels + "1,x,0.1,0.2,0.3,0.4\n" + volts, 7,
                   "static_w[mem]", "'x'");
  ExpectInputError("voltage_count.csv", h + levels + coefficients + "1.0\n1.0\n", 8,
                   "voltage_rel[core]", "1 voltages for 2 frequency levels");
  ExpectInputError("voltage_zero.csv", h + levels + coefficients + "0.9,1.0\n0\n", 9,
                   "voltage_rel[mem]", "> 0");
  ExpectInputError("truncated.csv", h + levels + coefficients + "0.9,1.0\n", 8, "voltage_rel[mem]",
                   "ends after this line");
  ExpectInputError("extra_line.csv", h + levels + coefficients + volts + "1,2\n", 10, "",
                   "unexpected line");
  // Negative coefficients are a fit's business, not a format error.
  const PowerModel negative = ReadModel(
      WriteFile(ScratchDir() + "/neg.csv", h + levels + "-1,2,0.1,0.2,0.3,-0.4\n" + volts));
  EXPECT_EQ(negative.static_w[0], -1.0);
  EXPECT_EQ(negative.component_w_per_mhz[1], -0.4);
}

TEST(ModelIoJson, RoundTripIsExact) {
  const PowerModel model = AwkwardModel();
  const std::string json = ModelToJson(model);
  const PowerModel again = ReadModel(WriteFile(ScratchDir() + "/model.json", json));
  ExpectSameModel(model, again);
  // Writing again gives the same bytes.
  EXPECT_EQ(ModelToJson(again), json);
}

TEST(ModelIoJson, WritesVersionedSelfDescribingJsonInLayoutOrder) {
  const std::string json = ModelToJson(AwkwardModel());
  const nlohmann::json j = nlohmann::json::parse(json);
  EXPECT_EQ(j["format"], "wattcal-power-model");
  EXPECT_EQ(j["version"], PowerModel::kFormatVersion);
  EXPECT_EQ(j["wattcal_version"], WattcalVersion());
  EXPECT_EQ(j["method"], "dvfs");
  EXPECT_EQ(j["layout"]["domains"][1]["name"], "mem");
  EXPECT_EQ(j["layout"]["domains"][0]["default_freq_mhz"], 975.0);
  EXPECT_EQ(j["component_w_per_mhz"][3]["component"], "DRAM");
  EXPECT_EQ(j["fit"]["train_benchmarks"], 102);
  EXPECT_EQ(j["fit"]["solver"], "alternating");
  EXPECT_EQ(j["fit"]["loss"], "huber");
  // Keys keep the written order (format first), components their layout order.
  EXPECT_LT(json.find("\"format\""), json.find("\"version\""));
  EXPECT_LT(json.find("\"version\""), json.find("\"layout\""));
  EXPECT_LT(json.find("\"SP ADD\""), json.find("\"INT\""));
  EXPECT_EQ(json.back(), '\n');
}

TEST(ModelIoJson, ConvertsTheReferenceModelExactly) {
  WATTCAL_REQUIRE_DATASETS();
  const PowerModel ref =
      ReadModel(Dataset("gpmtool_tpds2019/gtx_titan_x/ref_model_dvfs_11comp.csv"));
  const std::string path = WriteFile(ScratchDir() + "/ref.json", "\n  " + ModelToJson(ref));
  const PowerModel json = ReadModel(path);
  ExpectSameModel(ref, json);
  EXPECT_EQ(json.static_w[0], 7.326180314010544);
}

// Rewrites the JSON of AwkwardModel() with `edit` applied, keeping key order.
std::string EditedJson(const std::function<void(nlohmann::ordered_json*)>& edit) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(ModelToJson(AwkwardModel()));
  edit(&j);
  return j.dump(2) + "\n";
}

TEST(ModelIoJson, BadInputsNameFileLineAndField) {
  using J = nlohmann::ordered_json;
  {
    const std::string text = EditedJson([](J* j) { j->erase("static_w"); });
    ExpectInputError("missing.json", text, 1, "static_w", "missing key");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["version"] = 2; });
    ExpectInputError("version.json", text, LineOf(text, "\"version\""), "version",
                     "unsupported model format version 2");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["format"] = "something-else"; });
    ExpectInputError("format.json", text, LineOf(text, "\"format\""), "format", "expected");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["method"] = "magic"; });
    ExpectInputError("method.json", text, LineOf(text, "\"method\""), "method", "\"dvfs\"");
  }
  {
    const std::string text = EditedJson([](J* j) {
      (*j)["freq_levels_mhz"][0] = {595, 1175.25, 975};
      (*j)["voltage_rel"][0] = {0.9, 1.1, 1.0};
    });
    ExpectInputError("levels.json", text, LineOf(text, "595") - 1, "freq_levels_mhz[0]",
                     "strictly increasing");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["voltage_rel"][1] = {0.515625}; });
    ExpectInputError("voltages.json", text, LineOf(text, "0.515625") - 1, "voltage_rel[1]",
                     "1 voltages for 2 frequency levels");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["method"] = "fixed"; });
    ExpectInputError("fixed_levels.json", text, LineOf(text, "\"freq_levels_mhz\"") + 1,
                     "freq_levels_mhz[0]", "one frequency level per domain, got 3");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["idle_dyn_w_per_mhz"][1] = nullptr; });
    ExpectInputError("null.json", text, LineOf(text, "null"), "idle_dyn_w_per_mhz[1]",
                     "expected a finite number, got null");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["static_w"] = {1.0}; });
    ExpectInputError("count.json", text, LineOf(text, "\"static_w\""), "static_w",
                     "expected 2 elements, got 1");
  }
  {
    const std::string text =
        EditedJson([](J* j) { (*j)["component_w_per_mhz"][2]["component"] = "Shared"; });
    ExpectInputError("component.json", text, LineOf(text, "\"Shared\""),
                     "component_w_per_mhz[2].component", "expected component 'L2'");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["fit"]["solver"] = "magic"; });
    ExpectInputError("solver.json", text, LineOf(text, "\"solver\""), "fit.solver",
                     "expected \"joint\", \"alternating\", \"nnls\", \"truth\" or \"\"");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["fit"]["loss"] = "L2"; });
    ExpectInputError("loss.json", text, LineOf(text, "\"loss\""), "fit.loss",
                     "expected \"l2\", \"huber\", \"cauchy\" or \"\"");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["fit"].erase("train_r2"); });
    ExpectInputError("fit.json", text, LineOf(text, "\"fit\""), "fit.train_r2",
                     "missing key \"train_r2\"");
  }
  {
    const std::string text =
        EditedJson([](J* j) { (*j)["layout"]["domains"][1]["default_freq_mhz"] = -3505; });
    ExpectInputError("default.json", text, LineOf(text, "-3505"),
                     "layout.domains[1].default_freq_mhz", "> 0");
  }
  {
    const std::string text = EditedJson([](J* j) { (*j)["layout"]["domains"][1]["name"] = "hbm"; });
    ExpectInputError("domain_name.json", text, LineOf(text, "\"hbm\""), "layout.domains[1].name",
                     "\"mem\"");
  }
  {
    std::string text = ModelToJson(AwkwardModel());
    const size_t comma = text.find(',', text.find("\"method\""));
    text.erase(comma, 1);  // "method": "dvfs" "trained_on": ... is a syntax error
    ExpectInputError("syntax.json", text, LineOf(text, "\"trained_on\""), "", "invalid JSON");
  }
}

}  // namespace
}  // namespace wattcal
