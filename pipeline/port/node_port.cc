#include "port/node_port.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/errors.h"
#include "util/json_check.h"
#include "validate/metrics.h"

namespace wattcal {
namespace {

// MAPE of the table's totals against its measured power (NaN without measurements).
double MapePct(const EstimateTable& t) {
  if (t.measured_w.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<PredictionRow> rows;
  for (int k = 0; k < t.num_kernels(); ++k) {
    PredictionRow r;
    r.benchmark = t.kernels[k];
    r.measured_w = t.measured_w[k];
    r.predicted_w = t.TotalW(k);
    r.line = t.lines[k];
    rows.push_back(r);
  }
  return ComputeErrorMetrics(rows).mape_pct;
}

double AppliedFactor(const NodeScaling& s, EstimateTerm term) {
  switch (term) {
    case EstimateTerm::kDynamic: return s.dynamic_factor;
    case EstimateTerm::kStatic: return s.static_factor;
    case EstimateTerm::kIdleSm: return s.idle_sm_factor;
    case EstimateTerm::kConstant: return s.board_constant_factor;
    case EstimateTerm::kTotal: break;
  }
  return 1.0;
}

}  // namespace

NodeEstimatesReport PortEstimatesToNode(const EstimateTable& input, const NodeScaling& scaling,
                                        const EstimateTable* reference, EstimateTable* scaled) {
  NodeEstimatesReport r;
  r.scaling = scaling;
  r.kernels = input.num_kernels();
  *scaled = ScaleEstimates(input, scaling);
  r.mape_before_pct = MapePct(input);
  r.mape_after_pct = MapePct(*scaled);
  for (double rem : input.remainder_w) {
    if (rem != 0.0) ++r.kernels_with_remainder;
    r.max_remainder_w = std::max(r.max_remainder_w, rem);
  }
  if (reference == nullptr) return r;

  r.reference_path = reference->path;
  r.reference_factors = DeriveColumnFactors(input, *reference);
  r.mape_reference_pct = MapePct(*reference);
  for (int k = 0; k < input.num_kernels(); ++k) {
    const int j = reference->FindKernel(input.kernels[k]);
    r.max_abs_total_diff_w =
        std::max(r.max_abs_total_diff_w, std::fabs(scaled->TotalW(k) - reference->TotalW(j)));
  }
  for (EstimateTerm term : {EstimateTerm::kDynamic, EstimateTerm::kStatic, EstimateTerm::kIdleSm,
                            EstimateTerm::kConstant}) {
    TermCheck c;
    c.term = term;
    c.applied_factor = AppliedFactor(scaling, term);
    bool single = true;
    for (const ColumnFactor& f : r.reference_factors) {
      if (f.term != term || f.kernels == 0) continue;
      if (c.columns == 0 || f.min < c.reference_min) c.reference_min = f.min;
      if (c.columns == 0 || f.max > c.reference_max) c.reference_max = f.max;
      single = single && f.single_factor();
      ++c.columns;
    }
    const double mid = 0.5 * (c.reference_min + c.reference_max);
    c.reference_single_factor =
        c.columns > 0 && single && std::fabs(c.reference_max - c.reference_min) <= 1e-12 * mid;
    c.reproduced =
        c.reference_single_factor && std::fabs(c.applied_factor - mid) <= 1e-9 * std::fabs(mid);
    r.checks.push_back(c);
  }
  return r;
}

void to_json(nlohmann::ordered_json& row, const TermCheck& c) {
  row = nlohmann::ordered_json::object();
  row["term"] = EstimateTermName(c.term);
  row["applied_factor"] = c.applied_factor;
  row["columns"] = c.columns;
  row["reference_min"] = c.reference_min;
  row["reference_max"] = c.reference_max;
  row["reference_single_factor"] = c.reference_single_factor;
  row["reproduced"] = c.reproduced;
}

nlohmann::ordered_json NodeEstimatesReportToJson(const NodeEstimatesReport& report,
                                                 const NodeTable* table) {
  using J = nlohmann::ordered_json;
  J j = J::object();
  j["scaling"] = NodeScalingToJson(report.scaling, table);
  j["kernels"] = report.kernels;
  j["mape_before_pct"] = FiniteOrNull<nlohmann::ordered_json>(report.mape_before_pct);
  j["mape_after_pct"] = FiniteOrNull<nlohmann::ordered_json>(report.mape_after_pct);
  j["kernels_with_remainder"] = report.kernels_with_remainder;
  j["max_remainder_w"] = report.max_remainder_w;
  if (!report.reference_path.empty()) {
    J ref = J::object();
    ref["path"] = report.reference_path;
    ref["mape_pct"] = FiniteOrNull<nlohmann::ordered_json>(report.mape_reference_pct);
    ref["max_abs_total_diff_w"] = report.max_abs_total_diff_w;
    ref["terms"] = report.checks;
    ref["columns"] = report.reference_factors;
    j["reference"] = ref;
  }
  return j;
}

std::string FormatNodeEstimatesReport(const NodeEstimatesReport& report) {
  const NodeScaling& s = report.scaling;
  std::string out = fmt::format(
      "{} kernels scaled{}: dynamic x{:.6g}, static x{:.6g}, idle SMs x{:.6g}, board constant "
      "x{:.6g}",
      report.kernels, s.from_node.empty() ? "" : fmt::format(" {} -> {}", s.from_node, s.to_node),
      s.dynamic_factor, s.static_factor, s.idle_sm_factor, s.board_constant_factor);
  if (std::isfinite(report.mape_before_pct)) {
    out += fmt::format("; MAPE {:.2f}% -> {:.2f}%", report.mape_before_pct, report.mape_after_pct);
  }
  if (report.kernels_with_remainder > 0) {
    out += fmt::format(
        "; {} kernels' totals hold up to {:.4f} W beyond their columns (counted as "
        "constant power)",
        report.kernels_with_remainder, report.max_remainder_w);
  }
  if (!report.reference_path.empty()) {
    out += fmt::format("\nreference {} (MAPE {:.2f}%):", report.reference_path,
                       report.mape_reference_pct);
    for (const TermCheck& c : report.checks) {
      out += fmt::format(
          "\n  {:<8} applied x{:.10g}; reference {} ({} column{}): {}", EstimateTermName(c.term),
          c.applied_factor,
          c.reference_single_factor ? fmt::format("x{:.10g}", c.reference_min)
                                    : fmt::format("x{:.6g} .. x{:.6g} (no single factor)",
                                                  c.reference_min, c.reference_max),
          c.columns, c.columns == 1 ? "" : "s", c.reproduced ? "reproduced" : "NOT reproduced");
    }
    out += fmt::format("\n  largest |total difference| {:.4g} W", report.max_abs_total_diff_w);
  }
  return out;
}

}  // namespace wattcal
