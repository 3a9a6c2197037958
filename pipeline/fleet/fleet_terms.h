// The terms of one GPU model across its GPUs (issue 39): idle, static and each component's W at
// full use, per GPU with its interval, the fleet median and the outliers.
//
// Outlier rule (documented in docs/fleet.md): a GPU is an outlier on a term when both
//   (a) its 95% interval excludes the fleet median of the term (for idle power, which has no
//       interval, its value stands for it), and
//   (b) its robust z-score 0.6745 (x - median) / MAD exceeds 3.5 in magnitude (Iglewicz and
//       Hoaglin's modified z-score; MAD the median absolute deviation; MAD = 0: any value off the
//       median counts).
// (a) alone flags most GPUs of a large fleet whose bootstrap intervals are narrow; (b) alone
// ignores how well each GPU's term is determined.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fleet/fleet_reduce.h"

namespace wattcal {

struct FleetTerm {
  // "idle", "static" or a component name.
  std::string name;
  // Per GPU of the model (FleetModel::gpus order); NaN where its model lacks the term.
  std::vector<TermEstimate> values;
  double median_w = 0.0;
  double mad_w = 0.0;
  // Per GPU: an outlier by the rule above.
  std::vector<bool> outlier;
  // The lowest and highest value over the GPUs that have it, W (NaN when none has).
  double min_w = std::numeric_limits<double>::quiet_NaN();
  double max_w = std::numeric_limits<double>::quiet_NaN();
  // max - min, W (0 when no GPU has it).
  double spread_w() const { return std::isfinite(min_w) ? max_w - min_w : 0.0; }
};

// The terms of `model` in the order idle, static, then the components of its first GPU's model
// (and any others in order of first appearance).
std::vector<FleetTerm> ModelTerms(const FleetResult& fleet, const FleetModel& model);

// The modified z-score threshold of the rule.
constexpr double kOutlierRobustZ = 3.5;

}  // namespace wattcal
