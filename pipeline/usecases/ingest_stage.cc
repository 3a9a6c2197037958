#include "usecases/ingest_stage.h"

#include <fmt/format.h>

#include <cmath>

#include "ingest/capture.h"
#include "io/clock_runs.h"
#include "io/corpus_io.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

namespace {

// The separate-dump flags --capture cannot be combined with, and whether each was given.
std::vector<std::pair<const char*, bool>> SeparateDumpFlags(const IngestStageOptions& o) {
  const IngestInputs& in = o.inputs;
  return {{"--power-log", !in.power_log.empty()},
          {"--windows", !in.windows.empty()},
          {"--counters", !in.counters.empty()},
          {"--corpus", !in.corpus.empty()},
          {"--kernel-power", !in.kernel_power.empty()},
          {"--ubench", !in.ubench.empty()},
          {"--description", !in.description.empty()},
          {"--instructions", !in.instructions.empty()},
          {"--activity", !o.activity_path.empty()},
          {"--windows-out", !o.windows_out_path.empty()},
          {"--counters-table", !o.counters_table_path.empty()},
          {"--accelwattch-activity", !o.accelwattch_activity_path.empty()},
          {"--instructions-out", !o.instructions_out_path.empty()},
          {"--corpus-out", !o.corpus_out_path.empty()},
          {"--kernel-power-out", !o.kernel_power_out_path.empty()},
          {"--ubench-out", !o.ubench_out_path.empty()},
          {"--dmon-interval-ms", o.ingest.log.dmon_interval_ms != 0.0},
          {"--f-core-mhz", std::isfinite(o.ingest.f_core_mhz)},
          {"--f-mem-mhz", std::isfinite(o.ingest.f_mem_mhz)}};
}

std::vector<std::string> SplitColumns(const std::string& columns) {
  std::vector<std::string> out;
  if (columns.empty()) return out;
  size_t start = 0;
  while (start <= columns.size()) {
    const size_t comma = columns.find(',', start);
    out.push_back(columns.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string LeftOutLine(int64_t rows) {
  return fmt::format("measured table: {} row{} left out by --exclude-flagged\n", rows,
                     rows == 1 ? "" : "s");
}

IngestStageReport RunCaptures(const IngestStageOptions& o) {
  CaptureOptions capture_options;
  capture_options.energy = o.ingest.energy;
  if (o.settle_ms.has_value()) capture_options.settle_ms = *o.settle_ms;
  capture_options.power_log = o.capture_power;
  capture_options.gpu_select = o.ingest.log.gpu;
  capture_options.power_field = o.ingest.log.power_field;
  capture_options.smi_columns = SplitColumns(o.columns);
  capture_options.utc_offset_h = o.ingest.log.utc_offset_h;
  capture_options.allow_mixed_gpus = o.mixed_gpus;
  capture_options.allow_other_gpu = o.allow_other_gpu;
  const CaptureReport r =
      IngestCapturesDescribedBy(o.captures, o.inputs.gpu_description, capture_options);
  std::vector<std::string> inputs = r.inputs;
  for (const std::string& path : r.inputs) RegisterInputFile("--capture", path);  // at any depth
  inputs.push_back(o.inputs.gpu_description);
  nlohmann::json sources = nlohmann::json::array();
  for (size_t i = 0; i < r.power_sources.size(); ++i) {
    sources.push_back({{"capture", o.captures[i]},
                       {"power_source", r.power_sources[i]},
                       {"power_log", r.power_logs[i]}});
  }
  nlohmann::json manifest_options = {
      {"capture", o.captures},
      {"capture_power", CapturePowerLogName(o.capture_power)},
      {"gpu_select", o.ingest.log.gpu},
      {"power_field", o.ingest.log.power_field},
      {"utc_offset_h", o.ingest.log.utc_offset_h},
      {"mixed_gpus", o.mixed_gpus},
      {"power_sources", sources},
      {"power_limit_w", r.power_limit_w ? nlohmann::json(*r.power_limit_w) : nlohmann::json()},
      {"settle_ms", capture_options.settle_ms},
      {"min_samples", o.ingest.energy.min_samples},
      {"max_cv", o.ingest.energy.max_cv},
      {"max_temp_drift_c", o.ingest.energy.max_temp_drift_c},
      {"max_clock_range_frac", capture_options.energy.max_clock_range_frac},
      {"dropped_launches", r.dropped_launches},
      {"skipped_idle_windows", r.skipped_idle}};
  IngestStageReport report;
  Corpus corpus = o.per_workload ? r.ToWorkloadCorpus() : r.ToCorpus();
  if (o.per_workload) manifest_options["per_workload"] = true;
  if (!r.other_gpu.empty()) manifest_options["other_gpu"] = r.other_gpu;
  if (o.ingest.energy.exclude_flagged) {
    // A flagged window is left out of the measured table (the windows table keeps it).
    std::vector<int> kept;
    for (int i = 0; i < corpus.rows(); ++i) {
      if (corpus.flags[i].empty()) kept.push_back(i);
    }
    report.left_out_rows = corpus.rows() - static_cast<int64_t>(kept.size());
    corpus = corpus.Subset(kept);
    manifest_options["exclude_flagged"] = true;
    manifest_options["left_out_rows"] = report.left_out_rows;
  }
  corpus.path = o.tidy_path;
  OutputSet outputs;
  outputs.StageText(o.tidy_path, CorpusToTidyCsv(corpus));
  outputs.StageProvenance(o.tidy_path, "ingest", inputs, manifest_options);
  if (!o.out_path.empty()) {
    outputs.StageText(o.out_path, r.WindowsCsv());
    outputs.StageProvenance(o.out_path, "ingest", inputs, manifest_options);
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  for (const std::string& w : r.warnings) LogWarning(w);
  report.brief = r.Summary();
  if (o.ingest.energy.exclude_flagged) report.brief += LeftOutLine(report.left_out_rows);
  LogInfo(report.brief);
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

IngestStageReport RunDumps(const IngestStageOptions& o) {
  const IngestInputs& in = o.inputs;
  IngestOptions options = o.ingest;
  options.log.columns = SplitColumns(o.columns);
  if (o.settle_ms.has_value()) {
    options.energy.settle_ms = *o.settle_ms;
  } else {
    options.energy.settle_ms = kDefaultSettleMs;
    options.energy.settle_short_windows_by_half = true;
  }
  options.windows_table = !o.windows_out_path.empty();  // formatted only when written
  options.counters_table = !o.counters_table_path.empty();
  const IngestReport r = Ingest(in, options);

  std::vector<std::string> inputs;
  for (const std::string& p :
       {in.power_log, in.windows, in.counters, in.gpu_description, in.instructions, in.corpus,
        in.kernel_power, in.ubench, in.description}) {
    if (!p.empty()) inputs.push_back(p);
  }
  IngestStageReport report;
  nlohmann::json manifest_options = {{"gpu_select", options.log.gpu},
                                     {"power_field", r.energy.power_field},
                                     {"columns", options.log.columns},
                                     {"utc_offset_h", options.log.utc_offset_h},
                                     {"dmon_interval_ms", options.log.dmon_interval_ms},
                                     {"min_samples", options.energy.min_samples},
                                     {"max_cv", options.energy.max_cv},
                                     {"max_temp_drift_c", options.energy.max_temp_drift_c},
                                     {"exclude_flagged", options.energy.exclude_flagged},
                                     {"settle_ms", options.energy.settle_ms}};
  if (options.energy.exclude_flagged && !o.tidy_path.empty()) {
    for (const KernelEnergy& k : r.energy.kernels) report.left_out_rows += k.launches == 0;
    manifest_options["left_out_rows"] = report.left_out_rows;
  }
  OutputSet outputs;
  auto write = [&](const std::string& path, const std::string& content) {
    if (path.empty()) return;
    outputs.StageText(path, content);
    outputs.StageProvenance(path, "ingest", inputs, manifest_options);
  };
  write(o.out_path, r.kernels_csv);
  write(o.windows_out_path, r.windows_csv);
  write(o.tidy_path, r.tidy_csv);
  write(o.activity_path, r.activity_csv);
  write(o.instructions_out_path, r.instructions_csv);
  write(o.counters_table_path, r.counters_csv);
  write(o.corpus_out_path, r.corpus_tidy_csv);
  write(o.kernel_power_out_path, r.kernel_power_csv);
  write(o.ubench_out_path, r.ubench_csv);
  write(o.accelwattch_activity_path, r.accelwattch_activity_csv);
  outputs.Commit();
  report.written = outputs.Outputs();
  report.brief = r.summary;
  if (options.energy.exclude_flagged && !o.tidy_path.empty()) {
    report.brief += LeftOutLine(report.left_out_rows);
  }
  LogInfo(report.brief);
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

// Per-run tables at locked clocks -> one tidy table (io/clock_runs.h).
IngestStageReport RunClockRuns(const IngestStageOptions& o) {
  const ClockRunTable table = ReadClockRuns(o.clock_runs);
  int held = 0;
  for (const ClockRun& r : table.runs) held += r.HeldBelowRequest() ? 1 : 0;
  OutputSet outputs;
  outputs.StageText(o.tidy_path, WriteClockRunsCsv(table));
  outputs.StageProvenance(o.tidy_path, "ingest", o.clock_runs,
                          nlohmann::json{{"clock_runs", o.clock_runs}});
  outputs.Commit();
  IngestStageReport report;
  report.written = outputs.Outputs();
  report.brief = fmt::format(
      "{}: {} runs of {} workloads at {} requested clocks ({} format); {} held below the "
      "requested clock; {} repeats merged; {}",
      table.path, table.runs.size(), table.Workloads().size(), table.RequestedClocks().size(),
      table.format, held, table.merged_repeats,
      table.has_time ? "a run time on every row" : "no run time on some rows (no clock choice)");
  LogInfo(report.brief);
  LogInfo("wrote " + o.tidy_path);
  return report;
}

}  // namespace

void IngestStageOptions::Check() const {
  const IngestInputs& in = inputs;
  if (settle_ms.has_value() && !(std::isfinite(*settle_ms) && *settle_ms >= 0.0)) {
    throw OptionError(fmt::format("--settle-ms: {} is not a time >= 0 ms", *settle_ms));
  }
  if (!clock_runs.empty()) {
    if (!captures.empty()) throw OptionError("--clock-runs cannot be combined with --capture");
    for (const auto& [flag, given] : SeparateDumpFlags(*this)) {
      if (given)
        throw OptionError(fmt::format(
            "--clock-runs reads whole per-run tables: {} cannot be combined with it", flag));
    }
    if (tidy_path.empty())
      throw OptionError("--clock-runs needs --tidy (the per-run table to write)");
    return;
  }
  if (!captures.empty()) {
    for (const auto& [flag, given] : SeparateDumpFlags(*this)) {
      if (given) {
        throw OptionError(
            fmt::format("--capture reads a whole capture directory: {} cannot be "
                        "combined with it (a capture's clocks come from its logs; its "
                        "outputs are --tidy and --out)",
                        flag));
      }
    }
    if (in.gpu_description.empty()) {
      throw OptionError(
          "--capture needs --gpu (the GPU description, e.g. "
          "microbench_specs/gpus/h100_sxm.json)");
    }
    if (tidy_path.empty()) throw OptionError("--capture needs --tidy (the measured table)");
    return;
  }
  if (per_workload || mixed_gpus || allow_other_gpu) {
    throw OptionError(std::string(per_workload ? "--per-workload"
                                  : mixed_gpus ? "--mixed-gpus"
                                               : "--allow-other-gpu") +
                      " goes with --capture");
  }
  if (!in.power_log.empty() && out_path.empty() && accelwattch_activity_path.empty()) {
    throw OptionError(
        "--power-log needs --out (or --accelwattch-activity, whose mean_power_w it "
        "measures)");
  }
  if (!tidy_path.empty() && (in.power_log.empty() || in.counters.empty())) {
    throw OptionError("--tidy needs --power-log, --windows, --counters and --gpu");
  }
  if (!activity_path.empty() && (in.counters.empty() || in.gpu_description.empty())) {
    throw OptionError("--activity needs --counters and --gpu");
  }
  if (!counters_table_path.empty() && in.counters.empty()) {
    throw OptionError("--counters-table needs --counters");
  }
  if (!accelwattch_activity_path.empty() && (in.counters.empty() || in.description.empty())) {
    throw OptionError("--accelwattch-activity needs --counters and --description");
  }
  if (!in.description.empty() && accelwattch_activity_path.empty()) {
    throw OptionError("--description needs --accelwattch-activity (the table it describes)");
  }
  if (!in.corpus.empty() && corpus_out_path.empty()) {
    throw OptionError("--corpus needs --corpus-out");
  }
  if (!in.kernel_power.empty() && kernel_power_out_path.empty()) {
    throw OptionError("--kernel-power needs --kernel-power-out");
  }
  if (!in.ubench.empty() && ubench_out_path.empty()) {
    throw OptionError("--ubench needs --ubench-out");
  }
  if (!in.counters.empty() && in.gpu_description.empty() && counters_table_path.empty() &&
      accelwattch_activity_path.empty()) {
    throw OptionError(
        "--counters needs --gpu (for utilisations), --counters-table or --accelwattch-activity");
  }
  if (!instructions_out_path.empty() && in.instructions.empty()) {
    throw OptionError("--instructions-out needs --instructions");
  }
  if (!in.instructions.empty() && instructions_out_path.empty()) {
    throw OptionError("--instructions needs --instructions-out");
  }
}

IngestStageReport RunIngestStage(const IngestStageOptions& options) {
  options.Check();
  if (!options.clock_runs.empty()) return RunClockRuns(options);
  return options.captures.empty() ? RunDumps(options) : RunCaptures(options);
}

}  // namespace wattcal
