// wattcal-report: figures (gnuplot, PNG + SVG) and one index.html / index.md per run.
//
//   wattcal-report --run-dir reports/titanx [--out-dir DIR] [--title "GTX Titan X"]
//                  [--model [LABEL=]MODEL.json ...] [--predictions [LABEL=]PRED.csv ...]
//                  [--train CORPUS.csv ...] [--activity CORPUS.csv] [--breakdown-model MODEL.json]
//                  [--benchmark NAME ...] [--auto-benchmarks 3] [--constant CONSTANT.json]
//                  [--compare COMPARE.json] [--no-figures]
//
// The run folder's models, validations (metrics_<mode>.json + predictions_<mode>.csv), the
// training corpus its model names, a constant-power result, an architecture comparison,
// AccelWattch models (with the virtual GPU's truth_accelwattch.json when present) and AccelWattch
// breakdown CSVs (wattcal-predict --breakdown) are discovered; the flags add more or pick them
// explicitly (see pipeline/report/run_report.h).
#include <boost/filesystem.hpp>
#include <fmt/format.h>

#include "report/gnuplot_figure.h"
#include "report/run_report.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Figures and an HTML/Markdown index of one run", "wattcal-report"};
  ReportOptions options;
  std::vector<std::string> models;
  bool no_figures = false;
  app.add_option("--run-dir", options.run_dir,
                 "Run folder to report on (e.g. reports/titanx): its models, validations, "
                 "training corpus, constant-power result and AccelWattch models and breakdowns "
                 "are discovered")
      ->check(CLI::ExistingDirectory);
  app.add_option("--out-dir", options.out_dir,
                 "Folder for index.html, index.md and figures/ (default: the run folder)");
  app.add_option("--note", options.notes,
                 "A paragraph of your own reading of the run, shown under the heading "
                 "(repeatable; e.g. why two GPUs differ)");
  app.add_option("--title", options.title,
                 "Heading of the index and prefix of the figure titles (default: the run "
                 "folder's name)");
  app.add_option("--model", models,
                 "Another model to show beside the discovered ones, LABEL=FILE or FILE "
                 "(repeatable; e.g. gpmTOOL's published model)");
  app.add_option("--predictions", options.predictions,
                 "Another predictions CSV for the error CDF and a scatter plot, LABEL=FILE or FILE "
                 "(repeatable; e.g. another GPU's run)");
  app.add_option("--train", options.train,
                 "Corpus to analyse for multicollinearity (repeatable; default: the training "
                 "corpus the primary model names)")
      ->check(CLI::ExistingFile);
  app.add_option("--activity", options.activity,
                 "Corpus whose benchmarks the power breakdown shows (default: the held-out "
                 "measurements of the breakdown model's validation)")
      ->check(CLI::ExistingFile);
  app.add_option("--breakdown-model", options.breakdown_model,
                 "Model of the power breakdown (default: the run's model.json)")
      ->check(CLI::ExistingFile);
  app.add_option("--benchmark", options.benchmarks,
                 "Benchmark to draw over the V-F pairs (repeatable; default: chosen by MAPE)");
  app.add_option("--auto-benchmarks", options.auto_benchmarks,
                 "Without --benchmark: how many to choose (best, worst, evenly between)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--constant", options.constant_path,
                 "wattcal-constant's JSON (default: the one in the run folder)")
      ->check(CLI::ExistingFile);
  app.add_option("--compare", options.compare_paths,
                 "wattcal-compare's JSON, one figure each (repeatable; default: those in the "
                 "run folder)")
      ->check(CLI::ExistingFile);
  app.add_option("--max-constant-curves", options.max_constant_curves,
                 "Most sweep curves drawn in the constant-power figure")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--collinearity-pair-r", options.collinearity.pair_threshold_abs_r,
                 "Report component pairs whose utilisations correlate with |r| at or above this")
      ->capture_default_str();
  app.add_option("--collinearity-condition-number", options.collinearity.condition_number_threshold,
                 "Report a condition number of the standardised utilisation matrix above this")
      ->capture_default_str();
  app.add_option("--default-core-mhz", options.corpus_read.default_core_mhz,
                 "Tidy corpora without a preamble: the default core frequency, MHz (default: "
                 "the model's)");
  app.add_option("--default-mem-mhz", options.corpus_read.default_mem_mhz,
                 "Tidy corpora without a preamble: the default memory frequency, MHz (default: "
                 "the model's)");
  app.add_flag("--no-figures", no_figures, "Write the index without figures (no gnuplot needed)");
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    for (const std::string& m : models) options.models.push_back(ParseLabelledPath(m));
    std::vector<std::pair<std::string, std::string>> named;  // (flag, file)
    for (const LabelledPath& m : options.models) named.emplace_back("--model", m.path);
    for (const std::string& p : options.predictions) {
      named.emplace_back("--predictions", ParseLabelledPath(p).path);
    }
    for (const auto& [flag, file] : named) {
      if (!boost::filesystem::is_regular_file(file)) {
        throw OptionError(flag + " " + file + ": no such file");
      }
    }
    options.figures = !no_figures;
    std::string error;
    if (!options.Check(&error)) throw OptionError(error);
    if (options.figures && !GnuplotAvailable()) {
      throw OptionError(
          "gnuplot is not available to draw the figures: install gnuplot (e.g. "
          "apt-get install gnuplot-nox) and re-run cmake, or pass --no-figures");
    }
    const RunReport report = CollectRunReport(options);
    OutputSet outputs;
    StageRunReport(report, options, &outputs);
    outputs.Commit();
    LogInfo(fmt::format("wrote {}/index.html and index.md ({} figures)", options.EffectiveOutDir(),
                        options.figures ? report.figures.size() : 0));
    return static_cast<int>(kExitOk);
  });
}
