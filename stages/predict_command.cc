// wattcal-predict: a calibrated model + application activity -> predicted power.
//
//   wattcal-predict --model MODEL.json --activity ACT.csv --out PRED.csv
//                   [--mode dvfs|fixed] [--breakdown]
//   wattcal-predict --model MODEL.json --capture DIR [--capture DIR ...] --gpu DESC.json
//                   --out APPS.csv [--breakdown-out BREAKDOWN.csv] [--power-limit-w W]
//                   [--allow-other-gpu] [--at-clock MHZ,...] [--at-power-limit W,...]
//                   [--what-if-out WHAT_IF.csv] [--max-slowdown-pct P] [--vf-curve VF.json]
//                   [--crisp-counters CRISP.csv]
//   wattcal-predict --model ACCELWATTCH.json --activity ACT.csv --out PRED.csv
//                   [--f-core-mhz F,...] [--f-mem-mhz F,...] [--active-sms K,...]
//                   [--lanes-per-warp Y,...] [--breakdown]
//   wattcal-predict --model ACCELWATTCH.json --activity TABLE.csv --out PRED.csv
//
// The model's format decides: a wattcal-accelwattch-model evaluates AccelWattch's Eq. 12 (for
// a kernel's activity, active SMs k and lanes y, at its own V-F pair or any other) or, for a
// model of per-kernel component tables, AccelWattch Eq. 13's rows.
#include "commands.h"

#include "usecases/predict_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddPredictOptions(CLI::App* app, PredictStageOptions* o) {
  app->add_option("--model", o->model_path,
                  "Model (wattcal JSON, gpmTOOL model file, or "
                  "wattcal-accelwattch-model JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--activity", o->activity_path,
                  "Activity: gpmTOOL prediction/real file or tidy CSV (power "
                  "optional); for an AccelWattch model an activity table (wattcal-ingest "
                  "--accelwattch-activity) or a "
                  "component table")
      ->check(CLI::ExistingFile);
  app->add_option("--capture", o->captures,
                  "Instead of --activity: capture directories of applications "
                  "(wattcal-capture --app; windows.csv with ncu/<workload>.csv or ncu_raw.csv), a "
                  "power log optional: "
                  "one row per workload at the model's reference pair, with its energy over its "
                  "run as it ran (duration_s: its windows' summed length; per step when the end "
                  "marks gave steps), and measured_w/error_pct, measured_energy_j/energy_error_pct "
                  "where the capture has a power log")
      ->check(CLI::ExistingDirectory);
  app->add_option("--gpu", o->gpu_path,
                  "With --capture: the GPU description whose counters give "
                  "the utilisations (microbench_specs/gpus/*.json)")
      ->check(CLI::ExistingFile);
  app->add_option("--breakdown-out", o->breakdown_out_path,
                  "With --capture: also write each workload's watts "
                  "per term and component (TPDS §4.5)")
      ->check(OutputFile());
  app->add_flag("--allow-other-gpu", o->allow_other_gpu,
                "With --capture: predict although the model or --gpu is of another GPU than the "
                "one the capture was recorded on (refused by default); every row is then flagged "
                "other_gpu");
  app->add_option(
         "--at-clock", o->at_clock_mhz,
         "With --capture: what if each workload ran at these core clocks, MHz (comma "
         "separated): power along the V-F curve, run time, energy and their change against "
         "the run as recorded, into --what-if-out")
      ->delimiter(',');
  app->add_option("--at-power-limit", o->at_power_limit_w,
                  "With --capture: what if the board's power limit were these, W (comma "
                  "separated): the clock where the predicted power meets each, and the power, run "
                  "time and energy there, into --what-if-out")
      ->delimiter(',');
  app->add_option("--what-if-out", o->what_if_out_path,
                  "With --at-clock / --at-power-limit: the what-if CSV (workload, setting, "
                  "f_core_mhz, predicted_w, run_time_s, energy_j, changes in %, time model, V-F "
                  "curve source, flags)")
      ->check(OutputFile());
  app->add_option("--max-slowdown-pct", o->max_slowdown_pct,
                  "With the what-ifs: flag, per workload, the setting of least energy whose run "
                  "time is within this % of the recorded run's (least_energy_within_<P>pct)")
      ->check(CLI::Range(0.0, 1000.0));
  app->add_option("--vf-curve", o->vf_curve_path,
                  "With --capture: the core V-F curve from a wattcal-clocks vf_model.json (its "
                  "reference clock must be the model's) instead of the model's own")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--crisp-counters", o->crisp_counters_path,
         "With the what-ifs: CRISP counters per workload (kernel = workload name; "
         "wattcal-perf's format) for the run time at other clocks; without them, CRISP Eq. "
         "2 with the memory share from the counters")
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path, "Predictions CSV to write")
      ->check(OutputFile())
      ->required();
  AddEnumOption(app, "--mode", &o->mode, {PredictMode::kDvfs, PredictMode::kFixed}, PredictModeName,
                "dvfs: at each row's V-F pair, or at every pair of the model when the "
                "activity has no frequencies; fixed: at the model's reference pair")
      ->each([o](const std::string&) { o->mode_given = true; });
  app->add_flag("--breakdown", o->breakdown, "Add per-component power columns (TPDS §4.5)");
  app->add_option(
      "--power-limit-w", o->power_limit_w,
      "The board's power limit, W (default: the activity's "
      "power_limit_w, else the model's); predictions above it are capped (uncapped_w, capped, "
      "capped_f_core_mhz columns)");
  app->add_option("--default-core-mhz", o->default_core_mhz,
                  "Tidy inputs: default core frequency, MHz");
  app->add_option("--default-mem-mhz", o->default_mem_mhz,
                  "Tidy inputs: default memory frequency, MHz");
  app->add_option(
         "--f-core-mhz", o->f_core_mhz,
         "AccelWattch: evaluate every kernel at these core clocks, "
         "MHz (default: each kernel's own); activity per cycle is kept, voltage ~ f (§4.2)")
      ->delimiter(',');
  app->add_option("--f-mem-mhz", o->f_mem_mhz,
                  "AccelWattch: and at these memory clocks, MHz (default: each "
                  "kernel's own)")
      ->delimiter(',');
  app->add_option("--active-sms", o->active_sms,
                  "AccelWattch: what-if active SM counts k (Eq. 10's static "
                  "and idle terms; dynamic activity kept per active SM)")
      ->delimiter(',');
  app->add_option("--lanes-per-warp", o->lanes_per_warp,
                  "AccelWattch: what-if active lanes per warp y (Eq. "
                  "4/5 static term; dynamic activity as counted)")
      ->delimiter(',');
}

int PredictCommand(int argc, char** argv) {
  CLI::App app{"Predict power from component activity at any V-F pair (TPDS §3.5, §4.5)",
               "wattcal-predict"};
  PredictStageOptions o;
  AddPredictOptions(&app, &o);
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&] {
    auto r = RunPredictStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
