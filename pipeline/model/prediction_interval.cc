#include "model/prediction_interval.h"

#include <algorithm>
#include <cmath>

#include "util/stats.h"

namespace wattcal {

std::string NoPredictionIntervalReason(const PowerModel& model) {
  if (model.prediction_interval.known() && !model.Derived()) return "";
  std::string why;
  if (model.Derived()) {
    why = "a ported or scaled model (its bootstrap replicates would be its base model's)";
  } else if (model.method != FitMethod::kFixed) {
    why =
        "a DVFS model (TPDS Eqs. 4-6; the bootstrap that gives the interval is of the fixed "
        "method only)";
  } else {
    why = "a fixed model calibrated without --bootstrap N (calibrate with --bootstrap 200)";
  }
  return "no 95% prediction interval (predicted_w_lo, predicted_w_hi are empty): " + why;
}

PowerInterval PredictionInterval95(const PowerModel& model, const double* util_frac,
                                   const double* freq_mhz, std::optional<double> power_limit_w,
                                   double predicted_w) {
  PowerInterval out;
  const PredictionIntervalData& data = model.prediction_interval;
  // A ported or scaled model's replicates would be its base model's (PowerModel::Derived).
  if (!data.known() || model.Derived()) return out;
  // One scratch model whose coefficients are each replicate's in turn (TPDS Eq. 9 at the
  // reference pair for a fixed model).
  PowerModel replicate = model;
  replicate.prediction_interval = PredictionIntervalData();
  std::vector<double> products;
  products.reserve(data.replicate_coefficients.size() * data.oob_ratio_quantiles.size());
  for (const std::vector<double>& x : data.replicate_coefficients) {
    replicate.SetCoefficients(x);
    double p = replicate.Predict(util_frac, freq_mhz);
    if (power_limit_w) p = std::min(p, *power_limit_w);
    for (double q : data.oob_ratio_quantiles) products.push_back(p * q);
  }
  const double tail = (1.0 - kPredictionIntervalLevel) / 2.0;
  out.lo_w = std::min(Quantile(products, tail), predicted_w);
  out.hi_w = std::max(Quantile(products, 1.0 - tail), predicted_w);
  if (power_limit_w) out.hi_w = std::min(out.hi_w, std::max(*power_limit_w, predicted_w));
  out.lo_w = std::max(out.lo_w, 0.0);
  return out;
}

}  // namespace wattcal
