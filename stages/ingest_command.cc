// wattcal-ingest: raw measurement dumps -> tidy tables that calibrate/validate read.
//
//   wattcal-ingest --power-log LOG.csv --windows WINDOWS.csv --out KERNELS.csv
//                  [--counters NCU.csv --gpu GPU.json --tidy MEASUREMENTS.csv]
//   wattcal-ingest --counters NCU.csv --gpu GPU.json --activity ACTIVITY.csv
//   wattcal-ingest --counters NCU.csv --description SWEEP.csv --accelwattch-activity OUT.csv
//                  [--power-log LOG.csv --windows WINDOWS.csv --out KERNELS.csv --settle-ms MS]
//   wattcal-ingest --capture DIR [--capture DIR2 ...] --gpu GPU.json --tidy MEASURED.csv
//                  [--out WINDOWS.csv]
#include "commands.h"

#include <iostream>

#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

int IngestCommand(int argc, char** argv) {
  CLI::App app{"Ingest power logs, kernel windows and counter exports (MTSM energy, TPDS Eqs. 7-8)",
               "wattcal-ingest"};
  IngestStageOptions o;
  AddIngestOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const IngestStageReport r = RunIngestStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
