// wattcal-dvfs: the energy-optimal core V-F pair per kernel, from predicted run times
// (wattcal-perf) and a calibrated DVFS power model (wattcal-calibrate), minimising energy, EDP
// or ED²P, optionally within a slowdown budget (CRISP, MICRO'15, §5.2).
//
//   wattcal-dvfs --model MODEL.json --activity ACT.csv --times TIMES.csv --out CHOICES.csv
//                [--objective energy|edp|ed2p] [--max-slowdown-pct 5]
//                [--power-mode dvfs|scaling] [--activity-scaling events|fixed]
//                [--perf-models crisp,crit] [--actual ACTUAL.csv] [--summary-out S.json]
//                [--curves-out CURVES.csv] [--plot-prefix P [--plot-kernels a,b] [--plot-models crisp]]
#include "commands.h"

#include "usecases/dvfs_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

int DvfsCommand(int argc, char** argv) {
  CLI::App app{"Choose the energy-, EDP- or ED2P-optimal core V-F pair per kernel", "wattcal-dvfs"};
  DvfsStageOptions o;
  AddDvfsOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() { return RunDvfsStage(o).exit_code; });
}

}  // namespace wattcal
