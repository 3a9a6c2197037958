// wattcal-fields: what a cluster's DCGM / NVML GPM fields give, through a field set
// (microbench_specs/gpus/fields/, docs/fields.md).
//
//   wattcal-fields --fields SET.json --runs TABLE.csv [--runs ...] --tidy MEASURED.csv
//   wattcal-fields --fields SET.json --sacct JOBS.txt --field-log DMON.txt|EXPORTER(.prom|DIR)
//                  --model MODEL.json --out JOBS.csv [--dmon-interval-ms MS] [--dmon-start-s S]
//                  [--utc-offset-h H] [--node NAME] [--min-samples N]
#include "commands.h"

#include "usecases/fields_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddFieldsOptions(CLI::App* app, FieldsStageOptions* o) {
  app->add_option("--fields", o->field_set_path,
                  "The field set: components made of DCGM fields or GPM metrics "
                  "(microbench_specs/gpus/fields/*.json)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--runs", o->runs_paths,
                  "Per-(application, clock) tables of DCGM field means and power "
                  "(datasets/nsfcac_v100); repeatable")
      ->check(CLI::ExistingFile);
  app->add_option("--tidy", o->tidy_path, "With --runs: the measured corpus (tidy CSV)")
      ->check(OutputFile());
  app->add_option("--sacct", o->sacct_path,
                  "sacct --parsable2 table: JobID|Start|End|NodeList|AllocTRES[|GPUs]")
      ->check(CLI::ExistingFile);
  app->add_option("--field-log", o->field_log_path,
                  "dcgmi dmon log (fields and power 155/157), dcgm-exporter text with "
                  "timestamps, or a directory of scrapes named by their time")
      ->check(CLI::ExistingPath);
  app->add_option("--model", o->model_path, "Model calibrated on the field set's layout")
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path, "The per-job table (CSV)")->check(OutputFile());
  app->add_option("--dmon-interval-ms", o->log.dmon_interval_ms,
                  "dmon rows without timestamps: the -d delay, ms");
  app->add_option("--dmon-start-s", o->log.dmon_start_s,
                  "dmon rows without timestamps: the first row's time, epoch seconds");
  app->add_option("--utc-offset-h", o->log.utc_offset_h,
                  "Hours the machines' clocks (sacct, ts, scrape names) were ahead of UTC");
  app->add_option("--node", o->jobs.node, "Only the jobs that ran on this node (the log's)");
  app->add_option("--min-samples", o->jobs.min_samples,
                  "Flag a job window with fewer field or power samples")
      ->capture_default_str();
}

int FieldsCommand(int argc, char** argv) {
  CLI::App app{"DCGM / NVML GPM fields: field tables -> corpus, or per-job energy",
               "wattcal-fields"};
  FieldsStageOptions o;
  AddFieldsOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() { return RunFieldsStage(o).exit_code; });
}

}  // namespace wattcal
