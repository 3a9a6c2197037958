// How far to trust each component of a calibrated model: what its coefficient means in watts,
// how well the data pinned it, and how far the training rows reached. A coefficient fitted only
// on low utilisations (the H100 capture's TENSOR, trained up to 0.14 because the saturating
// window hit the power cap) is an extrapolation for every program that uses the unit more; one
// whose bootstrap interval holds zero was not told apart from nothing.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "model/power_model.h"

namespace wattcal {

// One component's row of the trust table.
struct ComponentTrust {
  std::string component;
  std::string domain;
  double w_per_mhz = 0.0;
  // Power at full use at the default pair (v = 1): gamma_i x f_default (TPDS Eq. 9's term for
  // U_i = 1), W; and the bootstrap 95% interval of the same, when the model has one.
  double full_use_w = 0.0;
  bool has_ci = false;
  double ci_low_w = 0.0;
  double ci_high_w = 0.0;
  // The largest utilisation among the training rows; NaN when the model does not record it.
  double trained_up_to = std::numeric_limits<double>::quiet_NaN();
  // kTrust* flags that apply, in that order.
  std::vector<std::string> flags;
};

// Trained only below this utilisation: predictions above it extrapolate.
inline constexpr double kTrustHalfUse = 0.5;
inline constexpr const char* kTrustBelowHalfUse = "trained_below_half_use";
inline constexpr const char* kTrustIntervalHoldsZero = "interval_holds_zero";
inline constexpr const char* kTrustAboveBoardLimit = "full_use_above_board_limit";

// A prediction extrapolates a component when that component carries more than this share of
// its (uncapped) power while the workload uses it beyond trained_up_to (by the rule of
// util_beyond_training, model/power_limit.h: above 1.25 x trained_up_to + 0.05), or while the
// component's bootstrap interval holds zero (the data did not tell its power from nothing).
inline constexpr double kExtrapolatesShare = 0.10;
// The flag's name, written "extrapolates:<component>" in the flags column.
inline constexpr const char* kPredictionFlagExtrapolates = "extrapolates";

// The table, one row per component in layout order.
std::vector<ComponentTrust> ComponentTrustTable(const PowerModel& model);

// "extrapolates:<component>" for each component of `table` whose term of the breakdown
// (`component_w`, layout order, W) is more than kExtrapolatesShare of `uncapped_w` while
// UtilBeyondTraining(util_frac[i], trained_up_to) or the component is flagged
// kTrustIntervalHoldsZero.
std::vector<std::string> ExtrapolatesFlags(const std::vector<ComponentTrust>& table,
                                           const double* util_frac,
                                           const std::vector<double>& component_w,
                                           double uncapped_w);

// The table for a terminal: aligned columns, units in the header, flags spelled out.
std::string ComponentTrustText(const std::vector<ComponentTrust>& table);

// One sentence per flagged component ("TENSOR: trained up to 0.14 of full use; ..."), for
// summaries and reports; empty when nothing is flagged.
std::vector<std::string> ComponentTrustWarnings(const std::vector<ComponentTrust>& table);

}  // namespace wattcal
