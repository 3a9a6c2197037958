// wattcal-perf: run time at other core frequencies from counters measured at a base frequency
// (CRISP, MICRO'15, with CRISP-L and the STALL / LEAD / CRIT / MISS / proportional baselines),
// validation against actual times, and the virtual GPU's SM model that produces both.
//
//   wattcal-perf --counters COUNTERS.csv --targets-mhz 100,300,700 --out TIMES.csv
//                [--models crisp,crit,...] [--actual ACTUAL.csv --validation-out V.json
//                 [--errors-out E.csv] [--plot-prefix P [--plot-kernels a,b]] [--max-mape-pct X]]
//   wattcal-perf --timelines TIMELINES.csv --targets-mhz ... --out TIMES.csv
//                [--counters-out COUNTERS.csv] [--miss-latency-cycles N] [...as above]
//   wattcal-perf --simulate microbench_specs/perf_kernels.json --out-dir DIR
//                [--base-mhz F] [--targets-mhz ...] [--activity-spec microbench_specs/virtual_gpu.json]
//                [--write-timelines] [--threads N]
#include "commands.h"

#include "usecases/perf_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddPerfOptions(CLI::App* app, PerfStageOptions* o) {
  app->add_option("--counters", o->counters_path,
                  "Counters CSV: kernel,base_mhz,total_cycles,lcp_cycles,load_stall_cycles,"
                  "store_stall_cycles[,crit_cycles,lead_cycles,miss_cycles,stall_cycles,"
                  "load_outstanding_cycles]")
      ->check(CLI::ExistingFile);
  app->add_option("--timelines", o->timelines_path,
                  "Event timelines CSV (kernel,base_mhz,issue_width,event,start_cycle,end_cycle,"
                  "issued,flags), classified by CRISP's rules (§3.5)")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--simulate", o->simulate_spec_path,
         "Run a run-time suite (microbench_specs/perf_kernels.json) on the virtual GPU's SM "
         "model and write counters, actual times (and timelines, activity) to --out-dir")
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path,
                  "Predicted times CSV: kernel,model,target_mhz,predicted_time_s")
      ->check(OutputFile());
  app->add_option("--out-dir", o->out_dir, "--simulate: folder of the campaign's files");
  app->add_option("--targets-mhz", o->targets_mhz, "Target core frequencies, MHz (comma-separated)")
      ->delimiter(',');
  app->add_option("--base-mhz", o->base_mhz,
                  "--simulate: base core frequency, MHz (default: the spec's)");
  AddEnumListOption(app, "--models", &o->models, AllPerfModels(), PerfModelName,
                    "Run-time models: crisp, crisp_l, proportional, stall, lead, crit, miss "
                    "(default: every model the counters allow)");
  app->add_option("--miss-latency-cycles", o->miss_latency_cycles,
                  "MISS's fixed latency per contributor miss, base cycles (0: mean load latency)");
  app->add_option("--counters-out", o->counters_out_path, "--timelines: write the derived counters")
      ->check(OutputFile());
  app->add_option("--actual", o->actual_path, "Actual times CSV: kernel,target_mhz,actual_time_s")
      ->check(CLI::ExistingFile);
  app->add_option("--validation-out", o->validation_out_path,
                  "MAPE per model / target / kernel (JSON)")
      ->check(OutputFile());
  app->add_option("--errors-out", o->errors_out_path, "Per-point errors CSV")->check(OutputFile());
  app->add_option("--plot-prefix", o->plot_prefix,
                  "Figures PREFIX_mape.{png,svg} and PREFIX_times_<kernel>.{png,svg}");
  app->add_option("--plot-kernels", o->plot_kernels, "Kernels to draw (default: all)")
      ->delimiter(',');
  app->add_option("--max-mape-pct", o->max_mape_pct,
                  "Exit 3 when crisp's overall run-time MAPE exceeds this (0: no gate)");
  app->add_option(
         "--activity-spec", o->activity_spec_path,
         "--simulate: the virtual GPU's power spec; writes DIR/activity.csv in its layout, "
         "base = its default core frequency, targets = its core levels")
      ->check(CLI::ExistingFile);
  app->add_flag("--write-timelines", o->write_timelines,
                "--simulate: also write DIR/timelines.csv");
  app->add_option("--threads", o->threads, "--simulate: threads")->capture_default_str();
}

int PerfCommand(int argc, char** argv) {
  CLI::App app{
      "Predict kernel run time at other core frequencies (CRISP, MICRO'15) and validate it",
      "wattcal-perf"};
  PerfStageOptions o;
  AddPerfOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() { return RunPerfStage(o).exit_code; });
}

}  // namespace wattcal
