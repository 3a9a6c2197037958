// wattcal-report as one library call: figures (gnuplot, PNG + SVG) and one index.html /
// index.md per run (report/run_report.h: CollectRunReport, then StageRunReport).
#pragma once

#include <string>
#include <vector>

#include "report/run_report.h"
#include "usecases/stage_summary.h"

namespace wattcal {

struct ReportStageOptions {
  // --run-dir, --out-dir, --note, --title, --predictions, --train, --activity,
  // --breakdown-model, --benchmark, --auto-benchmarks, --constant, --compare,
  // --max-constant-curves, --collinearity-pair-r, --collinearity-condition-number,
  // --default-core-mhz, --default-mem-mhz. Its `models` and `figures` are set by Run from the
  // two fields below.
  ReportOptions report;
  // --model: another model, "LABEL=FILE" or "FILE" (repeatable).
  std::vector<std::string> models;
  // --no-figures: the index without figures (no gnuplot needed).
  bool no_figures = false;

  // The report options with `models` parsed and `figures` set, checked once: OptionError naming
  // the flag for a --model or --predictions file that does not exist, a report option out of
  // range (ReportOptions::Check), or figures asked for without gnuplot.
  ReportOptions Check() const;
};

struct ReportStageReport : StageSummary {
  // The folder of index.html and index.md, and the figures drawn.
  std::string out_dir;
  size_t figures = 0;
};

ReportStageReport RunReportStage(const ReportStageOptions& options);

}  // namespace wattcal
