// Tests of the relative-architecture comparison (AccelWattch MICRO'21 §7.1, Fig. 12):
//
//   CompareOptions*    defaults pass Check(); a bad deadband names its field.
//   CompareRead*       per-workload power columns: units, "not run", every error names
//                      FILE:LINE and the field.
//   CompareArithmetic* hand-computed cases: (P_B - P_A)/P_A, averages, direction, deadband,
//                      skipped workloads.
//   CompareRealData*   AccelWattch's spreadsheet (relative_power_fig12.csv) reproduced from
//                      measured_power_by_arch.csv and the SASS SIM per-kernel totals.
//   CompareStage*      wattcal-compare end to end: outputs, manifests, byte-identical reruns,
//                      exit codes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/relative_power.h"
#include "compare/workload_power.h"
#include "io/csv_reader.h"
#include "test_support.h"
#include "util/errors.h"

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

// Relative tolerance for values the spreadsheet computed with the same formula in doubles.
constexpr double kSheetRelTol = 1e-12;

std::string InputErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

WorkloadPower Table(const std::vector<std::pair<std::string, double>>& rows) {
  WorkloadPower t;
  t.path = "synthetic.csv";
  t.column = "power_w";
  int64_t line = 2;
  for (const auto& [w, p] : rows) {
    t.workloads.push_back(w);
    t.power_w.push_back(p);
    t.lines.push_back(line++);
  }
  return t;
}

// ---------------------------------------------------------------------------------------

TEST(CompareOptions, DefaultsPassCheck) {
  std::string error;
  EXPECT_TRUE(CompareOptions().Check(&error)) << error;
}

TEST(CompareOptions, NegativeDeadbandNamesTheField) {
  CompareOptions options;
  options.direction_deadband_frac = -0.01;
  std::string error;
  EXPECT_FALSE(options.Check(&error));
  EXPECT_NE(error.find("direction_deadband_frac = -0.01"), std::string::npos) << error;
}

// ---------------------------------------------------------------------------------------

TEST(CompareRead, ColumnByArchNameUnitsAndNotRun) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/m.csv",
                                     "# measured\n"
                                     "kernel_id,volta_W,pascal_mW\n"
                                     "k1,200,150000\n"
                                     "k2,100,\n"
                                     "k3,50.5,25250\n");
  const WorkloadPower volta = ReadWorkloadPower(path, "volta");
  EXPECT_EQ(volta.column, "volta_W");
  EXPECT_EQ(volta.workloads, (std::vector<std::string>{"k1", "k2", "k3"}));
  EXPECT_EQ(volta.lines, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_DOUBLE_EQ(volta.power_w[2], 50.5);
  const WorkloadPower pascal = ReadWorkloadPower(path, "pascal");
  EXPECT_EQ(pascal.column, "pascal_mW");
  EXPECT_EQ(pascal.workloads, (std::vector<std::string>{"k1", "k3"}));
  EXPECT_EQ(pascal.not_run, (std::vector<std::string>{"k2"}));
  EXPECT_EQ(pascal.power_w[0], 150.0);  // 150000 mW
  EXPECT_EQ(pascal.power_w[1], 25.25);
}

TEST(CompareRead, DefaultColumnIsSimTotalThenPowerW) {
  const std::string dir = ScratchDir();
  const std::string sheet = WriteFile(dir + "/s.csv",
                                      "kernel_id,benchmark,IBP_W,sim_total_W,hw_total_W\n"
                                      "k1,b,1,100,110\n");
  EXPECT_EQ(ReadWorkloadPower(sheet).column, "sim_total_W");
  EXPECT_EQ(ReadWorkloadPower(sheet).power_w[0], 100.0);
  const std::string tidy = WriteFile(dir + "/t.csv", "kernel,power_w\nk1,42\n");
  EXPECT_EQ(ReadWorkloadPower(tidy).power_w[0], 42.0);
}

TEST(CompareRead, ErrorsNameFileLineAndField) {
  const std::string dir = ScratchDir();
  const auto read = [&](const std::string& text, const std::string& column) {
    const std::string path = WriteFile(dir + "/bad.csv", text);
    return InputErrorOf([&] { ReadWorkloadPower(path, column); });
  };
  EXPECT_NE(read("kernel,power_w\nk1,abc\n", "").find("bad.csv:2: power_w:"), std::string::npos);
  EXPECT_NE(read("kernel,power_w\nk1,-3\n", "").find("bad.csv:2: power_w: -3 must be a power > 0"),
            std::string::npos);
  EXPECT_NE(read("kernel,power_w\nk1,3\nk1,4\n", "")
                .find("bad.csv:3: kernel: workload \"k1\" "
                      "appears twice (first on line 2)"),
            std::string::npos);
  EXPECT_NE(read("kernel,power_w\nk1\n", "").find("bad.csv:2: 1 fields, the header has 2"),
            std::string::npos);
  EXPECT_NE(read("kernel,volta_W\nk1,3\n", "turing")
                .find("bad.csv:1: header: no column "
                      "\"turing\""),
            std::string::npos);
  EXPECT_NE(read("kernel,a_W,a_mW\nk1,3,3000\n", "a").find("\"a\" names 2 columns"),
            std::string::npos);
  EXPECT_NE(read("kernel,power\nk1,3\n", "power")
                .find("bad.csv:1: power: the column's unit is "
                      "not recognised"),
            std::string::npos);
  EXPECT_NE(read("name,power_w\nk1,3\n", "")
                .find("bad.csv:1: name: the first column must name "
                      "the workload"),
            std::string::npos);
  EXPECT_NE(read("kernel,power_w\nk1,\n", "").find("no workload has a value"), std::string::npos);
}

// ---------------------------------------------------------------------------------------

TEST(CompareArithmetic, HandComputedRelativePowerAveragesAndDirection) {
  // B relative to A: w1 (80-100)/100 = -20% measured, (90-100)/100 = -10% estimated;
  // w2 (150-100)/100 = +50% vs (50-40)/40 = +25%; w3 (95-100)/100 = -5% vs (210-200)/200 = +5%.
  const WorkloadPower ma = Table({{"w1", 100}, {"w2", 100}, {"w3", 100}});
  const WorkloadPower mb = Table({{"w1", 80}, {"w2", 150}, {"w3", 95}});
  const WorkloadPower ea = Table({{"w1", 100}, {"w2", 40}, {"w3", 200}});
  const WorkloadPower eb = Table({{"w3", 210}, {"w2", 50}, {"w1", 90}});  // any order
  const RelativePowerComparison c = CompareRelativePower("A", "B", ma, mb, ea, eb);
  ASSERT_EQ(c.num_workloads(), 3);
  EXPECT_EQ(c.workloads[0].workload, "w1");  // measured A's order
  EXPECT_DOUBLE_EQ(c.workloads[0].measured_rel_frac, -0.2);
  EXPECT_DOUBLE_EQ(c.workloads[1].estimated_rel_frac, 0.25);
  EXPECT_DOUBLE_EQ(c.measured_mean_rel_pct, 100.0 * (-0.2 + 0.5 - 0.05) / 3);
  EXPECT_DOUBLE_EQ(c.estimated_mean_rel_pct, 100.0 * (-0.1 + 0.25 + 0.05) / 3);
  EXPECT_NEAR(c.diff_of_means_pp, (20.0 / 3) - (25.0 / 3), 1e-12);
  EXPECT_NEAR(c.mean_abs_diff_pp, (10.0 + 25.0 + 10.0) / 3, 1e-12);
  EXPECT_NEAR(c.max_abs_diff_pp, 25.0, 1e-12);
  EXPECT_EQ(c.max_abs_diff_workload, "w2");
  EXPECT_EQ(c.same_direction_count, 2);
  EXPECT_NEAR(c.same_direction_pct, 200.0 / 3, 1e-12);
  EXPECT_EQ(c.opposite_direction, (std::vector<std::string>{"w3"}));

  // With a 6% deadband w3's -5% and +5% both read "no change": all three agree.
  CompareOptions options;
  options.direction_deadband_frac = 0.06;
  const RelativePowerComparison d = CompareRelativePower("A", "B", ma, mb, ea, eb, options);
  EXPECT_EQ(d.same_direction_count, 3);
  EXPECT_EQ(d.workloads[2].measured_sign, 0);
}

TEST(CompareArithmetic, SkipsWorkloadsMissingAnywhereAndSaysWhy) {
  WorkloadPower ma = Table({{"w1", 100}, {"w2", 100}, {"w3", 100}});
  WorkloadPower mb = Table({{"w1", 110}, {"w3", 90}});
  mb.not_run = {"w2"};
  const WorkloadPower ea = Table({{"w1", 100}, {"w2", 100}, {"w3", 100}, {"w4", 1}});
  const WorkloadPower eb = Table({{"w1", 120}, {"w2", 100}});
  const RelativePowerComparison c = CompareRelativePower("A", "B", ma, mb, ea, eb);
  ASSERT_EQ(c.num_workloads(), 1);
  EXPECT_EQ(c.workloads[0].workload, "w1");
  ASSERT_EQ(c.skipped.size(), 3u);
  EXPECT_EQ(c.skipped[0].first, "w2");
  EXPECT_EQ(c.skipped[0].second, "no measurement on B");
  EXPECT_EQ(c.skipped[1].second, "no estimate for B");
  EXPECT_EQ(c.skipped[2].second, "no measurement on A; no measurement on B; no estimate for B");
}

TEST(CompareArithmetic, NothingInCommonIsAnInputError) {
  const WorkloadPower a = Table({{"w1", 100}});
  const WorkloadPower b = Table({{"w2", 100}});
  EXPECT_NE(InputErrorOf([&] {
              CompareRelativePower("A", "B", a, b, a, b);
            }).find("no workload has a measurement on both A and B"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------
// AccelWattch's spreadsheet, "Relative Accuracy (Fig 12)" (relative_power_fig12.csv): the
// modelled columns use the SASS SIM totals (Pascal: the technology-scaled table), the
// measured columns the hardware totals of measured_power_by_arch.csv.

struct Fig12 {
  // kernel_id -> column -> value (empty cells absent).
  std::map<std::string, std::map<std::string, double>> rows;
  std::vector<std::string> order;
};

Fig12 ReadFig12() {
  Fig12 f;
  CsvReader reader(Dataset("accelwattch/common/relative_power_fig12.csv"));
  std::vector<std::string> header, fields;
  reader.Next(&header);
  while (reader.Next(&fields)) {
    f.order.push_back(fields[0]);
    for (size_t i = 2; i < fields.size(); ++i) {
      if (!fields[i].empty()) f.rows[fields[0]][header[i]] = std::stod(fields[i]);
    }
  }
  return f;
}

struct Pair {
  const char* arch_a;
  const char* arch_b;
  const char* estimated_a;
  const char* estimated_b;
  const char* column;  // prefix in relative_power_fig12.csv
};

const Pair kPascalVsVolta = {"volta_qv100", "pascal_titanx", "volta_qv100/per_kernel_sass_sim.csv",
                             "pascal_titanx/per_kernel_sass_sim_scaled.csv", "pascal_vs_volta"};
const Pair kTuringVsPascal = {"pascal_titanx", "turing_rtx2060s",
                              "pascal_titanx/per_kernel_sass_sim_scaled.csv",
                              "turing_rtx2060s/per_kernel_sass_sim.csv", "turing_vs_pascal"};
const Pair kTuringVsVolta = {"volta_qv100", "turing_rtx2060s",
                             "volta_qv100/per_kernel_sass_sim.csv",
                             "turing_rtx2060s/per_kernel_sass_sim.csv", "turing_vs_volta"};

RelativePowerComparison CompareSheet(const Pair& p) {
  const std::string measured = Dataset("accelwattch/common/measured_power_by_arch.csv");
  return CompareRelativePower(
      p.arch_a, p.arch_b, ReadWorkloadPower(measured, p.arch_a),
      ReadWorkloadPower(measured, p.arch_b),
      ReadWorkloadPower(Dataset(std::string("accelwattch/") + p.estimated_a)),
      ReadWorkloadPower(Dataset(std::string("accelwattch/") + p.estimated_b)));
}

void ExpectAverageRow(const RelativePowerComparison& c, const Fig12& fig, const std::string& col) {
  const std::map<std::string, double>& avg = fig.rows.at("AVERAGE");
  EXPECT_NEAR(c.estimated_mean_rel_pct, 100.0 * avg.at(col + "_modeled"), kSheetRelTol * 100.0)
      << col;
  EXPECT_NEAR(c.measured_mean_rel_pct, 100.0 * avg.at(col + "_measured"), kSheetRelTol * 100.0)
      << col;
  EXPECT_NEAR(c.mean_abs_diff_pp, 100.0 * avg.at("absdiff_" + col), kSheetRelTol * 100.0) << col;
}

TEST(CompareRealData, PascalVsVoltaReproducesTheSheetKernelByKernel) {
  WATTCAL_REQUIRE_DATASETS();
  const Fig12 fig = ReadFig12();
  const RelativePowerComparison c = CompareSheet(kPascalVsVolta);
  ASSERT_EQ(c.num_workloads(), 22);  // Pascal has no tensor-core kernels
  EXPECT_EQ(c.skipped.size(), 4u);
  for (const WorkloadRelativePower& r : c.workloads) {
    const auto& row = fig.rows.at(r.workload);
    EXPECT_NEAR(r.estimated_rel_frac, row.at("pascal_vs_volta_modeled"), kSheetRelTol)
        << r.workload;
    EXPECT_NEAR(r.measured_rel_frac, row.at("pascal_vs_volta_measured"), kSheetRelTol)
        << r.workload;
  }
  ExpectAverageRow(c, fig, "pascal_vs_volta");
  // Modelled -26.94% vs measured -25.65%: 1.3 points (the paper: "1%").
  EXPECT_NEAR(c.diff_of_means_pp, -1.2898662507948, 1e-9);
  // The paper: 100% of the workloads point the same way; the data agree.
  EXPECT_EQ(c.same_direction_count, 22);
}

TEST(CompareRealData, TuringVsPascalReproducesTheSheetKernelByKernel) {
  WATTCAL_REQUIRE_DATASETS();
  const Fig12 fig = ReadFig12();
  const RelativePowerComparison c = CompareSheet(kTuringVsPascal);
  ASSERT_EQ(c.num_workloads(), 22);
  for (const WorkloadRelativePower& r : c.workloads) {
    const auto& row = fig.rows.at(r.workload);
    EXPECT_NEAR(r.estimated_rel_frac, row.at("turing_vs_pascal_modeled"), kSheetRelTol);
    EXPECT_NEAR(r.measured_rel_frac, row.at("turing_vs_pascal_measured"), kSheetRelTol);
  }
  ExpectAverageRow(c, fig, "turing_vs_pascal");
  EXPECT_NEAR(c.diff_of_means_pp, -1.9074739088265, 1e-9);  // +24.72% vs +26.63%
  // The paper: 91%; the data: 20 of 22 = 90.9% (kmeans_k1 and parboil_sad_k1 disagree).
  EXPECT_EQ(c.same_direction_count, 20);
  EXPECT_EQ(c.opposite_direction, (std::vector<std::string>{"kmeans_k1", "parboil_sad_k1"}));
}

TEST(CompareRealData, TuringVsVoltaMatchesTheSheetAveragesButNotThePapersDirectionShare) {
  WATTCAL_REQUIRE_DATASETS();
  const Fig12 fig = ReadFig12();
  const RelativePowerComparison c = CompareSheet(kTuringVsVolta);
  ASSERT_EQ(c.num_workloads(), 26);
  ExpectAverageRow(c, fig, "turing_vs_volta");
  EXPECT_NEAR(c.diff_of_means_pp, -3.6685784396123, 1e-9);  // -8.90% vs -5.23%
  // The sheet's turing_vs_volta columns are listed in another kernel order than its kernel_id
  // column (from row 6 on they belong to other kernels: the Volta/Turing sheets' order, with
  // cudaTensorCoreGemm and cutlass 6th-9th). Each (modelled, measured) pair is still one
  // kernel's: the sets of pairs agree exactly.
  std::vector<std::pair<double, double>> ours, sheet;
  for (const WorkloadRelativePower& r : c.workloads) {
    ours.emplace_back(r.estimated_rel_frac, r.measured_rel_frac);
  }
  for (const std::string& k : fig.order) {
    if (k == "AVERAGE") continue;
    sheet.emplace_back(fig.rows.at(k).at("turing_vs_volta_modeled"),
                       fig.rows.at(k).at("turing_vs_volta_measured"));
  }
  std::sort(ours.begin(), ours.end());
  std::sort(sheet.begin(), sheet.end());
  ASSERT_EQ(ours.size(), sheet.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_NEAR(ours[i].first, sheet[i].first, kSheetRelTol);
    EXPECT_NEAR(ours[i].second, sheet[i].second, kSheetRelTol);
  }
  const WorkloadRelativePower& dct1 =
      *std::find_if(c.workloads.begin(), c.workloads.end(),
                    [](const WorkloadRelativePower& r) { return r.workload == "dct8x8_k1"; });
  EXPECT_GT(
      std::fabs(dct1.estimated_rel_frac - fig.rows.at("dct8x8_k1").at("turing_vs_volta_modeled")),
      0.1);  // the misalignment, pinned
  // The paper: 4 of 26 point the other way (85%). The data: 6 of 26 (76.9%).
  EXPECT_EQ(c.same_direction_count, 20);
  EXPECT_EQ(c.opposite_direction,
            (std::vector<std::string>{"backprop_k1", "binomialOptions_k1", "fastWalshTransform_k1",
                                      "kmeans_k1", "parboil_sad_k1", "pathfinder_k1"}));
}

// ---------------------------------------------------------------------------------------

TEST(CompareStage, WritesJsonTableAndManifestsAndRerunsByteIdentically) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::vector<std::string> args = {
      "--measured",    Dataset("accelwattch/common/measured_power_by_arch.csv"),
      "--arch-a",      "volta_qv100",
      "--arch-b",      "pascal_titanx",
      "--estimated-a", Dataset("accelwattch/volta_qv100/per_kernel_sass_sim.csv"),
      "--estimated-b", Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_scaled.csv"),
      "--out",         dir + "/c.json",
      "--table",       dir + "/c.csv"};
  const CommandResult first = RunStage("wattcal-compare", args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("same direction 22/22"), std::string::npos) << first.output;
  const std::string json = ReadFile(dir + "/c.json"), csv = ReadFile(dir + "/c.csv");
  const std::string manifest = ReadFile(testing::ProvenancePath(dir + "/c.json"));
  EXPECT_TRUE(HasProvenance(dir + "/c.csv"));
  const nlohmann::json j = nlohmann::json::parse(json);
  EXPECT_EQ(j["workloads"], 22);
  EXPECT_EQ(j["arch_a"], "volta_qv100");
  EXPECT_EQ(nlohmann::json::parse(manifest)["options"]["estimated_b_column"], "sim_total_W");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 23);
  const CommandResult second = RunStage("wattcal-compare", args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(ReadFile(dir + "/c.json"), json);
  EXPECT_EQ(ReadFile(dir + "/c.csv"), csv);
  EXPECT_EQ(ReadFile(testing::ProvenancePath(dir + "/c.json")), manifest);

  // A threshold the difference exceeds: the outputs are written, exit 3.
  std::vector<std::string> strict = args;
  strict.insert(strict.end(), {"--max-diff-pp", "1"});
  const CommandResult over = RunStage("wattcal-compare", strict);
  EXPECT_EQ(over.exit_code, 3) << over.output;
  EXPECT_NE(over.output.find("--max-diff-pp"), std::string::npos) << over.output;
}

TEST(CompareStage, BadInputExits2WithFileLineFieldAndWritesNothing) {
  const std::string dir = ScratchDir();
  const std::string measured =
      WriteFile(dir + "/m.csv", "kernel_id,a_W,b_W\nk1,100,90\nk2,oops,1\n");
  const std::string est = WriteFile(dir + "/e.csv", "kernel,power_w\nk1,100\nk2,90\n");
  const CommandResult r = RunStage(
      "wattcal-compare", {"--measured", measured, "--arch-a", "a", "--arch-b", "b", "--estimated-a",
                          est, "--estimated-b", est, "--out", dir + "/out/c.json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("m.csv:3: a_W:"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(dir + "/out/c.json"));
  EXPECT_FALSE(HasProvenance(dir + "/out/c.json"));
}

TEST(CompareStage, BadOptionsExit1NamingTheFlag) {
  const std::string dir = ScratchDir();
  const std::string est = WriteFile(dir + "/e.csv", "kernel,power_w\nk1,100\n");
  const CommandResult no_measured =
      RunStage("wattcal-compare", {"--arch-a", "a", "--arch-b", "b", "--estimated-a", est,
                                   "--estimated-b", est, "--out", dir + "/c.json"});
  testing::ExpectRefused(no_measured, 1, {"--measured"}, {dir + "/c.json"});
  const CommandResult deadband =
      RunStage("wattcal-compare",
               {"--measured", est, "--arch-a", "a", "--arch-b", "b", "--estimated-a", est,
                "--estimated-b", est, "--out", dir + "/c.json", "--direction-deadband-pct", "-1"});
  testing::ExpectRefused(deadband, 1, {"--direction-deadband-pct = -1"}, {dir + "/c.json"});
}

}  // namespace
}  // namespace wattcal
