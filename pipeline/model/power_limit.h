// The board's power limit and the training range at prediction time (SPEC.md "Real GPUs":
// predictions know the board's power limit and say when a workload would be capped; workloads
// far outside the training range are named, never predicted silently).
//
// Capping: a board under its power cap lowers its clock until P = P_limit, so the power it
// draws is
//   P_capped = min(P_model(U, f), P_limit)
// and, for a DVFS model (TPDS Eqs. 4-6), the clock it settles at is the core frequency f* on
// the model's V-F curve with
//   P(f*) = sum_k [ alpha0_k v_k(f*) + v_k(f*)^2 f*_k (alpha1_k + sum_i gamma_i U_i) ] = P_limit
// (memory clock held). With coefficients >= 0 and voltages non-decreasing in f, P(f) is
// non-decreasing along the curve, so f* is found by bisection between the lowest estimated
// level and the row's clock.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/power_model.h"

namespace wattcal {

// Flag names written in prediction outputs' `flags` columns (semicolon-separated).
inline constexpr const char* kPredictionFlagCapped = "capped";
// "util_beyond_training:<component>": the utilisation exceeds what training covered.
inline constexpr const char* kPredictionFlagUtilBeyondTraining = "util_beyond_training";
// The predicted power exceeds kPowerBeyondTrainingFactor x the training maximum.
inline constexpr const char* kPredictionFlagPowerBeyondTraining = "power_beyond_training";
// The row was measured off the reference clock (power cap / clock moved) and predicted at
// the reference clock instead.
inline constexpr const char* kPredictionFlagAtReferenceClock = "predicted_at_reference_clock";
// The model or the GPU description is of another GPU than the one the data was recorded on
// (wattcal-predict --capture --allow-other-gpu).
inline constexpr const char* kPredictionFlagOtherGpu = "other_gpu";
// "clock_beyond_model:<domain>": the row's own clock lies outside the model's frequency levels,
// and it was predicted at the model's reference clock instead (wattcal-predict --mode fixed).
inline constexpr const char* kPredictionFlagClockBeyondModel = "clock_beyond_model";

// "below_curve:<lowest>MHz": the cap settles below the lowest clock of the model's vf_curve,
// where the curve's voltage is held at its lowest point (model/vf_curve.h).
inline constexpr const char* kPredictionFlagBelowCurve = "below_curve";

// A utilisation U_i is beyond training when U_i > kUtilBeyondTrainingFactor * max_train_i +
// kUtilBeyondTrainingMargin; a power P is when P > kPowerBeyondTrainingFactor * max_train_P.
inline constexpr double kUtilBeyondTrainingFactor = 1.25;
inline constexpr double kUtilBeyondTrainingMargin = 0.05;
inline constexpr double kPowerBeyondTrainingFactor = 1.5;

// U_i > kUtilBeyondTrainingFactor * max_train_i + kUtilBeyondTrainingMargin (the rule above).
bool UtilBeyondTraining(double util_frac, double max_train_util_frac);

struct CappedPower {
  // min(uncapped_w, limit): what the board would draw, W.
  double predicted_w = 0.0;
  // The model's power at the evaluated clock, W.
  double uncapped_w = 0.0;
  // True when uncapped_w > limit.
  bool capped = false;
  // DVFS model and capped: the core clock where P(f) meets the limit (MHz); NaN when not
  // capped, for a fixed model, or when even the lowest estimated level exceeds the limit.
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
};

// P_capped = min(P_model(U, f), P_limit) at utilisations `util_frac` and frequencies
// `freq_mhz` (covered by the model); an unset `power_limit_w` means no limit (never capped).
CappedPower ApplyPowerLimit(const PowerModel& model, const double* util_frac,
                            const double* freq_mhz, std::optional<double> power_limit_w);

// The core clock f* (MHz) on the model's V-F curve where P(U, f*, f_mem) = `power_limit_w`,
// searched between the lowest estimated core level and freq_mhz[0] (to 0.01 MHz). Returns
// freq_mhz[0] when P there is within the limit, and NaN when P at the lowest level already
// exceeds the limit. A model with a single core level moves along its vf_curve (model/vf_curve.h)
// instead, from freq_mhz[0] (its reference) down to SettleSearchFloorMhz; NaN without a curve.
double CapCoreFrequencyMhz(const PowerModel& model, const double* util_frac, const double* freq_mhz,
                           double power_limit_w);

// The highest clock in [lo_mhz, hi_mhz] (to 0.01 MHz) whose `power_at(f)` is within the limit,
// by bisection (power non-decreasing in f): hi_mhz when P(hi) is within it, NaN when P(lo) is not.
template <typename PowerAt>
double SettleClockMhz(const PowerAt& power_at, double lo_mhz, double hi_mhz, double power_limit_w);

// Along a vf_curve a cap may settle below the curve's lowest clock (v held there, flagged): the
// search stops at this fraction of the reference clock.
inline constexpr double kSettleSearchFloorFraction = 0.2;

// The one rule for the board's power limit: the first that is set of `flag_w` (--power-limit-w),
// `data_w` (the corpus's or capture's, read from the measurements) and `model_w` (the model's,
// itself resolved when it was calibrated); unset when none is. A flag overrides the files.
std::optional<double> ResolvePowerLimitW(std::optional<double> flag_w,
                                         std::optional<double> data_w = std::nullopt,
                                         std::optional<double> model_w = std::nullopt);

// A warning when `power_limit_w` lies below the model's power with nothing running (its static
// and component-independent terms at the reference pair): every prediction would then be capped,
// which is a wrong limit (mW read as W, another GPU's limit) far more often than a real one.
// "" when the limit is unset or above that power.
std::string PowerLimitBelowIdleWarning(const PowerModel& model,
                                       std::optional<double> power_limit_w);

// The extrapolation flags of one prediction against the model's training range:
// "util_beyond_training:<component>" per component beyond it, then "power_beyond_training".
// Empty when the range is unknown or nothing exceeds it.
std::vector<std::string> ExtrapolationFlags(const PowerModel& model, const double* util_frac,
                                            double predicted_w);

// One warning sentence naming the workload and what is beyond training, e.g.
// "k1: SP utilisation 0.9 > 1.25 x training max 0.3 + 0.05; predicted 6.28e+06 W > 1.5 x
// training max 247 W"; "" when nothing is.
std::string ExtrapolationMessage(const PowerModel& model, const std::string& workload,
                                 const double* util_frac, double predicted_w);

// Joins flag names with ';' (the `flags` column's form).
std::string JoinFlags(const std::vector<std::string>& flags);

// One warning for the predictions beyond the training range, from their ExtrapolationMessage
// notes (empty ones skipped): the count, the rule, and the first 10 notes; "" when none.
std::string ExtrapolationWarningFromNotes(const std::vector<std::string>& notes);

template <typename PowerAt>
double SettleClockMhz(const PowerAt& power_at, double lo_mhz, double hi_mhz, double power_limit_w) {
  // Bisection stops when the bracket is this narrow, MHz.
  constexpr double kToleranceMhz = 0.01;
  double hi = hi_mhz, lo = lo_mhz;
  if (power_at(hi) <= power_limit_w) return hi;
  if (power_at(lo) > power_limit_w) return std::numeric_limits<double>::quiet_NaN();
  while (hi - lo > kToleranceMhz) {
    const double mid = 0.5 * (lo + hi);
    (power_at(mid) > power_limit_w ? hi : lo) = mid;
  }
  // The highest clock (to the tolerance) whose power is within the limit.
  return std::floor(lo / kToleranceMhz) * kToleranceMhz;
}

}  // namespace wattcal
