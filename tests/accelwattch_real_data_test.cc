// AccelWattch on its own published per-kernel tables (../shared/datasets/accelwattch, read
// there, never copied): the published model (x = 1) through wattcal's metric code must give
// the sheet's MAPE and Pearson r (common/summary_errors.csv) and the paper's confidence
// intervals; then the scaling factors are re-estimated on the 25 Volta HW kernels with
// leave-one-kernel-out cross-validation, with and without the pull toward x = 1. That part
// asserts determinism, constraint satisfaction and global optimality (against an independent
// QP solver), not a win: the figures are printed for the report.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <map>

#include "accelwattch/component_table.h"
#include "accelwattch/orderings.h"
#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"
#include "accelwattch_qp_reference.h"
#include "certified_values.h"
#include "io/csv_reader.h"
#include "test_support.h"
#include "validate/metrics.h"

namespace wattcal {
namespace {

using testing::Dataset;

std::string AccelWattch(const std::string& relative) { return Dataset("accelwattch/" + relative); }

struct SheetFigures {
  double mape = 0.0;  // fraction, as in the sheet
  double pearson_r = 0.0;
};

// common/summary_errors.csv by its `file` column.
std::map<std::string, SheetFigures> ReadSummary() {
  CsvReader reader(AccelWattch("common/summary_errors.csv"));
  std::vector<std::string> header, fields;
  reader.Next(&header);
  const auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  std::map<std::string, SheetFigures> out;
  while (reader.Next(&fields)) {
    out[fields[column("file")]] = {
        reader.ParseNumber(fields[column("mape_sheet")], "mape_sheet"),
        reader.ParseNumber(fields[column("pearson_r_sheet")], "pearson_r_sheet")};
  }
  return out;
}

ErrorMetrics Published(const ComponentTable& table, MapeCiMethod ci = MapeCiMethod::kStudentT) {
  MetricsOptions options;
  options.ci_method = ci;
  return ComputeErrorMetrics(PredictKernels(PublishedAccelWattchModel(table), table), options);
}

double HalfWidth(const ErrorMetrics& e) { return 0.5 * (e.mape_ci_high_pct - e.mape_ci_low_pct); }

class AccelWattchRealData : public ::testing::Test {
 protected:
  void SetUp() override { WATTCAL_REQUIRE_DATASETS(); }
};

// The published model's MAPE and r from wattcal's metric code equal the spreadsheet's cached
// values (all 16-17 printed digits, up to the last bit of summation order), and round to the
// figures printed in the paper and the dataset README.
TEST_F(AccelWattchRealData, PublishedModelReproducesTheSheet) {
  const std::map<std::string, SheetFigures> sheet = ReadSummary();
  struct Case {
    const char* file;
    const char* mape_printed;  // %.2f
    const char* r_printed;     // %.3f
  };
  for (const Case& c : {Case{"volta_qv100/per_kernel_hw.csv", "7.46", "0.910"},
                        Case{"volta_qv100/per_kernel_sass_sim.csv", "9.23", "0.830"},
                        Case{"volta_qv100/per_kernel_hybrid.csv", "8.15", "0.902"},
                        Case{"volta_qv100/per_kernel_ptx_sim.csv", "13.65", "0.679"},
                        Case{"pascal_titanx/per_kernel_sass_sim_scaled.csv", "10.99", "0.588"},
                        Case{"pascal_titanx/per_kernel_sass_sim_unscaled.csv", "12.84", "0.583"},
                        Case{"pascal_titanx/per_kernel_ptx_sim_scaled.csv", "10.78", "0.736"},
                        Case{"pascal_titanx/per_kernel_ptx_sim_unscaled.csv", "12.00", "0.734"}}) {
    SCOPED_TRACE(c.file);
    const ComponentTable table = ReadComponentTable(AccelWattch(c.file));
    EXPECT_EQ(table.published_total_mismatches, 0);
    const ErrorMetrics e = Published(table);
    ASSERT_EQ(sheet.count(c.file), 1u);
    const SheetFigures& s = sheet.at(c.file);
    EXPECT_NEAR(e.mape_pct / 100.0, s.mape, 4 * std::numeric_limits<double>::epsilon() * s.mape);
    EXPECT_NEAR(e.pearson_r, s.pearson_r, 4 * std::numeric_limits<double>::epsilon());
    EXPECT_EQ(fmt::format("{:.2f}", e.mape_pct), c.mape_printed);
    EXPECT_EQ(fmt::format("{:.3f}", e.pearson_r), c.r_printed);
  }
}

// The paper prints MAPE +/- a 95% interval: "9.2% +/- 3.12%" (Volta SASS SIM, AccelWattch §7.1),
// "11 +/- 3.8%" (Pascal) and "13 +/- 4.7%" (Turing, abstract). These are the normal quantile
// times the population standard deviation of the kernels' APE over sqrt(n) (Excel's
// CONFIDENCE with STDEV.P); the Student t interval (wattcal's default) is wider: 3.34 for
// Volta SASS SIM. Certified half-widths computed independently from the sheets
// (certified_values.h: scripts/certify/hand_values.py, Python's statistics.NormalDist / pstdev and
// scipy's t quantile, recomputes them in CertifiedValues.HandValuesAreRecomputedIndependently).
TEST_F(AccelWattchRealData, ConfidenceIntervalsOfThePaper) {
  struct Case {
    const char* file;
    certified::Value normal_population_sd;  // half-width, %
    certified::Value student_t;             // half-width, %
  };
  for (const Case& c : {Case{"volta_qv100/per_kernel_hw.csv", certified::kAwVoltaHwNormal,
                             certified::kAwVoltaHwStudentT},
                        Case{"volta_qv100/per_kernel_sass_sim.csv",
                             certified::kAwVoltaSassSimNormal, certified::kAwVoltaSassSimStudentT},
                        Case{"volta_qv100/per_kernel_hybrid.csv", certified::kAwVoltaHybridNormal,
                             certified::kAwVoltaHybridStudentT},
                        Case{"volta_qv100/per_kernel_ptx_sim.csv", certified::kAwVoltaPtxSimNormal,
                             certified::kAwVoltaPtxSimStudentT}}) {
    SCOPED_TRACE(c.file);
    const ComponentTable table = ReadComponentTable(AccelWattch(c.file));
    const ErrorMetrics paper = Published(table, MapeCiMethod::kNormalPopulationSd);
    const ErrorMetrics ours = Published(table, MapeCiMethod::kStudentT);
    EXPECT_NEAR(HalfWidth(paper), c.normal_population_sd.value, 1e-9);
    EXPECT_NEAR(HalfWidth(ours), c.student_t.value, 1e-9);
    EXPECT_NEAR(0.5 * (paper.mape_ci_low_pct + paper.mape_ci_high_pct), paper.mape_pct, 1e-12);
    std::cout << fmt::format(
        "{:<42} MAPE {:6.3f} %  +/- {:.3f} (paper's interval)  +/- {:.3f} "
        "(Student t)  r {:.4f}\n",
        c.file, paper.mape_pct, HalfWidth(paper), HalfWidth(ours), paper.pearson_r);
  }
  const ComponentTable volta_sass =
      ReadComponentTable(AccelWattch("volta_qv100/per_kernel_sass_sim.csv"));
  EXPECT_EQ(
      fmt::format("{:.2f}", HalfWidth(Published(volta_sass, MapeCiMethod::kNormalPopulationSd))),
      "3.12");
  const ComponentTable pascal =
      ReadComponentTable(AccelWattch("pascal_titanx/per_kernel_sass_sim_scaled.csv"));
  const ErrorMetrics p = Published(pascal, MapeCiMethod::kNormalPopulationSd);
  EXPECT_EQ(fmt::format("{:.0f} +/- {:.1f}", p.mape_pct, HalfWidth(p)), "11 +/- 3.8");
}

// The Turing sheets' modelled totals are not the sum of their columns (by 22.9 W on every
// SASS row): the reader says so, and the sheet's own totals still give the sheet's MAPE and
// the paper's "13 +/- 4.7%".
TEST_F(AccelWattchRealData, TuringSheetTotalsAreNotTheColumnSum) {
  const ComponentTable t =
      ReadComponentTable(AccelWattch("turing_rtx2060s/per_kernel_sass_sim.csv"));
  EXPECT_EQ(t.published_total_mismatches, 26);
  EXPECT_NEAR(t.published_total_max_abs_diff_w, -22.8995, 1e-3);
  std::vector<PredictionRow> rows;
  for (int k = 0; k < t.num_kernels(); ++k) {
    PredictionRow row;
    row.benchmark = t.kernels[k];
    row.measured_w = t.measured_w[k];
    row.predicted_w = t.published_total_w[k];
    rows.push_back(row);
  }
  MetricsOptions options;
  options.ci_method = MapeCiMethod::kNormalPopulationSd;
  const ErrorMetrics e = ComputeErrorMetrics(rows, options);
  EXPECT_NEAR(e.mape_pct / 100.0, ReadSummary().at("turing_rtx2060s/per_kernel_sass_sim.csv").mape,
              1e-15);
  EXPECT_EQ(fmt::format("{:.0f} +/- {:.1f}", e.mape_pct, HalfWidth(e)), "13 +/- 4.7");
}

// Every paper ordering holds exactly for `x` (components of `model`).
void ExpectOrderingsHold(const AccelWattchModel& model) {
  for (const Ordering& o : PaperOrderings()) {
    const int a = model.FindComponent(o.lower), b = model.FindComponent(o.upper);
    if (a >= 0 && b >= 0) {
      EXPECT_LE(model.x[a], model.x[b]) << o.Text();
    }
  }
  for (size_t i = 0; i < model.x.size(); ++i) {
    EXPECT_GE(model.x[i], 0.001);
    EXPECT_LE(model.x[i], 1000.0);
  }
}

// Re-estimating the 20 scaling factors of the HW variant on its 25 validation kernels,
// leave-one-kernel-out, without and with a pull toward the published x = 1 (lambda = 0.1:
// a 10% change of one factor costs as much as a 3.2% error on one kernel; fixed before
// looking at the results). The published model was tuned on 102 microbenchmarks that are not
// public, so the comparison is between that model and a re-estimate from 24 kernels.
TEST_F(AccelWattchRealData, ReestimationLeaveOneKernelOutOnVoltaHw) {
  const ComponentTable table = ReadComponentTable(AccelWattch("volta_qv100/per_kernel_hw.csv"));
  MetricsOptions paper_ci;
  paper_ci.ci_method = MapeCiMethod::kNormalPopulationSd;
  const auto line = [&](const std::string& label, const std::vector<PredictionRow>& rows) {
    const ErrorMetrics t = ComputeErrorMetrics(rows);
    const ErrorMetrics z = ComputeErrorMetrics(rows, paper_ci);
    std::cout << fmt::format(
        "  {:<34} MAPE {:6.3f} %  +/- {:.3f} (t)  +/- {:.3f} (paper)  max {:6.2f} %  r {:.4f}\n",
        label, t.mape_pct, HalfWidth(t), HalfWidth(z), t.max_ape_pct, t.pearson_r);
    return t;
  };
  std::cout << "Volta HW, 25 kernels:\n";
  const ErrorMetrics published =
      line("published (x = 1)", PredictKernels(PublishedAccelWattchModel(table), table));

  for (double lambda : {0.0, 0.1}) {
    SCOPED_TRACE(fmt::format("prior weight {}", lambda));
    AccelWattchFitOptions options;
    options.prior_weight = lambda;
    options.show_progress = false;
    const AccelWattchLokoReport a = LeaveOneKernelOut(table, options);
    const AccelWattchLokoReport b = LeaveOneKernelOut(table, options);
    // Deterministic: the same predictions and factors, bit for bit.
    ASSERT_EQ(a.rows.size(), 25u);
    for (size_t k = 0; k < a.rows.size(); ++k) {
      EXPECT_EQ(a.rows[k].predicted_w, b.rows[k].predicted_w) << a.rows[k].benchmark;
      EXPECT_EQ(a.fold_models[k].x, b.fold_models[k].x) << a.rows[k].benchmark;
    }
    // Every fold's factors keep every bound and ordering, and are the global optimum of the
    // fold's problem (no worse than the independent QP solution).
    EXPECT_EQ(a.max_constraint_violation, 0.0);
    for (size_t k = 0; k < a.fold_models.size(); ++k) {
      const AccelWattchModel& m = a.fold_models[k];
      ExpectOrderingsHold(m);
      std::vector<int> others;
      for (int j = 0; j < table.num_kernels(); ++j) {
        if (j != static_cast<int>(k)) others.push_back(j);
      }
      const ComponentTable train = table.Subset(others);
      const testing::QpReference qp = testing::SolveAccelWattchQp(train, m, lambda, 50000);
      EXPECT_LE(m.fit.final_cost, qp.cost * (1.0 + 1e-6)) << "fold " << k;
    }
    const ErrorMetrics loko = line(fmt::format("leave-one-kernel-out, lambda {}", lambda), a.rows);
    std::cout << fmt::format("    vs published: {:+.3f} percentage points of MAPE ({})\n",
                             loko.mape_pct - published.mape_pct,
                             loko.mape_pct < published.mape_pct ? "better" : "not better");
  }
  // In-sample, for scale: the factors fitted on all 25 kernels.
  const AccelWattchModel all = FitAccelWattchScaling(table, AccelWattchFitOptions(), true);
  ExpectOrderingsHold(all);
  line("fitted on all 25 (in-sample)", PredictKernels(all, table));
}

}  // namespace
}  // namespace wattcal
