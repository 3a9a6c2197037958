// wattcal-fields as one library call: what a cluster's DCGM / NVML GPM fields give, through a
// field set (io/field_set.h, microbench_specs/gpus/fields/):
//
//   runs mode   per-(application, clock) DCGM field tables (ingest/field_runs.h) -> a measured
//               tidy corpus, one row per application and clock, for wattcal-calibrate/-validate
//   jobs mode   sacct --parsable2 windows (ingest/slurm_jobs.h) over a dcgmi dmon or
//               dcgm-exporter field/power log (ingest/field_log.h) + a model calibrated on the
//               set's layout -> one row per job and GPU: measured and predicted energy and the
//               component split (ingest/job_energy.h)
#pragma once

#include <string>
#include <vector>

#include "ingest/field_log.h"
#include "ingest/job_energy.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct FieldsStageOptions {
  // --fields: the field set (microbench_specs/gpus/fields/*.json). Required.
  std::string field_set_path;
  // --runs (repeatable): per-(application, clock) field tables; with --tidy.
  std::vector<std::string> runs_paths;
  // --tidy: the measured corpus the runs make.
  std::string tidy_path;
  // --sacct: the sacct --parsable2 table; with --field-log, --model and --out.
  std::string sacct_path;
  // --field-log: a dcgmi dmon log, a dcgm-exporter file, or a directory of scrapes.
  std::string field_log_path;
  // --model: a model calibrated on the field set's layout.
  std::string model_path;
  // --out: the per-job table.
  std::string out_path;
  // --dmon-interval-ms, --dmon-start-s, --utc-offset-h: how the log's rows are timed.
  FieldLogOptions log;
  // --node, --min-samples.
  JobEnergyOptions jobs;

  // OptionError naming the flag: exactly one mode, and its files.
  void Check() const;
};

// exit_code: 0.
struct FieldsStageReport : StageSummary {
  int rows = 0;
  int flagged_rows = 0;
};

FieldsStageReport RunFieldsStage(const FieldsStageOptions& options);

}  // namespace wattcal
