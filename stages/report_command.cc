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

void AddReportOptions(CLI::App* app, ReportStageOptions* o) {
  app->add_option("--run-dir", o->report.run_dir,
                  "Run folder to report on (e.g. reports/titanx): its models, validations, "
                  "training corpus, constant-power result and AccelWattch models and breakdowns "
                  "are found through its provenance/ records (a folder without them is refused)")
      ->check(CLI::ExistingDirectory);
  app->add_option("--out-dir", o->report.out_dir,
                  "Folder for index.html, index.md and figures/ (default: the run folder)");
  app->add_option("--note", o->report.notes,
                  "A paragraph of your own reading of the run, shown under the heading "
                  "(repeatable; e.g. why two GPUs differ)");
  app->add_option("--title", o->report.title,
                  "Heading of the index and prefix of the figure titles (default: the run "
                  "folder's name)");
  app->add_option("--model", o->models,
                  "Another model to show beside the discovered ones, LABEL=FILE or FILE "
                  "(repeatable; e.g. gpmTOOL's published model)");
  app->add_option(
      "--predictions", o->report.predictions,
      "Another predictions CSV for the error CDF and a scatter plot, LABEL=FILE or FILE "
      "(repeatable; e.g. another GPU's run)");
  app->add_option("--train", o->report.train,
                  "Corpus to analyse for multicollinearity (repeatable; default: the training "
                  "corpus the primary model names)")
      ->check(CLI::ExistingFile);
  app->add_option("--activity", o->report.activity,
                  "Corpus whose benchmarks the power breakdown shows (default: the held-out "
                  "measurements of the breakdown model's validation)")
      ->check(CLI::ExistingFile);
  app->add_option("--breakdown-model", o->report.breakdown_model,
                  "Model of the power breakdown (default: the run's model/model.json)")
      ->check(CLI::ExistingFile);
  app->add_flag(
      "--benchmark-heatmap", o->report.benchmark_heatmap,
      "Also draw the benchmark x benchmark correlation of the training utilisations (TPDS'19 "
      "Fig. 3b; unreadable past a few dozen benchmarks, so only on request)");
  app->add_option("--benchmark", o->report.benchmarks,
                  "Benchmark to draw over the V-F pairs (repeatable; default: chosen by MAPE)");
  app->add_option("--auto-benchmarks", o->report.auto_benchmarks,
                  "Without --benchmark: how many to choose (best, worst, evenly between)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--constant", o->report.constant_path,
                  "wattcal-constant's JSON (default: the one in the run folder)")
      ->check(CLI::ExistingFile);
  app->add_option("--compare", o->report.compare_paths,
                  "wattcal-compare's JSON, one figure each (repeatable; default: those in the "
                  "run folder)")
      ->check(CLI::ExistingFile);
  app->add_option("--max-constant-curves", o->report.max_constant_curves,
                  "Most sweep curves drawn in the constant-power figure")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--collinearity-pair-r", o->report.collinearity.pair_threshold_abs_r,
                  "Report component pairs whose utilisations correlate with |r| at or above this")
      ->capture_default_str();
  app->add_option("--collinearity-condition-number",
                  o->report.collinearity.condition_number_threshold,
                  "Report a condition number of the standardised utilisation matrix above this")
      ->capture_default_str();
  app->add_option("--default-core-mhz", o->report.corpus_read.default_core_mhz,
                  "Tidy corpora without a preamble: the default core frequency, MHz (default: "
                  "the model's)");
  app->add_option("--default-mem-mhz", o->report.corpus_read.default_mem_mhz,
                  "Tidy corpora without a preamble: the default memory frequency, MHz (default: "
                  "the model's)");
  app->add_flag("--no-figures", o->no_figures,
                "Write the index without figures (no gnuplot needed)");
}

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
