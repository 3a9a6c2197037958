// The 95% prediction interval of a fixed model's prediction (model.prediction_interval, kept by
// wattcal-calibrate --bootstrap N): how far the measured power of a workload the model has not
// seen may lie from the prediction.
//
// Each of the N bootstrap replicates b (the fixed model refitted on a resample of the training
// benchmarks) predicts the workload, P_b = TPDS Eq. 9 with replicate b's coefficients, capped at
// the board's limit; each replicate also predicted the training benchmarks its resample left
// out, and the ratios measured / predicted over all of them (r_1..r_M, kept as 199 quantiles q_k)
// are a cross-validated error distribution. The interval is the 2.5% and 97.5% percentiles of
// the N x 199 products P_b q_k: the spread of the coefficients at this workload's utilisations
// (wide where a component's coefficient is poorly pinned) combined with the error of the model on
// benchmarks it did not see (the out-of-bag idea of jackknife+-after-bootstrap: Kim, Xu and
// Barber, NeurIPS 2020, with ratios instead of absolute residuals, since the error grows with the
// power). The interval always holds the point prediction, and a capped interval is capped too
// (a settled board draws no more than its limit).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/power_model.h"

namespace wattcal {

inline constexpr double kPredictionIntervalLevel = 0.95;

struct PowerInterval {
  // W; NaN when the model holds no prediction interval.
  double lo_w = std::numeric_limits<double>::quiet_NaN();
  double hi_w = std::numeric_limits<double>::quiet_NaN();
  bool known() const { return lo_w == lo_w; }
};

// The interval of the prediction `predicted_w` (the model's own, capped) at `util_frac` and
// `freq_mhz`; an unset `power_limit_w` = no limit. Unknown (NaN) when the model holds no interval
// (!model.prediction_interval.known(): a DVFS model, a fixed one without --bootstrap) or is
// ported or scaled (model.Derived()).
PowerInterval PredictionInterval95(const PowerModel& model, const double* util_frac,
                                   const double* freq_mhz, std::optional<double> power_limit_w,
                                   double predicted_w);

// Why the model's predictions carry no interval ("a DVFS model: ..."); "" when they do.
std::string NoPredictionIntervalReason(const PowerModel& model);

}  // namespace wattcal
