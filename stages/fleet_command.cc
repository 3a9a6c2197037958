// wattcal-fleet: the reduce of a fleet campaign (issue 39; docs/fleet.md). Groups capture
// directories into GPUs by UUID, calibrates every GPU (TPDS Eq. 9, bootstrap intervals, 5-fold CV
// by benchmark) in parallel, lends one GPU's counters to the GPUs of its model that have none, and
// writes OUT/fleet.csv, OUT/cross_prediction.csv and the report OUT/index.html.
//
//   wattcal-fleet --capture DIR [--capture DIR ...] [--captures-from FILE]
//                 --gpu DESC.json [--gpu DESC2.json ...] --out DIR
//                 [--bootstrap 50] [--threads 1] [--seed 1] [--cv-folds 5]
//                 [--max-matrix-gpus 100] [--settle-ms 300] [--common-benchmarks]
//                 [--run-dir DIR]
//
// Exit: 0 every capture reduced; 4 some not (each named; the outputs are written); 1 options;
// 2 input that stops the whole run.
#include "commands.h"

#include <iostream>

#include "fleet/fleet_stage.h"
#include "seed_option.h"
#include "stage_common.h"
#include "stage_options.h"
#include "util/logging.h"

namespace wattcal {

void AddFleetOptions(CLI::App* app, FleetStageOptions* o) {
  app->add_option("--capture", o->captures,
                  "A capture directory of one GPU (repeatable; captures of one UUID with disjoint "
                  "benchmarks are one GPU)");
  app->add_option("--captures-from", o->captures_from,
                  "A file listing capture directories, one per line ('#' comments), for fleets "
                  "too large for a command line")
      ->check(CLI::ExistingFile);
  app->add_option("--gpu", o->gpus,
                  "The description of a GPU model (microbench_specs/gpus/*.json or a field set; "
                  "repeatable, one per model); a capture of a GPU none describes is reported as "
                  "other_model")
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_dir,
                  "The report folder: fleet.csv, cross_prediction.csv, index.html, index.md, "
                  "figures/")
      ->check(OutputFile());
  app->add_option("--bootstrap", o->reduce.fit.bootstrap_replicates,
                  "Bootstrap replicates of each GPU's 95% intervals (0: none)")
      ->capture_default_str();
  app->add_option("--seed", o->reduce.fit.seed, "Seed of every GPU's bootstrap and CV folds")
      ->check(Seed())
      ->capture_default_str();
  app->add_option("--cv-folds", o->reduce.fit.cv_folds,
                  "Cross-validation folds by benchmark (each GPU's cv_mape_pct, the pooled fit)")
      ->capture_default_str();
  app->add_flag("--common-benchmarks", o->reduce.fit.common_benchmarks,
                "Fit each GPU of a model on the benchmarks every GPU of that model ran only (the "
                "terms compared on the same work)");
  app->add_option("--threads", o->reduce.threads,
                  "OpenMP threads over the GPUs (the outputs do not depend on it)")
      ->capture_default_str();
  app->add_option("--max-matrix-gpus", o->reduce.max_matrix_gpus,
                  "Cross-prediction matrix of a model over at most this many GPUs (evenly spaced "
                  "in UUID order beyond it)")
      ->capture_default_str();
  app->add_option("--settle-ms", o->reduce.fit.capture.settle_ms,
                  "Each window measured from this long after its start, ms")
      ->capture_default_str();
}

int FleetCommand(int argc, char** argv) {
  CLI::App app{"The fleet reduce: every GPU's capture calibrated, how the GPUs differ",
               "wattcal-fleet"};
  FleetStageOptions o;
  AddFleetOptions(&app, &o);
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&]() {
    const FleetStageReport r = RunFleetStage(o);
    LogInfo(r.brief);
    return r.exit_code;
  });
}

}  // namespace wattcal
