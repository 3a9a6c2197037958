#include "usecases/dvfs_stage.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "io/corpus_io.h"
#include "model/model_io.h"
#include "perf/dvfs_choice.h"
#include "perf/perf_models.h"
#include "report/perf_plots.h"
#include "usecases/perf_stage.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

void DvfsStageOptions::Check() const {
  auto fail = [](const std::string& m) { throw OptionError(m); };
  if (model_path.empty()) fail("model_path (--model) is required");
  if (activity_path.empty()) fail("activity_path (--activity) is required");
  if (times_path.empty()) fail("times_path (--times) is required");
  if (out_path.empty()) fail("out_path (--out) is required");
  if (!(std::isfinite(default_core_mhz) && default_core_mhz >= 0.0)) {
    fail(fmt::format("default_core_mhz = {} must be >= 0", default_core_mhz));
  }
  if (!(std::isfinite(default_mem_mhz) && default_mem_mhz >= 0.0)) {
    fail(fmt::format("default_mem_mhz = {} must be >= 0", default_mem_mhz));
  }
  if (plot_prefix.empty() && (!plot_kernels.empty() || !plot_models.empty())) {
    fail("plot_kernels / plot_models (--plot-kernels / --plot-models) need --plot-prefix");
  }
  std::string error;
  if (!dvfs.Check(&error)) fail(error);
}

void to_json(nlohmann::json& j, const DvfsStageOptions& o) {
  j = {{"objective", DvfsObjectiveName(o.dvfs.objective)},
       {"max_slowdown_pct", o.dvfs.max_slowdown_pct},
       {"power_mode", PowerModeName(o.dvfs.power_mode)},
       {"activity_scaling", ActivityScalingName(o.dvfs.activity_scaling)},
       {"perf_models", o.dvfs.perf_models},
       {"default_core_mhz", o.default_core_mhz},
       {"default_mem_mhz", o.default_mem_mhz}};
}

DvfsStageReport RunDvfsStage(const DvfsStageOptions& o) {
  o.Check();
  CorpusReadOptions read;
  read.default_core_mhz = o.default_core_mhz;
  read.default_mem_mhz = o.default_mem_mhz;
  const PowerModel model = ReadModel(o.model_path);
  const Corpus activity = ReadCorpus(o.activity_path, read);
  const std::vector<TimePrediction> times = ReadTimes(o.times_path);
  std::vector<ActualTime> actual;
  std::vector<std::string> inputs = {o.model_path, o.activity_path, o.times_path};
  if (!o.actual_path.empty()) {
    actual = ReadActualTimes(o.actual_path);
    inputs.push_back(o.actual_path);
  }
  const std::vector<DvfsChoice> choices = ChooseOperatingPoints(
      model, o.model_path, activity, times, o.times_path, actual, o.actual_path, o.dvfs);
  const std::vector<DvfsModelSummary> summary = SummariseDvfs(choices, o.dvfs);

  const nlohmann::json options = o;
  OutputSet outputs;
  outputs.StageText(o.out_path, DvfsChoicesToCsv(choices, o.dvfs));
  outputs.StageProvenance(o.out_path, "dvfs", inputs, options);
  if (!o.curves_out_path.empty()) {
    outputs.StageText(o.curves_out_path, DvfsCurvesToCsv(choices));
    outputs.StageProvenance(o.curves_out_path, "dvfs", inputs, options);
  }
  if (!o.summary_out_path.empty()) {
    outputs.StageText(o.summary_out_path, DumpJson(DvfsSummaryToJson(summary, o.dvfs)));
    outputs.StageProvenance(o.summary_out_path, "dvfs", inputs, options);
  }
  if (!o.plot_prefix.empty()) {
    const std::vector<std::string> plot_models =
        o.plot_models.empty() ? std::vector<std::string>{choices.front().perf_model}
                              : o.plot_models;
    for (const std::string& k : o.plot_kernels) {
      if (std::none_of(choices.begin(), choices.end(),
                       [&](const DvfsChoice& c) { return c.kernel == k; })) {
        throw OptionError("plot_kernels: no kernel '" + k + "' in " + o.times_path);
      }
    }
    for (const std::string& m : plot_models) {
      if (std::none_of(choices.begin(), choices.end(),
                       [&](const DvfsChoice& c) { return c.perf_model == m; })) {
        throw OptionError("plot_models: no choices made with run-time model '" + m + "'");
      }
    }
    for (const DvfsChoice& c : choices) {
      const bool kernel_drawn =
          o.plot_kernels.empty() ||
          std::find(o.plot_kernels.begin(), o.plot_kernels.end(), c.kernel) != o.plot_kernels.end();
      const bool model_drawn =
          std::find(plot_models.begin(), plot_models.end(), c.perf_model) != plot_models.end();
      if (!kernel_drawn || !model_drawn) continue;
      StageFigure(&outputs,
                  o.plot_prefix + "_" + FileNamePart(c.kernel) + "_" + FileNamePart(c.perf_model),
                  "dvfs", inputs, options, [&](const std::string& png, const std::string& svg) {
                    WriteDvfsPlot(c, o.dvfs.objective, png, svg);
                  });
    }
  }
  outputs.Commit();
  LogInfo(FormatDvfsSummary(summary, o.dvfs));
  LogInfo(fmt::format("wrote {} choices to {}", choices.size(), o.out_path));
  DvfsStageReport report;
  report.written = outputs.Outputs();
  return report;
}

}  // namespace wattcal
