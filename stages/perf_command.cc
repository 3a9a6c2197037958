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
