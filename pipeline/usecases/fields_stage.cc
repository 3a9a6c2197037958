#include "usecases/fields_stage.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ingest/field_runs.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {
namespace {

// Appends the rows of `more` to `all` (same layout: both come from one field set).
void Append(const Corpus& more, Corpus* all) {
  if (all->benchmark.empty()) {
    *all = more;
    return;
  }
  const Eigen::Index n = all->power_w.size(), m = more.power_w.size();
  all->benchmark.insert(all->benchmark.end(), more.benchmark.begin(), more.benchmark.end());
  all->line.insert(all->line.end(), more.line.begin(), more.line.end());
  all->power_w.conservativeResize(n + m);
  all->power_w.tail(m) = more.power_w;
  all->freq_mhz.conservativeResize(n + m, Eigen::NoChange);
  all->freq_mhz.bottomRows(m) = more.freq_mhz;
  all->util_frac.conservativeResize(n + m, Eigen::NoChange);
  all->util_frac.bottomRows(m) = more.util_frac;
}

FieldsStageReport RunRuns(const FieldsStageOptions& o, const FieldSet& set) {
  Corpus corpus;
  for (const std::string& path : o.runs_paths) Append(ReadFieldRuns(path, set), &corpus);
  std::vector<std::string> inputs = {o.field_set_path};
  inputs.insert(inputs.end(), o.runs_paths.begin(), o.runs_paths.end());
  OutputSet outputs;
  outputs.StageText(o.tidy_path, CorpusToTidyCsv(corpus));
  outputs.StageProvenance(o.tidy_path, "fields", inputs,
                          nlohmann::json{{"mode", "runs"}, {"fields", o.field_set_path}},
                          "measured corpus");
  outputs.Commit();
  FieldsStageReport report;
  report.written = outputs.Outputs();
  report.rows = static_cast<int>(corpus.benchmark.size());
  LogInfo(fmt::format("wrote {} ({} rows through the field set {})", o.tidy_path, report.rows,
                      set.name));
  return report;
}

FieldsStageReport RunJobs(const FieldsStageOptions& o, const FieldSet& set) {
  const std::vector<SlurmJob> jobs = ReadSacctJobs(o.sacct_path, SlurmOptions{o.log.utc_offset_h});
  const FieldLog log = ReadFieldLog(o.field_log_path, o.log);
  const PowerModel model = ReadModel(o.model_path);
  const std::vector<JobEnergyRow> rows = JobEnergies(jobs, log, set, model, o.jobs);
  OutputSet outputs;
  outputs.StageText(o.out_path, JobEnergyCsv(rows, model.layout));
  outputs.StageProvenance(o.out_path, "fields",
                          {o.field_set_path, o.sacct_path, o.field_log_path, o.model_path},
                          nlohmann::json{{"mode", "jobs"},
                                         {"dmon_interval_ms", o.log.dmon_interval_ms},
                                         {"dmon_start_s", o.log.dmon_start_s},
                                         {"utc_offset_h", o.log.utc_offset_h},
                                         {"node", o.jobs.node},
                                         {"min_samples", o.jobs.min_samples}},
                          "per-job energy");
  outputs.Commit();
  FieldsStageReport report;
  report.written = outputs.Outputs();
  report.rows = static_cast<int>(rows.size());
  for (const JobEnergyRow& r : rows) report.flagged_rows += !r.flags.empty();
  LogInfo(fmt::format("wrote {}: {} job-GPU rows from {} jobs ({} flagged), {} log {}", o.out_path,
                      report.rows, jobs.size(), report.flagged_rows, log.format, o.field_log_path));
  return report;
}

}  // namespace

void FieldsStageOptions::Check() const {
  if (field_set_path.empty()) throw OptionError("--fields: give the field set (a JSON file)");
  const bool runs = !runs_paths.empty() || !tidy_path.empty();
  const bool jobs_mode =
      !sacct_path.empty() || !field_log_path.empty() || !model_path.empty() || !out_path.empty();
  if (runs == jobs_mode) {
    throw OptionError(
        "give either --runs FILE ... --tidy OUT (field tables -> corpus) or --sacct FILE "
        "--field-log LOG --model MODEL --out OUT (per-job energy), not both or neither");
  }
  if (runs && (runs_paths.empty() || tidy_path.empty())) {
    throw OptionError("--runs and --tidy go together");
  }
  if (jobs_mode) {
    for (const auto& [flag, value] :
         {std::pair<const char*, const std::string*>{"--sacct", &sacct_path},
          {"--field-log", &field_log_path},
          {"--model", &model_path},
          {"--out", &out_path}}) {
      if (value->empty()) throw OptionError(fmt::format("{}: required with --sacct", flag));
    }
  }
  std::string error;
  if (!log.Check(&error)) throw OptionError("--dmon-interval-ms/--dmon-start-s: " + error);
  if (!jobs.Check(&error)) throw OptionError("--min-samples: " + error);
}

FieldsStageReport RunFieldsStage(const FieldsStageOptions& o) {
  o.Check();
  const FieldSet set = ReadFieldSet(o.field_set_path);
  return o.runs_paths.empty() ? RunJobs(o, set) : RunRuns(o, set);
}

}  // namespace wattcal
