// Writing and reading calibrated power models: wattcal's versioned JSON and gpmTOOL's
// model CSV. Every problem with a model file is an InputError naming FILE:LINE and the field.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/power_model.h"

namespace wattcal {

// The `format` value of wattcal's JSON model files.
inline constexpr const char* kModelJsonFormat = "wattcal-power-model";

// The model as versioned JSON (format kModelJsonFormat, version PowerModel::kFormatVersion):
//   format, version, wattcal_version, method, trained_on,
//   gpu: the product name of the GPU the training data came from (only when known),
//   layout: {domains: [{name, default_freq_mhz, components: [...]}, ...]},
//   freq_levels_mhz: [[...] per domain], voltage_rel: [[...] per domain],
//   static_w: [per domain], idle_dyn_w_per_mhz: [per domain],
//   component_w_per_mhz: [{component, w_per_mhz}, ...] in layout order,
//   power_limit_w: W in (0, 10000] or null (unknown),
//   training_range: {max_power_w, max_util_frac: [{component, max_util_frac}, ...]} (only
//     when known),
//   training_notes: [sentences: flagged rows left out, unidentifiable rows],
//   coefficient_ci95 (with --bootstrap),
//   vf_curve: {levels_mhz, v_rel, f_min_mhz, f_max_mhz, source} (model/vf_curve.h; only when
//     known; f_min_mhz and f_max_mhz are written for readers, not read back),
//   prediction_interval (with --bootstrap): {oob_predictions, oob_ratio_quantiles: [199],
//     replicate_coefficients: [[coefficients] per replicate]} (PredictionIntervalData),
//   component_trust: [{component, full_use_w, full_use_w_ci95, trained_up_to_frac, flags}, ...]
//     (model/component_trust.h; derived, written for readers, never read back),
//   fit: {every FitReport field under its own name}.
// gpu, power_limit_w, training_range and training_notes are optional when read (older files).
// Keys are written in this order; numbers round-trip exactly.
void to_json(nlohmann::ordered_json& j, const PowerModel& model);
// The file's text: the JSON above, indented by 2, with a final newline.
std::string ModelToJson(const PowerModel& model);
// The model file's "fit" and "coefficient_ci95" objects.
void to_json(nlohmann::ordered_json& j, const FitReport& fit);
void to_json(nlohmann::ordered_json& j, const CoefficientCi& ci);

// The model in gpmTOOL's model-file format: the 4 header lines, one frequency-level line per
// domain, the coefficient line [alpha0_k..., alpha1_k..., gamma_i...] (gpmTOOL's beta0..beta3,
// omega_i), then one relative-voltage line per domain. Numbers are printed with %.17g
// (round-trip exact); frequencies are printed as integers when integral.
std::string ModelToGpmtoolCsv(const PowerModel& model);

// Reads either format: JSON when the first non-blank byte is '{', else gpmTOOL's CSV (whose
// numeric lines may end with one trailing comma). A gpmTOOL model whose domains each have
// one frequency level is method "fixed", else "dvfs"; its fit report is empty.
// Throws InputError on a missing or mistyped key, a wrong format or version, wrong counts,
// frequency levels not strictly increasing, non-positive frequencies or voltages, or a
// non-finite number. Negative coefficients are accepted.
PowerModel ReadModel(const std::string& path);

}  // namespace wattcal
