// wattcal-report's collector of a run (CollectRunReport, report/run_report.h): what it found
// so far and how it finds each part; its methods live in run_report.cc (the run, its models,
// the figures' benchmarks and options), run_discovery.cc (AccelWattch models, validations) and
// run_collect.cc (corpora, applications, what-if, breakdown, constant power, comparisons), with
// the small helpers they share. Internal to report/.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/corpus_io.h"
#include "model/power_model.h"
#include "report/internal/run_report_internal.h"
#include "report/run_files.h"
#include "report/run_report.h"

namespace wattcal::report_internal {

// Whether `path` names a regular file (false for "" and on any error).
bool IsFile(const std::string& path);

// Most bars in the breakdown figure (more would not fit a column; the rest are noted).
inline constexpr size_t kMaxBreakdownBars = 30;
// Most bars of the AccelWattch figures: core clocks, and benchmarks (plus the all-kernel bar).
inline constexpr size_t kMaxAccelWattchClockBars = 12;
inline constexpr size_t kMaxAccelWattchBenchmarkBars = 11;

// j[key] when it is a string, else "".
std::string JsonString(const nlohmann::json& j, const std::string& key);

// The order models are preferred in by mode: dvfs, scaling, fixed, anything else.
int ModeRank(const std::string& mode);

// A path named inside a file: as written when it exists, else relative to the run folder,
// else the discovered file it ends with; "" when none exists.
std::string ResolveNamed(const std::string& named, const std::string& run_dir,
                         const std::vector<std::string>& known);

// Whether `a` and `b` are one file (false when either is "" or absent).
bool SameFile(const std::string& a, const std::string& b);

// The model's solver, else its method: what a model is called without a label.
std::string ModelKind(const PowerModel& m);

// Collects a run into a RunReport: Collector(options).Run().
class Collector {
 public:
  explicit Collector(const ReportOptions& options) : o_(options) {}

  RunReport Run();

 private:
  void UseInput(const std::string& path);

  const std::vector<std::string>& KnownFiles() const { return files_; }

  // A model shown under `label` ("" = its kind and file); one already found takes the label given.
  void AddModel(const std::string& label, const std::string& path);

  // Parses every JSON file the run's stages wrote once (what each is goes by its content); one
  // that is not valid JSON is noted and left out.
  void ReadJsonFiles();

  void DiscoverModels();

  std::string RunRelative(const std::string& path) const;

  // AccelWattch models (format wattcal-accelwattch-model), the virtual GPU's truth beside their
  // training table, and breakdown CSVs recognised by their header. A model file that does not
  // read is noted and left out, as any file whose content is not what it seemed.
  void DiscoverAccelWattch();

  // One validation's files: the predictions, and the metrics and summary its validate run wrote
  // with them (none for a --predictions file that no record lists).
  struct FoundValidation {
    std::string predictions, metrics, summary;
    std::string
        name;  // what its figures are named after: LABEL of validation/LABEL/, else the file's
  };

  // The validation's name from where its predictions are: validation/LABEL/... -> LABEL; another
  // folder of the run -> that folder's path; the run folder itself -> the file's stem without
  // "predictions_" ("" for predictions.csv: named after its mode).
  static std::string ValidationName(const std::string& run_path);

  void AddValidation(const FoundValidation& f, const std::string& given_label, bool extra);

  // Every validate run of the run folder (its record's predictions, metrics and summary), then
  // the --predictions files; those of the run's model first, then those named after their mode
  // (validation/dvfs/), each group by mode (dvfs, scaling, fixed).
  void DiscoverValidations();

  // The run's model: model/model.json of the layout when there is one, else the first DVFS model,
  // else the first.
  void ChoosePrimaryModel();

  CorpusReadOptions ReadOptionsFor(const PowerModel* model) const;

  void AddCorpus(const std::string& path, const PowerModel* model);

  void CollectCorpora();

  // The applications: the predict run that wrote a breakdown with its predictions (wattcal-predict
  // --capture --breakdown-out); a second such run is noted.
  // The what-if table of the run's applications (wattcal-predict --what-if-out): the first predict
  // run that wrote one.
  void CollectWhatIf();

  void CollectApps();

  // True when every benchmark of `corpus` is one of the run's applications: its breakdown would
  // draw the applications a second time.
  bool AreTheApplications(const Corpus& corpus) const;

  void CollectBreakdown();

  void CollectConstant();

  // The run folder's JSON files that have every one of `keys`, in discovery order.
  std::vector<std::string> DiscoverJson(const std::vector<std::string>& keys) const;

  void CollectCompare();

  // Validations drawn over the V-F pairs (see VfValidationIndices).
  std::vector<int> VfValidations() const { return VfValidationIndices(r_.validations); }

  void ChooseBenchmarks();

  nlohmann::json OptionsJson() const;

  const ReportOptions& o_;
  RunReport r_;
  RunFiles run_files_;              // the run folder's stage runs, from provenance/
  std::vector<std::string> files_;  // their outputs
  std::string vf_ranking_label_;
  std::vector<std::pair<std::string, nlohmann::json>> json_files_;  // (path, content)
  std::vector<std::string> constant_inputs_;  // the sweep files behind the constant figure
};

}  // namespace wattcal::report_internal
