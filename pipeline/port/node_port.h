// Technology scaling of per-kernel estimates, checked against measured power and, when given,
// against someone else's scaled version of the same estimates (AccelWattch's sheet holds the
// Pascal estimates before and after the authors' scaling: which factor did they apply to which
// term, and does our node table give the same?).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "port/estimate_table.h"
#include "port/technology_node.h"

namespace wattcal {

// One term (dynamic components pooled; static; idle SMs; constant): the factor we applied
// and the factors the reference applied to the same input.
struct TermCheck {
  EstimateTerm term = EstimateTerm::kDynamic;
  double applied_factor = 1.0;
  int columns = 0;  // columns pooled (several for dynamic)
  double reference_min = 0.0;
  double reference_max = 0.0;
  // True when the reference applied one factor to the whole term (1e-12 relative) ...
  bool reference_single_factor = false;
  // ... and it equals ours to 1e-9 relative.
  bool reproduced = false;
};

struct NodeEstimatesReport {
  NodeScaling scaling;
  int kernels = 0;
  // MAPE against the measured power before and after scaling (NaN without measurements).
  double mape_before_pct = std::numeric_limits<double>::quiet_NaN();
  double mape_after_pct = std::numeric_limits<double>::quiet_NaN();
  // Kernels whose total includes a remainder outside the term columns (counted as constant).
  int kernels_with_remainder = 0;
  double max_remainder_w = 0.0;
  // With a reference:
  std::string reference_path;
  std::vector<ColumnFactor> reference_factors;  // reference / input, per column
  std::vector<TermCheck> checks;
  double mape_reference_pct = 0.0;
  // Largest |our total - reference total| over the kernels, W.
  double max_abs_total_diff_w = 0.0;
};

// Scales `input` with `scaling` into `scaled` and fills the report; `reference` (may be
// nullptr) is the other party's scaled version of the same estimates.
NodeEstimatesReport PortEstimatesToNode(const EstimateTable& input, const NodeScaling& scaling,
                                        const EstimateTable* reference, EstimateTable* scaled);

// One reference check as a JSON row.
void to_json(nlohmann::ordered_json& j, const TermCheck& check);
// The report as JSON, with the node table's rows when `table` is given (NodeScalingToJson).
nlohmann::ordered_json NodeEstimatesReportToJson(const NodeEstimatesReport& report,
                                                 const NodeTable* table);

// A few lines for the terminal.
std::string FormatNodeEstimatesReport(const NodeEstimatesReport& report);

}  // namespace wattcal
