// wattcal-report: figures (gnuplot, PNG + SVG) and one index.html / index.md per run.
//
//   wattcal-report --run-dir reports/titanx [--out-dir DIR] [--title "GTX Titan X"]
//                  [--model [LABEL=]MODEL.json ...] [--predictions [LABEL=]PRED.csv ...]
//                  [--train CORPUS.csv ...] [--activity CORPUS.csv] [--breakdown-model MODEL.json]
//                  [--benchmark NAME ...] [--auto-benchmarks 3] [--constant CONSTANT.json]
//                  [--compare COMPARE.json] [--no-figures]
//
// The run folder's files are found through its provenance records (one per stage run, listing its
// outputs): its models, validations (each validate run's predictions, metrics and summary), the
// training corpus its model names, the applications, a constant-power result, an architecture
// comparison, AccelWattch models (with the virtual GPU's truth_accelwattch.json when present) and
// AccelWattch breakdown CSVs (wattcal-predict --breakdown); the flags add more or pick them
// explicitly (see pipeline/report/run_report.h).
#include "commands.h"

#include <iostream>

#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

int ReportCommand(int argc, char** argv) {
  CLI::App app{"Figures and an HTML/Markdown index of one run", "wattcal-report"};
  ReportStageOptions o;
  AddReportOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const ReportStageReport r = RunReportStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
