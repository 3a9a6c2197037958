#include "accelwattch/accelwattch_validation.h"

#include <fmt/format.h>

#include <cmath>

#include "accelwattch/activity.h"
#include "accelwattch/power_model.h"
#include "util/logging.h"

namespace wattcal {

AccelWattchValidationReport RunAccelWattchValidation(const AccelWattchValidationRequest& request,
                                                     const MetricsOptions& metrics) {
  AccelWattchValidationReport run;
  // A whole AccelWattch Eq. 12 model validates on an activity table (kernels at any V-F pair, SM
  // count and lane count); everything else on a per-kernel component table.
  AccelWattchModel fitted;
  const bool with_model = !request.loko && !request.model_path.empty();
  if (with_model) fitted = ReadAccelWattchModel(request.model_path);
  const bool on_activity =
      with_model && fitted.has_terms && LooksLikeActivityTable(request.table_path);
  ActivityTable activity;
  if (on_activity) activity = ReadActivityTable(request.table_path);
  const ComponentTable table = on_activity
                                   ? BuildComponentTable(activity, fitted.energies, fitted.fixed)
                                   : ReadComponentTable(request.table_path);
  LogInfo(fmt::format("read {} kernels x {} components ({} form) from {}", table.num_kernels(),
                      table.num_components(), table.format, request.table_path));
  nlohmann::json extra;
  std::vector<std::string> components = table.components;
  if (request.loko) {
    run.variant = "loko";
    run.inputs = {request.table_path};
    const AccelWattchLokoReport loko = LeaveOneKernelOut(table, request.fit);
    run.rows = loko.rows;
    extra["cv"] = "loko";
    extra["prior_weight"] = request.fit.prior_weight;
    extra["prior_source"] = request.fit.prior_x.empty() ? "x = 1" : request.fit.prior_source;
    extra["max_constraint_violation"] = loko.max_constraint_violation;
    nlohmann::json fold_x = nlohmann::json::array();
    for (size_t k = 0; k < loko.fold_models.size(); ++k) {
      fold_x.push_back({{"kernel", table.kernels[k]}, {"x", loko.fold_models[k].x}});
    }
    extra["fold_x"] = fold_x;
  } else if (!request.model_path.empty()) {
    run.variant = "model";
    run.inputs = {request.model_path, request.table_path};
    run.rows = PredictKernels(fitted, table);
    if (on_activity) {
      for (size_t k = 0; k < run.rows.size(); ++k) {
        run.rows[k].f_core_mhz = activity.kernels[k].f_core_mhz;
        run.rows[k].f_mem_mhz = activity.kernels[k].f_mem_mhz;
      }
      extra["table_form"] = "activity: Eq. 12 with the model's energy estimates and fixed terms";
    }
    components = fitted.components;
    extra["model"] = request.model_path;
  } else {
    run.variant = "published";
    run.inputs = {request.table_path};
    run.rows = PredictKernels(PublishedAccelWattchModel(table), table);
    if (table.published_total_mismatches > 0) {
      extra["published_total_mismatches"] = table.published_total_mismatches;
      extra["published_total_max_abs_diff_w"] = table.published_total_max_abs_diff_w;
    }
  }

  const std::string title = !request.title.empty()       ? request.title
                            : run.variant == "published" ? "AccelWattch published model (x = 1)"
                            : run.variant == "model"
                                ? "AccelWattch fitted scaling factors"
                                : fmt::format(
                                      "AccelWattch leave-one-kernel-out re-estimation "
                                      "(prior weight {})",
                                      request.fit.prior_weight);
  ValidationReport& out = run.outcome;
  out.title = title;
  out.metrics = ComputeValidationMetrics(run.rows, metrics);
  out.json = MetricsToJson(out.metrics, metrics);
  // The component tables hold one (default) clock per kernel and do not record it: no per-pair
  // breakdown (activity tables record each kernel's pair).
  if (!on_activity) out.json.erase("per_freq_pair");
  out.json["mode"] = "accelwattch";
  out.json["variant"] = run.variant;
  out.json["title"] = title;
  out.json["measurements"] = request.table_path;
  out.json["components"] = components;
  for (auto it = extra.begin(); it != extra.end(); ++it) out.json[it.key()] = it.value();
  out.table = FormatMetricsTable(out.metrics, metrics, title);
  const ErrorMetrics& e = out.metrics.overall;
  out.table += fmt::format("  MAPE {:.2f} +/- {:.2f} % ({} interval)\n", e.mape_pct,
                           0.5 * (e.mape_ci_high_pct - e.mape_ci_low_pct),
                           MapeCiMethodName(metrics.ci_method));
  return run;
}

}  // namespace wattcal
