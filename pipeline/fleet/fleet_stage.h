// wattcal-fleet as one library call (issue 39): capture directories of many GPUs and the
// descriptions of their models in; OUT/fleet.csv, OUT/cross_prediction.csv and the report
// (OUT/index.html, index.md, figures/) out, all or nothing, with one provenance record.
//
// Exit codes (docs/fleet.md): 0 every capture given was reduced; 4 (kExitPartial) some were not
// (other model, empty, died mid-suite, duplicate, failed to calibrate): each has its row, its
// report entry and a warning, and the outputs are written; 1 bad options; 2 nothing could be
// written (a description that does not read, no capture at all).
#pragma once

#include <string>
#include <vector>

#include "fleet/fleet_reduce.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct FleetStageOptions {
  // --capture DIR (repeatable) and --captures-from FILE (one directory per line; blank lines and
  // lines starting with '#' skipped; relative paths from the working directory).
  std::vector<std::string> captures;
  std::string captures_from;
  // --gpu DESC (repeatable): one description per GPU model (ncu description or field set).
  std::vector<std::string> gpus;
  // --out DIR: the folder of fleet.csv, cross_prediction.csv, index.html, index.md, figures/.
  std::string out_dir;
  // --bootstrap, --seed, --cv-folds, --threads, --max-matrix-gpus, --settle-ms.
  FleetReduceOptions reduce;

  // OptionError naming the flag: no description, no output folder, the reduce options' ranges.
  void Check() const;
};

// The exit code of a fleet that was written but not wholly reduced.
constexpr int kExitPartial = 4;

struct FleetStageReport : StageSummary {
  FleetResult fleet;
};

FleetStageReport RunFleetStage(const FleetStageOptions& options);

// The capture directories of --captures-from FILE (InputError naming the file when unreadable).
std::vector<std::string> ReadCaptureList(const std::string& path);

}  // namespace wattcal
