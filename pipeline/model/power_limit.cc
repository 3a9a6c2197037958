#include "model/power_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/vf_curve.h"

namespace wattcal {

CappedPower ApplyPowerLimit(const PowerModel& model, const double* util_frac,
                            const double* freq_mhz, std::optional<double> power_limit_w) {
  CappedPower out;
  out.uncapped_w = model.Predict(util_frac, freq_mhz);
  out.predicted_w = out.uncapped_w;
  if (!power_limit_w || !(out.uncapped_w > *power_limit_w)) return out;
  // P_capped = min(P_model, P_limit): the board's cap holds the power at the limit.
  out.predicted_w = *power_limit_w;
  out.capped = true;
  out.f_core_mhz = CapCoreFrequencyMhz(model, util_frac, freq_mhz, *power_limit_w);
  return out;
}

double CapCoreFrequencyMhz(const PowerModel& model, const double* util_frac, const double* freq_mhz,
                           double power_limit_w) {
  const std::vector<double>& levels = model.freq_levels_mhz[0];
  if (levels.size() < 2) {
    // A fixed model: along its V-F curve (TPDS Eq. 4 with the curve's v), when it has one.
    const VfCurve& curve = model.vf_curve;
    if (!curve.known()) return std::numeric_limits<double>::quiet_NaN();
    auto on_curve = [&](double f_core) { return PowerOnCurve(model, curve, util_frac, f_core); };
    return SettleClockMhz(on_curve, kSettleSearchFloorFraction * curve.reference_mhz(),
                          std::min(freq_mhz[0], curve.reference_mhz()), power_limit_w);
  }
  std::vector<double> f(freq_mhz, freq_mhz + model.layout.num_domains());
  // P along the core V-F curve (TPDS Eq. 4 with v_core(f) interpolated between levels).
  auto power_at = [&](double f_core) {
    f[0] = f_core;
    return model.Predict(util_frac, f.data());
  };
  return SettleClockMhz(power_at, levels.front(), std::min(freq_mhz[0], levels.back()),
                        power_limit_w);
}

std::optional<double> ResolvePowerLimitW(std::optional<double> flag_w, std::optional<double> data_w,
                                         std::optional<double> model_w) {
  if (flag_w) return flag_w;
  if (data_w) return data_w;
  return model_w;
}

bool UtilBeyondTraining(double u, double max_train) {
  return u > kUtilBeyondTrainingFactor * max_train + kUtilBeyondTrainingMargin;
}

namespace {

bool UtilBeyond(double u, double max_train) { return UtilBeyondTraining(u, max_train); }

bool PowerBeyond(double p, double max_train_w) {
  return std::isfinite(max_train_w) && p > kPowerBeyondTrainingFactor * max_train_w;
}

}  // namespace

std::vector<std::string> ExtrapolationFlags(const PowerModel& model, const double* util_frac,
                                            double predicted_w) {
  std::vector<std::string> flags;
  const TrainingRange& range = model.training_range;
  if (!range.known()) return flags;
  const std::vector<std::string> names = model.layout.ComponentNames();
  for (size_t i = 0; i < names.size() && i < range.max_util_frac.size(); ++i) {
    if (UtilBeyond(util_frac[i], range.max_util_frac[i])) {
      flags.push_back(std::string(kPredictionFlagUtilBeyondTraining) + ":" + names[i]);
    }
  }
  if (PowerBeyond(predicted_w, range.max_power_w))
    flags.push_back(kPredictionFlagPowerBeyondTraining);
  return flags;
}

std::string ExtrapolationMessage(const PowerModel& model, const std::string& workload,
                                 const double* util_frac, double predicted_w) {
  const TrainingRange& range = model.training_range;
  if (!range.known()) return "";
  std::string parts;
  const std::vector<std::string> names = model.layout.ComponentNames();
  for (size_t i = 0; i < names.size() && i < range.max_util_frac.size(); ++i) {
    if (!UtilBeyond(util_frac[i], range.max_util_frac[i])) continue;
    parts +=
        fmt::format("{}{} utilisation {:.4g} > {} x training max {:.4g} + {}",
                    parts.empty() ? "" : "; ", names[i], util_frac[i], kUtilBeyondTrainingFactor,
                    range.max_util_frac[i], kUtilBeyondTrainingMargin);
  }
  if (PowerBeyond(predicted_w, range.max_power_w)) {
    parts +=
        fmt::format("{}predicted {:.4g} W > {} x training max {:.4g} W", parts.empty() ? "" : "; ",
                    predicted_w, kPowerBeyondTrainingFactor, range.max_power_w);
  }
  return parts.empty() ? "" : workload + ": " + parts;
}

std::string JoinFlags(const std::vector<std::string>& flags) {
  std::string s;
  for (const std::string& f : flags) s += (s.empty() ? "" : ";") + f;
  return s;
}

std::string ExtrapolationWarningFromNotes(const std::vector<std::string>& notes_in) {
  constexpr size_t kMaxListed = 10;
  std::vector<std::string> notes;
  for (const std::string& n : notes_in) {
    if (!n.empty()) notes.push_back(n);
  }
  if (notes.empty()) return "";
  std::string s = fmt::format(
      "{} prediction(s) lie beyond the training range (utilisation > {} x "
      "training max + {}, or power > {} x training max): ",
      notes.size(), kUtilBeyondTrainingFactor, kUtilBeyondTrainingMargin,
      kPowerBeyondTrainingFactor);
  for (size_t i = 0; i < notes.size() && i < kMaxListed; ++i) s += (i > 0 ? " | " : "") + notes[i];
  if (notes.size() > kMaxListed) s += fmt::format(" | and {} more", notes.size() - kMaxListed);
  return s;
}

std::string PowerLimitBelowIdleWarning(const PowerModel& model,
                                       std::optional<double> power_limit_w) {
  if (!power_limit_w) return "";
  std::vector<double> nothing(static_cast<size_t>(model.layout.num_components()), 0.0);
  std::vector<double> reference = model.DefaultFrequencies();
  if (model.method == FitMethod::kFixed) {
    for (size_t d = 0; d < reference.size(); ++d) reference[d] = model.freq_levels_mhz[d].front();
  }
  const double idle_w = model.Predict(nothing.data(), reference.data());
  if (*power_limit_w >= idle_w) return "";
  return fmt::format(
      "the board power limit {:.1f} W is below the model's power with nothing running ({:.1f} W, "
      "its static and component-independent terms): every prediction is capped at it. Is it the "
      "right limit (in W, of this GPU)? Give the right one with --power-limit-w",
      *power_limit_w, idle_w);
}

}  // namespace wattcal
