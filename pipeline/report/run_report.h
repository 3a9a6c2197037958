// One report per run: what wattcal-report collects from a run folder (models, validations,
// training corpora, constant-power fits), the figures it draws and the index it writes
// (index.html and its Markdown twin index.md, with the figures, the metric tables, the model
// parameters, the multicollinearity diagnosis, AccelWattch's Eq. 12 model and its power split
// when the run has one, and the provenance of every input).
//
//   RunReport report = CollectRunReport(options);   // reads and analyses; draws nothing
//   OutputSet outputs;
//   StageRunReport(report, options, &outputs);      // figures + index, one provenance record
//   outputs.Commit();
//
// Layout of the output folder: index.html, index.md and figures/<name>.{png,svg}, with one
// provenance record for them all in provenance/. Same inputs and options, same bytes (no
// timestamps; paths as given; links relative to the output folder).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/scaling_model.h"
#include "fit/identifiability.h"
#include "io/corpus_io.h"
#include "model/power_model.h"
#include "report/accelwattch_report.h"
#include "report/apps_report.h"
#include "report/report_figures.h"
#include "util/output.h"
#include "validate/prediction.h"

namespace wattcal {

// A file with the label it is shown under ("" = derived from the file).
struct LabelledPath {
  std::string label;
  std::string path;
};

// "LABEL=PATH" -> {LABEL, PATH}; "PATH" (no '=') -> {"", PATH}.
LabelledPath ParseLabelledPath(const std::string& text);

struct ReportOptions {
  // A run folder (Makefile.runs' reports/<run>/) whose files are found through its provenance
  // records (report/run_files.h: every output of every stage run but the report's own): wattcal
  // power models (JSON of format wattcal-power-model; the run's model is model/model.json),
  // validations (each validate run's predictions, metrics and summary), constant-power results
  // (JSON with p_const_w and curves), architecture comparisons (JSON with arch_a and per_workload),
  // AccelWattch models (JSON of format wattcal-accelwattch-model), a virtual GPU's AccelWattch
  // truth (JSON with expected_scaling_factors), AccelWattch power breakdowns (CSV with
  // wattcal-predict --breakdown's header for an AccelWattch model) and the applications (the
  // predict run with a breakdown). A file no record lists is not read; a folder without any
  // record is refused (InputError). Files named inside them (a model's trained_on, a
  // validation's measurements) are opened as written there, else relative to the run folder.
  // Empty: only the files given below.
  std::string run_dir;
  // Folder that receives index.html, index.md and figures/; empty = run_dir.
  std::string out_dir;
  // Heading of the index and prefix of the figure titles; empty = the run folder's name.
  std::string title;
  // Paragraphs of the author's own reading of the run (e.g. why two GPUs differ), shown under
  // the heading, each as given; none by default.
  std::vector<std::string> notes;
  // More models, shown beside the discovered ones ("LABEL=PATH" or "PATH").
  std::vector<LabelledPath> models;
  // More predictions CSVs (wattcal-validate --predictions), drawn in the error CDF and as
  // scatter plots ("LABEL=PATH" or "PATH"), with the metrics of the validate run whose
  // provenance record lists them.
  std::vector<std::string> predictions;
  // Corpora whose utilisations are analysed for multicollinearity; empty = the training corpus
  // named by the primary model (or, without a model, the cross-validated corpus).
  std::vector<std::string> train;
  // Corpus whose benchmarks the breakdown shows; empty = the held-out measurements of the
  // breakdown model's validation.
  std::string activity;
  // Model of the breakdown; empty = the primary model (model/model.json in the run folder, else
  // the first DVFS model, else the first model).
  std::string breakdown_model;
  // Benchmarks drawn over the V-F pairs; empty = `auto_benchmarks` of them chosen by their
  // MAPE in the first validation: the best, the worst and evenly spaced ones between.
  // Draw the benchmark x benchmark utilisation correlation (TPDS'19 Fig. 3b) too: off by default,
  // a heat map of 139 x 139 names cannot be read.
  bool benchmark_heatmap = false;
  std::vector<std::string> benchmarks;
  // How many benchmarks to choose when `benchmarks` is empty; >= 0.
  int auto_benchmarks = 3;
  // wattcal-constant's JSON; empty = discovered in the run folder.
  std::string constant_path;
  // Most curves drawn in the constant-power figure (spread over the range of power); >= 1.
  int max_constant_curves = 7;
  // wattcal-compare's JSONs (relative power of two architectures), one figure each; empty =
  // those discovered in the run folder.
  std::vector<std::string> compare_paths;
  // Reading tidy corpora without a preamble (default frequencies); 0 = the model's defaults.
  CorpusReadOptions corpus_read;
  CollinearityOptions collinearity;
  // False: write the index without figures (no gnuplot needed).
  bool figures = true;

  // False, with a sentence naming the field, its value and the rule broken, when invalid.
  bool Check(std::string* error) const;
  std::string EffectiveOutDir() const { return out_dir.empty() ? run_dir : out_dir; }
};

struct ReportModel {
  std::string label;  // shown in tables and keys
  std::string path;
  PowerModel model;
};

struct ReportValidation {
  std::string label;         // "dvfs, joint", "alternating-scaling, alternating", ...
  std::string name;          // LABEL of its folder validation/LABEL/ (its figures' names)
  std::string mode;          // dvfs | fixed | scaling | accelwattch | ...
  std::string metrics_path;  // empty for --predictions files
  std::string predictions_path;
  std::string summary_path;       // the summary its validate run wrote, when it wrote one
  std::string title;              // the validation's own title (metrics JSON), else the label
  std::string model_path;         // resolved; empty when unknown or cross-validated
  std::string measurements_path;  // resolved; empty when unknown
  bool cross_validated = false;
  bool primary = false;  // validates the run's model, or cross-validates (drawn over the V-F pairs)
  bool extra = false;    // given with --predictions (not discovered)
  nlohmann::json metrics;  // metrics JSON as written by wattcal-validate (or computed)
  std::vector<PredictionRow> rows;
};

// An AccelWattch scaling-factor model (accelwattch/scaling_model.h), with the factors a virtual
// GPU was built to need when the run holds its truth.
struct ReportAccelWattchModel {
  std::string label;  // its path relative to the run folder (else its file name)
  std::string path;
  AccelWattchModel model;
  std::string voltage_model;             // fixed_terms.voltage_model as written; "" without terms
  std::string trained_on_path;           // resolved; "" when not found
  std::string truth_path;                // truth_accelwattch.json; "" when the run has none
  std::map<std::string, double> true_x;  // its expected_scaling_factors
};

// An AccelWattch breakdown CSV (wattcal-predict --breakdown) and its two charts.
struct ReportAccelWattchBreakdown {
  std::string path;
  AccelWattchBreakdownTable table;
  std::vector<ClockSplit> clocks;
  BreakdownChart clock_chart;  // AccelWattch Eq. 12's terms per core clock
  double reference_f_core_mhz = 0.0;
  std::string reference_why;  // why that clock
  size_t benchmarks_at_reference = 0;
  BreakdownChart component_chart;  // dynamic power per component and benchmark at the reference
};

struct ReportCorpus {
  std::string path;
  CollinearityReport collinearity;
  // How its power was measured (from the ingest run's provenance record: the power source of each
  // capture), the board limit and the flagged rows; empty when nothing is known.
  std::string measurement_note;
};

enum class FigureKind {
  kScatter,         // index = validation
  kWorkloadErrors,  // index = validation
  kErrorCdf,
  kVoltage,
  kBenchmarkVf,  // name = benchmark
  kBreakdown,
  kBenchmarkCorrelation,  // index = corpus
  kComponentCorrelation,  // index = corpus
  kConstant,
  kRelative,               // index = comparison
  kAccelWattchClocks,      // index = AccelWattch breakdown
  kAccelWattchComponents,  // index = AccelWattch breakdown
  kApps,                   // the applications' predicted power by component
  kAppsEnergy,             // the applications' predicted and measured energy
  kWhatIf,                 // name = "clock" or "power_limit": energy change per setting
};

struct ReportFigure {
  FigureKind kind;
  int index = -1;
  std::string name;                 // benchmark (kBenchmarkVf)
  std::string stem;                 // figures/<stem>.png and .svg
  std::string section;              // index section the figure belongs to
  std::string title;                // drawn on the figure
  std::string caption;              // under it in the index
  std::vector<std::string> inputs;  // the files its data came from
};

struct RunReport {
  std::string title;
  std::vector<ReportModel> models;
  int primary_model = -1;
  std::vector<ReportValidation> validations;
  std::vector<ReportCorpus> corpora;
  // Breakdown of breakdown_model over the benchmarks of breakdown_activity.
  bool has_breakdown = false;
  BreakdownChart breakdown;
  int breakdown_model = -1;
  std::string breakdown_activity;
  // Constant power (wattcal-constant).
  bool has_constant = false;
  std::string constant_path;
  ConstantFitChart constant;        // every curve
  ConstantFitChart constant_drawn;  // the ones drawn
  // Relative power of two architectures (wattcal-compare), one per file.
  std::vector<std::string> compare_paths;
  std::vector<RelativePowerChart> comparisons;
  // AccelWattch (MICRO'21) scaling-factor models and breakdown CSVs.
  std::vector<ReportAccelWattchModel> accelwattch_models;
  std::vector<ReportAccelWattchBreakdown> accelwattch_breakdowns;
  // Applications predicted from their counters (the wattcal-predict --capture run that wrote a
  // breakdown, --breakdown-out).
  bool has_apps = false;
  ReportApps apps;
  std::vector<std::string> vf_benchmarks;
  std::vector<ReportFigure> figures;
  std::vector<std::string> inputs;  // every file read, in order of first use
  std::vector<std::string> notes;   // what was left out, and why
  nlohmann::json options;           // effective options (provenance, index)
};

// Discovers and reads the run's files and decides the figures. Throws OptionError for invalid
// options, when run_dir and out_dir are both empty, or for a --benchmark no validation has, and
// InputError (FILE:LINE: FIELD) for bad data.
// Collinearity findings are logged as warnings.
RunReport CollectRunReport(const ReportOptions& options);

// Draws every figure (unless options.figures is false) and writes index.html and index.md,
// each output staged in `outputs` with its provenance. Shows progress on a terminal.
void StageRunReport(const RunReport& report, const ReportOptions& options, OutputSet* outputs);

// The index pages (also used by the tests).
std::string RunReportHtml(const RunReport& report, const ReportOptions& options);
std::string RunReportMarkdown(const RunReport& report, const ReportOptions& options);

// Predictions written by wattcal-validate (benchmark, f_core_mhz[, f_mem_mhz], measured_w,
// predicted_w[, error_pct][, fold], in any order). Throws InputError naming FILE:LINE and the
// column for a missing column, a bad number or a measured power that is not > 0.
std::vector<PredictionRow> ReadPredictionsCsv(const std::string& path);

}  // namespace wattcal
