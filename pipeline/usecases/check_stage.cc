#include "usecases/check_stage.h"

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
  report.brief = CheckTable(checked);
  if (!o.out_path.empty()) {
    OutputSet outputs;
    outputs.StageText(o.out_path, report.brief);
    outputs.StageProvenance(o.out_path, "check", {o.expected_path},
                            {{"reports", o.reports_dir}, {"runs", o.runs}});
    outputs.Commit();
    report.written = outputs.Outputs();
  }
  LogInfo(report.brief);
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
    LogError(
        fmt::format("{} figures are missing because {} run(s) have not been made: {}. Make "
                    "them with: make -f Makefile.runs {} (or make -f Makefile.runs all "
                    "check)",
                    report.missing, report.runs_missing.size(), names, names));
  }
  // The files the runs wrote are the files their provenance names, byte for byte.
  if (o.runs.empty()) VerifyProvenance(o.reports_dir, &report.provenance);
  for (const std::string& run : o.runs)
    VerifyProvenance(o.reports_dir + "/" + run, &report.provenance);
  const ProvenanceCheck& p = report.provenance;
  LogInfo(fmt::format("provenance: {} files, {} outputs as recorded, {} changed since, {} gone",
                      p.files, p.verified, p.changed.size(), p.missing.size()));
  for (const std::string& c : p.changed) LogError("changed since its stage wrote it: " + c);
  for (const std::string& m : p.missing) LogWarning("gone since its stage wrote it: " + m);
  // A record that does not read may list any file: what it made can no longer be verified.
  for (const std::string& u : p.unreadable)
    LogError("a provenance record that does not read: " + u);
  report.exit_code =
      report.missing + report.differ == 0 && p.changed.empty() && p.unreadable.empty()
          ? static_cast<int>(kExitOk)
          : static_cast<int>(kExitFit);
  return report;
}

}  // namespace wattcal
