// wattcal-check: every run's headline figures against the values kept in the repository.
//
//   wattcal-check --expected expected/results.csv --reports reports [--run titanx ...] [--out CHECK.md]
#include "commands.h"

#include <iostream>

#include "usecases/check_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddCheckOptions(CLI::App* app, CheckStageOptions* o) {
  app->add_option("--expected", o->expected_path,
                  "Expected figures: run,file,pointer,expected,tolerance,reference")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app->add_option("--reports", o->reports_dir, "Folder holding the runs")->capture_default_str();
  app->add_option("--run", o->runs, "Only these runs (default: all in the expected file)");
  app->add_option("--out", o->out_path, "Also write the table (Markdown)")->check(OutputFile());
}

int CheckCommand(int argc, char** argv) {
  CLI::App app{
      "Compare runs' headline figures with the expected values (a table of expected vs. obtained)",
      "wattcal-check"};
  CheckStageOptions o;
  AddCheckOptions(&app, &o);
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&]() {
    const CheckStageReport r = RunCheckStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
