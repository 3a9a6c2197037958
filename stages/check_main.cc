// wattcal-check: every run's headline figures against the values kept in the repository.
//
//   wattcal-check --expected expected/results.csv --reports reports [--run titanx ...] [--out CHECK.md]
#include <fmt/format.h>

#include <algorithm>

#include "report/results_check.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Compare runs' headline figures with the expected values (a table of expected vs. obtained)",
               "wattcal-check"};
  std::string expected_path = "expected/results.csv", reports_dir = "reports", out_path;
  std::vector<std::string> runs;
  app.add_option("--expected", expected_path, "Expected figures: run,file,pointer,expected,tolerance,reference")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_option("--reports", reports_dir, "Folder holding the runs")->capture_default_str();
  app.add_option("--run", runs, "Only these runs (default: all in the expected file)");
  app.add_option("--out", out_path, "Also write the table (Markdown)")->check(OutputFile());
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&]() {
    const std::vector<CheckedFigure> checked =
        CheckFigures(ReadExpectedFigures(expected_path), reports_dir, runs);
    const std::string table = CheckTable(checked);
    if (!out_path.empty()) {
      OutputSet outputs;
      outputs.StageText(out_path, table);
      outputs.StageManifest(out_path, "check", {expected_path}, {{"reports", reports_dir}, {"runs", runs}});
      outputs.Commit();
    }
    LogInfo(table);
    int missing = 0, differ = 0;
    for (const CheckedFigure& c : checked) {
      missing += !c.found;
      differ += c.found && !c.within;
    }
    LogInfo(fmt::format("{} figures: {} as expected, {} differ, {} missing", checked.size(),
                        checked.size() - missing - differ, differ, missing));
    if (missing > 0) {
      // Name the runs whose outputs are missing and the command that makes them.
      std::vector<std::string> runs_missing;
      for (const CheckedFigure& c : checked) {
        if (c.found) continue;
        if (std::find(runs_missing.begin(), runs_missing.end(), c.expected.run) == runs_missing.end()) {
          runs_missing.push_back(c.expected.run);
        }
      }
      std::string names;
      for (const std::string& r : runs_missing) names += (names.empty() ? "" : " ") + r;
      LogError(fmt::format("{} figures are missing because {} run(s) have not been made: {}. Make "
                           "them with: make -f Makefile.runs {} (or make -f Makefile.runs all "
                           "check)",
                           missing, runs_missing.size(), names, names));
    }
    return missing + differ == 0 ? static_cast<int>(kExitOk) : static_cast<int>(kExitFit);
  });
}
