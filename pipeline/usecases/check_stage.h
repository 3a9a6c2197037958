// wattcal-check as one library call: every run's headline figures against the values kept in
// the repository (expected/results.csv), as a table of expected vs. obtained.
#pragma once

#include "util/output.h"

#include <string>
#include <vector>

#include "report/results_check.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct CheckStageOptions {
  // --expected: run,file,pointer,expected,tolerance,reference.
  std::string expected_path = "expected/results.csv";
  // --reports: the folder holding the runs.
  std::string reports_dir = "reports";
  // --run: only these runs (empty: every run of the expected file).
  std::vector<std::string> runs;
  // --out: also write the table (Markdown); empty = not written.
  std::string out_path;

  // OptionError naming the flag: --expected or --reports empty.
  void Check() const;
};

// exit_code: 0 when every figure is found and within its tolerance, else 3 (kExitFit).
struct CheckStageReport : StageSummary {
  std::vector<CheckedFigure> checked;
  int missing = 0;
  int differ = 0;
  // The runs whose figures are missing, in the expected file's order.
  std::vector<std::string> runs_missing;
  // Every provenance file under the reports folder (or the runs asked for) against its outputs.
  ProvenanceCheck provenance;
};

CheckStageReport RunCheckStage(const CheckStageOptions& options);

}  // namespace wattcal
