#include "stage/check_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

void CheckStageOptions::Check() const {
  if (expected_path.empty()) throw OptionError("--expected names no file");
  if (reports_dir.empty()) throw OptionError("--reports names no folder");
}

CheckStageReport RunCheckStage(const CheckStageOptions& o) {
  o.Check();
  CheckStageReport report;
  report.checked = CheckFigures(ReadExpectedFigures(o.expected_path), o.reports_dir, o.runs);
  const std::vector<CheckedFigure>& checked = report.checked;
  report.table = CheckTable(checked);
  if (!o.out_path.empty()) {
    OutputSet outputs;
    outputs.StageText(o.out_path, report.table);
    outputs.StageManifest(o.out_path, "check", {o.expected_path},
                          {{"reports", o.reports_dir}, {"runs", o.runs}});
    outputs.Commit();
  }
  LogInfo(report.table);
  for (const CheckedFigure& c : checked) {
    report.missing += !c.found;
    report.differ += c.found && !c.within;
  }
  LogInfo(fmt::format("{} figures: {} as expected, {} differ, {} missing", checked.size(),
                      checked.size() - report.missing - report.differ, report.differ,
                      report.missing));
  for (const CheckedFigure& c : checked) {
    if (c.found) continue;
    if (std::find(report.runs_missing.begin(), report.runs_missing.end(), c.expected.run) ==
        report.runs_missing.end()) {
      report.runs_missing.push_back(c.expected.run);
    }
  }
  if (report.missing > 0) {
    // Name the runs whose outputs are missing and the command that makes them.
    std::string names;
    for (const std::string& r : report.runs_missing) names += (names.empty() ? "" : " ") + r;
    LogError(fmt::format("{} figures are missing because {} run(s) have not been made: {}. Make "
                         "them with: make -f Makefile.runs {} (or make -f Makefile.runs all "
                         "check)",
                         report.missing, report.runs_missing.size(), names, names));
  }
  report.exit_code = report.missing + report.differ == 0 ? static_cast<int>(kExitOk)
                                                         : static_cast<int>(kExitFit);
  return report;
}

}  // namespace wattcal
