#include "usecases/perf_stage.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "perf/crisp_counters.h"
#include "perf/cycle_classifier.h"
#include "perf/perf_models.h"
#include "perf/perf_suite.h"
#include "perf/perf_validation.h"
#include "perf/timeline.h"
#include "report/perf_plots.h"
#include "synth/synthetic_corpus.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/option_rule.h"
#include "util/output.h"

namespace wattcal {

std::string FileNamePart(const std::string& name) {
  std::string part = name;
  for (char& c : part) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return part;
}

void StageFigure(OutputSet* outputs, const std::string& prefix, const std::string& stage,
                 const std::vector<std::string>& inputs, const nlohmann::json& options,
                 const std::function<void(const std::string&, const std::string&)>& draw) {
  const std::string png = prefix + ".png";
  const std::string svg = prefix + ".svg";
  draw(outputs->Stage(png), outputs->Stage(svg));
  outputs->StageProvenance(png, stage, inputs, options);
  outputs->StageProvenance(svg, stage, inputs, options);
}

namespace {

bool CheckFrequencies(const std::vector<double>& freqs, const char* field, std::string* error) {
  for (size_t i = 0; i < freqs.size(); ++i) {
    if (!(std::isfinite(freqs[i]) && freqs[i] > 0.0))
      return RejectOption(error, "{}[{}] = {} must be a finite frequency > 0 MHz", field, i,
                          freqs[i]);
  }
  return true;
}

std::vector<double> SortedUnique(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

PerfStageReport RunPerfSimulation(const PerfStageOptions& o) {
  PerfSuiteSpec spec = ReadPerfSuiteSpec(o.simulate_spec_path);
  std::vector<std::string> inputs = {o.simulate_spec_path};
  Layout layout;
  if (!o.activity_spec_path.empty()) {
    const SyntheticSpec gpu = ReadSyntheticSpec(o.activity_spec_path);
    inputs.push_back(o.activity_spec_path);
    layout = gpu.layout;
    const double f0 = layout.domains[0].default_freq_mhz;
    if (o.base_mhz > 0.0 && o.base_mhz != f0) {
      throw OptionError(
          fmt::format("base_mhz = {} (--base-mhz) differs from the activity spec's "
                      "default core frequency {} MHz: the activity must be measured "
                      "at the default pair",
                      o.base_mhz, f0));
    }
    spec.base_mhz = f0;
    spec.targets_mhz = gpu.voltage[0].freq_levels_mhz;
  }
  if (o.base_mhz > 0.0) spec.base_mhz = o.base_mhz;
  if (!o.targets_mhz.empty()) spec.targets_mhz = SortedUnique(o.targets_mhz);
  std::string error;
  if (!spec.Check(&error)) throw OptionError("the run-time suite with the given flags: " + error);
  ClassifierOptions classifier;
  classifier.miss_latency_cycles = o.miss_latency_cycles;

  const PerfCampaignReport campaign = RunPerfCampaign(spec, classifier, o.threads);
  const nlohmann::json options = o;
  OutputSet outputs;
  auto stage = [&](const std::string& name, const std::string& content) {
    const std::string path = o.out_dir + "/" + name;
    outputs.StageText(path, content);
    outputs.StageProvenance(path, "perf", inputs, options);
  };
  stage("counters.csv", CrispCountersToCsv(campaign.counters));
  stage("actual_times.csv", ActualTimesToCsv(campaign.actual));
  if (o.write_timelines) stage("timelines.csv", TimelinesToCsv(campaign.timelines));
  if (!o.activity_spec_path.empty()) {
    stage("activity.csv", CampaignActivityToTidyCsv(spec, campaign, layout, o.simulate_spec_path));
  }
  outputs.Commit();
  std::string table = fmt::format(
      "{}: {} kernels at {:g} MHz (times at {} frequencies); share of cycles:\n  {:<20} {:>10} "
      "{:>9} {:>9} {:>9} {:>9}\n",
      spec.name, spec.kernels.size(), spec.base_mhz, spec.targets_mhz.size(), "kernel", "cycles",
      "pure_cmp", "load_stl", "ovl_cmp", "store_stl");
  for (const CrispCounters& c : campaign.counters) {
    table += fmt::format(
        "  {:<20} {:>10.0f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}\n", c.kernel, c.total_cycles,
        c.pure_computation_cycles() / c.total_cycles, c.load_stall_cycles / c.total_cycles,
        c.overlapped_computation_cycles() / c.total_cycles, c.store_stall_cycles / c.total_cycles);
  }
  LogInfo(table + "wrote " + o.out_dir);
  PerfStageReport report;
  report.written = outputs.Outputs();
  return report;
}

}  // namespace

void PerfStageOptions::Check() const {
  auto fail = [](const std::string& m) { throw OptionError(m); };
  const int inputs = !counters_path.empty() + !timelines_path.empty() + !simulate_spec_path.empty();
  if (inputs != 1) {
    fail(
        "give exactly one of counters_path (--counters), timelines_path (--timelines) "
        "and simulate_spec_path (--simulate)");
  }
  std::string error;
  if (!CheckFrequencies(targets_mhz, "targets_mhz", &error)) fail(error);
  if (!(std::isfinite(base_mhz) && base_mhz >= 0.0)) {
    fail(fmt::format("base_mhz = {} must be >= 0 (0: the spec's)", base_mhz));
  }
  if (!(std::isfinite(miss_latency_cycles) && miss_latency_cycles >= 0.0)) {
    fail(fmt::format("miss_latency_cycles = {} must be >= 0", miss_latency_cycles));
  }
  if (threads < 1) fail(fmt::format("threads = {} must be >= 1", threads));
  if (!(std::isfinite(max_mape_pct) && max_mape_pct >= 0.0)) {
    fail(fmt::format("max_mape_pct = {} must be >= 0 (0: no gate)", max_mape_pct));
  }
  std::set<PerfModelKind> seen;
  for (PerfModelKind m : models) {
    if (!seen.insert(m).second) fail(std::string("models lists '") + PerfModelName(m) + "' twice");
  }
  if (!simulate_spec_path.empty()) {
    if (out_dir.empty()) fail("out_dir (--out-dir) is required with --simulate");
    for (const auto& [value, flag] : std::vector<std::pair<std::string, const char*>>{
             {out_path, "out_path (--out)"},
             {counters_out_path, "counters_out_path (--counters-out)"},
             {actual_path, "actual_path (--actual)"},
             {validation_out_path, "validation_out_path (--validation-out)"},
             {errors_out_path, "errors_out_path (--errors-out)"},
             {plot_prefix, "plot_prefix (--plot-prefix)"}}) {
      if (!value.empty()) fail(std::string(flag) + " is not used with --simulate");
    }
    if (!models.empty()) fail("models (--models) is not used with --simulate");
    if (!plot_kernels.empty()) fail("plot_kernels (--plot-kernels) is not used with --simulate");
    if (max_mape_pct > 0.0) fail("max_mape_pct (--max-mape-pct) is not used with --simulate");
    return;
  }
  if (out_path.empty()) fail("out_path (--out) is required");
  if (!out_dir.empty()) fail("out_dir (--out-dir) is only used with --simulate");
  if (targets_mhz.empty()) fail("targets_mhz is empty: give --targets-mhz");
  if (base_mhz != 0.0) fail("base_mhz (--base-mhz) is only used with --simulate");
  if (!activity_spec_path.empty())
    fail("activity_spec_path (--activity-spec) is only used with --simulate");
  if (write_timelines) fail("write_timelines (--write-timelines) is only used with --simulate");
  if (!counters_out_path.empty() && timelines_path.empty()) {
    fail("counters_out_path (--counters-out) is only used with --timelines");
  }
  if (actual_path.empty() != validation_out_path.empty()) {
    fail("actual_path (--actual) and validation_out_path (--validation-out) go together");
  }
  if (actual_path.empty()) {
    if (!errors_out_path.empty()) fail("errors_out_path (--errors-out) needs --actual");
    if (!plot_prefix.empty()) fail("plot_prefix (--plot-prefix) needs --actual");
    if (max_mape_pct > 0.0) fail("max_mape_pct (--max-mape-pct) needs --actual");
  }
  if (!plot_kernels.empty() && plot_prefix.empty()) {
    fail("plot_kernels (--plot-kernels) needs --plot-prefix");
  }
  if (max_mape_pct > 0.0 && !models.empty() &&
      std::find(models.begin(), models.end(), PerfModelKind::kCrisp) == models.end()) {
    fail("max_mape_pct gates crisp's MAPE; add crisp to models (--models)");
  }
}

void to_json(nlohmann::json& j, const PerfStageOptions& o) {
  j = nlohmann::json::object();
  if (!o.simulate_spec_path.empty()) {
    j["mode"] = "simulate";
    j["base_mhz"] = o.base_mhz;
    j["targets_mhz"] = SortedUnique(o.targets_mhz);
    j["activity_spec"] = o.activity_spec_path;
    j["write_timelines"] = o.write_timelines;
    j["miss_latency_cycles"] = o.miss_latency_cycles;
    return;
  }
  j["mode"] = o.counters_path.empty() ? "timelines" : "counters";
  j["targets_mhz"] = SortedUnique(o.targets_mhz);
  std::vector<std::string> models;
  for (PerfModelKind m : o.models) models.push_back(PerfModelName(m));
  j["models"] = models;
  if (!o.timelines_path.empty()) j["miss_latency_cycles"] = o.miss_latency_cycles;
  if (!o.actual_path.empty()) j["max_mape_pct"] = o.max_mape_pct;
}

namespace {

// The kernels' CRISP counters: read from --counters, or classified from --timelines.
std::vector<CrispCounters> PerfInputCounters(const PerfStageOptions& o, std::string* input_path) {
  if (!o.counters_path.empty()) {
    *input_path = o.counters_path;
    return ReadCrispCounters(o.counters_path);
  }
  *input_path = o.timelines_path;
  ClassifierOptions classifier;
  classifier.miss_latency_cycles = o.miss_latency_cycles;
  std::vector<CrispCounters> counters;
  for (const Timeline& t : ReadTimelines(o.timelines_path)) {
    counters.push_back(ClassifyTimeline(t, classifier).counters);
    counters.back().line = t.line;
  }
  return counters;
}

// --actual: the predictions against the measured run times, staged with their figures; returns
// the exit code (kExitFit when crisp's MAPE exceeds --max-mape-pct) and sets *table.
int StagePerfValidation(const PerfStageOptions& o, const std::vector<TimePrediction>& times,
                        const std::vector<CrispCounters>& counters, const std::string& input_path,
                        const nlohmann::json& options, std::vector<std::string> inputs,
                        OutputSet* outputs, std::string* table) {
  const std::vector<ActualTime> actual = ReadActualTimes(o.actual_path);
  inputs.push_back(o.actual_path);
  const PerfValidationReport validation = ValidateTimes(times, counters, actual, o.actual_path);
  outputs->StageText(o.validation_out_path, DumpJson(nlohmann::json(validation)));
  outputs->StageProvenance(o.validation_out_path, "perf", inputs, options);
  if (!o.errors_out_path.empty()) {
    outputs->StageText(o.errors_out_path, TimeErrorsToCsv(validation));
    outputs->StageProvenance(o.errors_out_path, "perf", inputs, options);
  }
  if (!o.plot_prefix.empty()) {
    for (const std::string& k : o.plot_kernels) {
      if (std::none_of(counters.begin(), counters.end(),
                       [&](const CrispCounters& c) { return c.kernel == k; })) {
        throw OptionError("plot_kernels: no kernel '" + k + "' in " + input_path);
      }
    }
    StageFigure(outputs, o.plot_prefix + "_mape", "perf", inputs, options,
                [&](const std::string& png, const std::string& svg) {
                  WritePerfMapePlot(validation, "Run-time prediction error by target frequency",
                                    png, svg);
                });
    for (const CrispCounters& c : counters) {
      if (!o.plot_kernels.empty() && std::find(o.plot_kernels.begin(), o.plot_kernels.end(),
                                               c.kernel) == o.plot_kernels.end()) {
        continue;
      }
      StageFigure(outputs, o.plot_prefix + "_times_" + FileNamePart(c.kernel), "perf", inputs,
                  options, [&](const std::string& png, const std::string& svg) {
                    WritePerfTimesPlot(validation, c.kernel, c.total_time_s(), png, svg);
                  });
    }
  }
  *table = FormatPerfValidation(validation);
  int exit_code = kExitOk;
  if (o.max_mape_pct > 0.0) {
    for (const ModelValidation& m : validation.models) {
      if (m.model == "crisp" && m.overall.mape_pct > o.max_mape_pct) {
        LogError(
            fmt::format("crisp's run-time MAPE {:.3f}% exceeds --max-mape-pct {} (outputs "
                        "written)",
                        m.overall.mape_pct, o.max_mape_pct));
        exit_code = kExitFit;
      }
    }
  }
  return exit_code;
}

}  // namespace

PerfStageReport RunPerfStage(const PerfStageOptions& o) {
  o.Check();
  if (!o.simulate_spec_path.empty()) return RunPerfSimulation(o);

  std::string input_path;
  const std::vector<CrispCounters> counters = PerfInputCounters(o, &input_path);
  TimePredictionOptions prediction;
  prediction.models = o.models;
  prediction.targets_mhz = SortedUnique(o.targets_mhz);
  std::vector<std::string> skipped;
  const std::vector<TimePrediction> times =
      PredictTimes(counters, prediction, input_path, &skipped);
  if (!skipped.empty()) {
    std::string list;
    for (const std::string& s : skipped) list += (list.empty() ? "" : ", ") + s;
    LogInfo("not evaluated (their counter columns are absent): " + list);
  }

  const std::vector<std::string> inputs = {input_path};
  const nlohmann::json options = o;
  OutputSet outputs;
  outputs.StageText(o.out_path, TimesToCsv(times));
  outputs.StageProvenance(o.out_path, "perf", inputs, options);
  if (!o.counters_out_path.empty()) {
    outputs.StageText(o.counters_out_path, CrispCountersToCsv(counters));
    outputs.StageProvenance(o.counters_out_path, "perf", inputs, options);
  }
  int exit_code = kExitOk;
  std::string table;
  if (!o.actual_path.empty()) {
    exit_code =
        StagePerfValidation(o, times, counters, input_path, options, inputs, &outputs, &table);
  }
  outputs.Commit();
  if (!table.empty()) LogInfo(table);
  LogInfo(fmt::format("wrote {} predictions ({} kernels) to {}", times.size(), counters.size(),
                      o.out_path));
  PerfStageReport report;
  report.exit_code = exit_code;
  report.written = outputs.Outputs();
  return report;
}

}  // namespace wattcal
