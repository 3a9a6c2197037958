#include "report/run_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "model/model_io.h"
#include "report/gnuplot_figure.h"
#include "report/run_files.h"
#include "report/run_report_internal.h"
#include "report/validation_plots.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/logging.h"
#include "util/option_rule.h"
#include "util/strings.h"
#include "validate/metrics.h"

namespace fs = std::filesystem;

namespace wattcal {

using report_internal::JoinPath;
using report_internal::JsonNumber;
using report_internal::MeasurementNote;
using report_internal::VfValidationIndices;

namespace {

bool IsFile(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

// Most bars in the breakdown figure (more would not fit a column; the rest are noted).
constexpr size_t kMaxBreakdownBars = 30;
// Most bars of the AccelWattch figures: core clocks, and benchmarks (plus the all-kernel bar).
constexpr size_t kMaxAccelWattchClockBars = 12;
constexpr size_t kMaxAccelWattchBenchmarkBars = 11;

std::string JsonString(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

int ModeRank(const std::string& mode) {
  if (mode == "dvfs") return 0;
  if (mode == "scaling") return 1;
  if (mode == "fixed") return 2;
  return 3;
}

// A path named inside a file: as written when it exists, else relative to the run folder,
// else the discovered file it ends with; "" when none exists.
std::string ResolveNamed(const std::string& named, const std::string& run_dir,
                         const std::vector<std::string>& known) {
  if (named.empty()) return "";
  if (IsFile(named)) return named;
  if (!run_dir.empty() && IsFile(JoinPath(run_dir, named))) return JoinPath(run_dir, named);
  const std::string generic = fs::path(named).lexically_normal().generic_string();
  for (const std::string& candidate : known) {
    const std::string relative = fs::path(candidate).lexically_relative(run_dir).generic_string();
    if (!run_dir.empty() && (generic == relative || EndsWith(generic, "/" + relative))) {
      return candidate;
    }
  }
  return "";
}

bool SameFile(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code ec;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

std::string ModelKind(const PowerModel& m) {
  return m.fit.solver ? ModelSolverName(*m.fit.solver) : FitMethodName(m.method);
}

}  // namespace

namespace report_internal {

// A file name stem from free text: lower-case letters and digits, runs of anything else as '_'.
std::string SafeStem(const std::string& text) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "x" : out;
}

std::string JoinPath(const std::string& dir, const std::string& relative) {
  if (dir.empty()) return relative;
  return (fs::path(dir) / relative).lexically_normal().string();
}

double JsonNumber(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return j[key].get<double>();
}

std::string TitlePrefix(const RunReport& r) { return r.title.empty() ? "" : r.title + ": "; }

// Validations drawn over the V-F pairs: those of the run's primary model (and its
// cross-validations), else every discovered one (not the --predictions extras, which may be other
// GPUs' benchmarks).
std::vector<int> VfValidationIndices(const std::vector<ReportValidation>& validations) {
  std::vector<int> chosen;
  for (size_t i = 0; i < validations.size(); ++i) {
    if (validations[i].primary) chosen.push_back(static_cast<int>(i));
  }
  if (chosen.empty()) {
    for (size_t i = 0; i < validations.size(); ++i) {
      if (!validations[i].extra) {
        chosen.push_back(static_cast<int>(i));
      }
    }
  }
  return chosen;
}

}  // namespace report_internal

LabelledPath ParseLabelledPath(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return {"", text};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

bool ReportOptions::Check(std::string* error) const {
  if (auto_benchmarks < 0)
    return RejectOption(error, "auto_benchmarks = {} must be >= 0", auto_benchmarks);
  if (max_constant_curves < 1)
    return RejectOption(error, "max_constant_curves = {} must be >= 1", max_constant_curves);
  for (const LabelledPath& m : models) {
    if (m.path.empty()) return RejectOption(error, "models: an entry '{}=' names no file", m.label);
  }
  if (!corpus_read.Check(error)) return false;
  return collinearity.Check(error);
}

namespace {

class Collector {
 public:
  explicit Collector(const ReportOptions& options) : o_(options) {}

  RunReport Run() {
    r_.title = o_.title;
    if (r_.title.empty()) {
      const fs::path dir =
          fs::path(o_.run_dir.empty() ? o_.out_dir : o_.run_dir).lexically_normal();
      r_.title = (dir.filename().empty() ? dir.parent_path().filename() : dir.filename()).string();
    }
    if (!o_.run_dir.empty()) {
      // The run's files are what its stages recorded in provenance/ (report/run_files.h).
      run_files_ = ReadRunFiles(o_.run_dir);
      files_ = run_files_.Files();
      for (const std::string& note : run_files_.notes) r_.notes.push_back(note);
    }
    ReadJsonFiles();
    DiscoverModels();
    ChoosePrimaryModel();
    DiscoverAccelWattch();
    DiscoverValidations();
    CollectCorpora();
    CollectApps();
    CollectWhatIf();
    CollectBreakdown();
    CollectConstant();
    CollectCompare();
    ChooseBenchmarks();
    report_internal::DecideFigures(o_, vf_ranking_label_, constant_inputs_, &r_);
    r_.options = OptionsJson();
    return std::move(r_);
  }

 private:
  void UseInput(const std::string& path) {
    if (std::find(r_.inputs.begin(), r_.inputs.end(), path) == r_.inputs.end()) {
      r_.inputs.push_back(path);
    }
  }

  const std::vector<std::string>& KnownFiles() const { return files_; }

  // A model shown under `label` ("" = its kind and file); one already found takes the label given.
  void AddModel(const std::string& label, const std::string& path) {
    for (ReportModel& m : r_.models) {
      if (m.path == path || SameFile(m.path, path)) {
        if (!label.empty()) m.label = label;
        return;
      }
    }
    ReportModel m;
    m.path = path;
    m.model = ReadModel(path);
    m.label = label;
    if (m.label.empty()) {
      const std::string shown =
          o_.run_dir.empty() || !StartsWith(path, JoinPath(o_.run_dir, ""))
              ? fs::path(path).filename().string()
              : fs::path(path).lexically_relative(o_.run_dir).generic_string();
      m.label = fmt::format("{} ({})", ModelKind(m.model), shown);
    }
    UseInput(path);
    r_.models.push_back(std::move(m));
  }

  // Parses every JSON file the run's stages wrote once (what each is goes by its content); one
  // that is not valid JSON is noted and left out.
  void ReadJsonFiles() {
    for (const std::string& path : files_) {
      if (!EndsWith(ToLower(path), ".json")) continue;
      try {
        json_files_.emplace_back(path, ReadJsonFile(path, "file for reading"));
      } catch (const InputError& e) {
        r_.notes.push_back(std::string(e.what()) + "; left out");
      }
    }
  }

  void DiscoverModels() {
    for (const auto& [path, j] : json_files_) {
      const std::string format = JsonString(j, "format");
      if (format == kModelJsonFormat) {
        AddModel("", path);
      } else if (format == kAccelWattchModelFormat) {
        continue;  // DiscoverAccelWattch
      } else if (ToLower(format).find("model") != std::string::npos) {
        r_.notes.push_back(
            fmt::format("{}: format '{}' is not a wattcal power model; not shown", path, format));
      }
    }
    for (const LabelledPath& m : o_.models) AddModel(m.label, m.path);
  }

  std::string RunRelative(const std::string& path) const {
    return o_.run_dir.empty() || !StartsWith(path, JoinPath(o_.run_dir, ""))
               ? fs::path(path).filename().string()
               : fs::path(path).lexically_relative(o_.run_dir).generic_string();
  }

  // AccelWattch models (format wattcal-accelwattch-model), the virtual GPU's truth beside their
  // training table, and breakdown CSVs recognised by their header. A model file that does not
  // read is noted and left out, as any file whose content is not what it seemed.
  void DiscoverAccelWattch() {
    std::vector<std::pair<std::string, std::map<std::string, double>>> truths;
    for (const std::string& path : DiscoverJson({"expected_scaling_factors"})) {
      for (const auto& [p, j] : json_files_) {
        if (p != path) continue;
        std::map<std::string, double> x = ExpectedScalingFactors(path, j);
        if (!x.empty()) truths.emplace_back(path, std::move(x));
      }
    }
    for (const auto& [path, j] : json_files_) {
      if (JsonString(j, "format") != kAccelWattchModelFormat) continue;
      ReportAccelWattchModel m;
      m.path = path;
      try {
        m.model = ReadAccelWattchModel(path);
      } catch (const InputError& e) {
        r_.notes.push_back(fmt::format("{}: a {} file that does not read ({}); not shown", path,
                                       kAccelWattchModelFormat, e.what()));
        continue;
      }
      m.label = RunRelative(path);
      if (m.model.has_terms && j.contains("fixed_terms")) {
        m.voltage_model = JsonString(j["fixed_terms"], "voltage_model");
      }
      m.trained_on_path = ResolveNamed(m.model.trained_on, o_.run_dir, KnownFiles());
      // The truth of the training table's data (data/raw/SET/ for data/tidy/SET/, or beside it),
      // else the run's first.
      for (const auto& [truth, x] : truths) {
        if (!m.trained_on_path.empty() &&
            fs::path(truth).parent_path().filename() ==
                fs::path(m.trained_on_path).parent_path().filename()) {
          m.truth_path = truth;
          m.true_x = x;
          break;
        }
      }
      if (m.truth_path.empty() && !truths.empty()) {
        m.truth_path = truths.front().first;
        m.true_x = truths.front().second;
      }
      UseInput(path);
      if (!m.truth_path.empty()) UseInput(m.truth_path);
      r_.accelwattch_models.push_back(std::move(m));
    }
    double reference_mhz = std::numeric_limits<double>::quiet_NaN();
    for (const ReportAccelWattchModel& m : r_.accelwattch_models) {
      if (m.model.has_terms && !std::isfinite(reference_mhz)) {
        reference_mhz = m.model.energies.reference_f_core_mhz;
      }
    }
    for (const std::string& path : files_) {
      if (!EndsWith(ToLower(path), ".csv")) continue;
      if (!LooksLikeAccelWattchBreakdownCsv(path)) continue;
      ReportAccelWattchBreakdown b;
      b.path = path;
      b.table = ReadAccelWattchBreakdownCsv(path);
      UseInput(path);
      b.clocks = SplitByCoreClock(b.table);
      b.clock_chart = ClockSplitChart(b.clocks, kMaxAccelWattchClockBars);
      if (b.clocks.size() > kMaxAccelWattchClockBars) {
        r_.notes.push_back(fmt::format("{}: {} of its {} core clocks are drawn", path,
                                       kMaxAccelWattchClockBars, b.clocks.size()));
      }
      b.reference_f_core_mhz = ChooseReferenceClock(b.table, reference_mhz, &b.reference_why);
      b.component_chart =
          DynamicByBenchmarkChart(b.table, b.reference_f_core_mhz, kMaxAccelWattchBenchmarkBars,
                                  &b.benchmarks_at_reference);
      r_.accelwattch_breakdowns.push_back(std::move(b));
    }
  }

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
  static std::string ValidationName(const std::string& run_path) {
    const fs::path p(run_path);
    std::string dir = p.parent_path().generic_string();
    if (StartsWith(dir, "validation/")) dir = dir.substr(11);
    if (!dir.empty() && dir != "validation") return dir;
    std::string stem = p.stem().string();
    if (StartsWith(stem, "predictions_")) stem = stem.substr(12);
    return stem == "predictions" ? "" : stem;
  }

  void AddValidation(const FoundValidation& f, const std::string& given_label, bool extra) {
    ReportValidation v;
    v.extra = extra;
    v.name = f.name;
    v.mode = f.name;
    v.predictions_path = f.predictions;
    v.metrics_path = f.metrics;
    v.summary_path = f.summary;
    v.rows = ReadPredictionsCsv(f.predictions);
    UseInput(f.predictions);
    if (!f.metrics.empty()) {
      v.metrics = ReadJsonFile(f.metrics, "file for reading");
      UseInput(f.metrics);
    } else {
      v.metrics = MetricsToJson(ComputeValidationMetrics(v.rows), MetricsOptions());
    }
    v.title = JsonString(v.metrics, "title");
    if (!JsonString(v.metrics, "mode").empty()) v.mode = JsonString(v.metrics, "mode");
    if (v.name.empty()) v.name = v.mode;
    v.cross_validated = v.metrics.is_object() && v.metrics.contains("cv_folds");
    v.model_path = ResolveNamed(JsonString(v.metrics, "model"), o_.run_dir, KnownFiles());
    v.measurements_path =
        ResolveNamed(JsonString(v.metrics, "measurements"), o_.run_dir, KnownFiles());
    if (!JsonString(v.metrics, "measurements").empty() && v.measurements_path.empty()) {
      r_.notes.push_back(fmt::format("{}: the measurements it names ({}) were not found", f.metrics,
                                     JsonString(v.metrics, "measurements")));
    }
    const ReportModel* primary =
        r_.primary_model >= 0 ? &r_.models[static_cast<size_t>(r_.primary_model)] : nullptr;
    v.primary = !extra && (v.cross_validated ||
                           (primary != nullptr && SameFile(primary->path, v.model_path)));
    v.label = given_label;
    if (v.label.empty()) {
      std::string how;
      if (v.cross_validated) {
        how = fmt::format("{:g}-fold CV", JsonNumber(v.metrics, "cv_folds"));
      } else {
        for (const ReportModel& m : r_.models) {
          if (SameFile(m.path, v.model_path)) how = ModelKind(m.model);
        }
      }
      v.label = how.empty() || how == v.name ? v.name : v.name + ", " + how;
    }
    for (const ReportValidation& other : r_.validations) {
      if (other.label == v.label) v.label += fmt::format(" #{}", r_.validations.size() + 1);
    }
    r_.validations.push_back(std::move(v));
  }

  // Every validate run of the run folder (its record's predictions, metrics and summary), then
  // the --predictions files; those of the run's model first, then those named after their mode
  // (validation/dvfs/), each group by mode (dvfs, scaling, fixed).
  void DiscoverValidations() {
    for (const StageRun& run : run_files_.runs) {
      if (run.stage != "validate") continue;
      const RunOutput* predictions = run.Output("predictions");
      const RunOutput* metrics = run.Output("metrics");
      if (predictions == nullptr || metrics == nullptr) {
        r_.notes.push_back(run.provenance +
                           ": a validate run without its predictions and metrics; not shown");
        continue;
      }
      const RunOutput* summary = run.Output("summary");
      const std::string relative =
          !predictions->run_path.empty()
              ? predictions->run_path
              : fs::path(predictions->path).lexically_relative(o_.run_dir).generic_string();
      AddValidation({predictions->path, metrics->path, summary != nullptr ? summary->path : "",
                     ValidationName(relative)},
                    "", false);
    }
    std::stable_sort(r_.validations.begin(), r_.validations.end(),
                     [](const ReportValidation& a, const ReportValidation& b) {
                       if (a.primary != b.primary) return a.primary;
                       if ((a.name == a.mode) != (b.name == b.mode)) return a.name == a.mode;
                       return ModeRank(a.mode) < ModeRank(b.mode);
                     });
    for (const std::string& text : o_.predictions) {
      const LabelledPath lp = ParseLabelledPath(text);
      FoundValidation f{lp.path, "", "", ValidationName(fs::path(lp.path).filename().string())};
      StageRun run;
      if (FindStageRunOf(lp.path, &run) && run.stage == "validate") {
        if (const RunOutput* metrics = run.Output("metrics")) f.metrics = metrics->path;
        if (const RunOutput* summary = run.Output("summary")) f.summary = summary->path;
      }
      std::string label = lp.label;
      if (label.empty()) {
        const std::string parent = fs::path(lp.path).parent_path().filename().string();
        const std::string mode = f.name.empty() ? "predictions" : f.name;
        label = parent.empty() ? mode : parent + ": " + mode;
      }
      AddValidation(f, label, true);
    }
  }

  // The run's model: model/model.json of the layout when there is one, else the first DVFS model,
  // else the first.
  void ChoosePrimaryModel() {
    for (size_t i = 0; i < r_.models.size() && r_.primary_model < 0; ++i) {
      if (!o_.run_dir.empty() &&
          SameFile(r_.models[i].path, JoinPath(o_.run_dir, "model/model.json"))) {
        r_.primary_model = static_cast<int>(i);
      }
    }
    for (size_t i = 0; i < r_.models.size() && r_.primary_model < 0; ++i) {
      if (r_.models[i].model.method == FitMethod::kDvfs) r_.primary_model = static_cast<int>(i);
    }
    if (r_.primary_model < 0 && !r_.models.empty()) r_.primary_model = 0;
  }

  CorpusReadOptions ReadOptionsFor(const PowerModel* model) const {
    CorpusReadOptions read = o_.corpus_read;
    if (model != nullptr) {
      const std::vector<double> defaults = model->DefaultFrequencies();
      if (read.default_core_mhz == 0.0 && !defaults.empty()) read.default_core_mhz = defaults[0];
      if (read.default_mem_mhz == 0.0 && defaults.size() > 1) read.default_mem_mhz = defaults[1];
    }
    return read;
  }

  void AddCorpus(const std::string& path, const PowerModel* model) {
    for (const ReportCorpus& c : r_.corpora) {
      if (SameFile(c.path, path)) return;
    }
    const Corpus corpus = ReadCorpus(path, ReadOptionsFor(model));
    UseInput(path);
    ReportCorpus c;
    c.path = path;
    c.collinearity = AnalyseCollinearity(corpus, o_.collinearity);
    c.measurement_note = MeasurementNote(corpus, path);
    for (const std::string& w : c.collinearity.warnings) {
      LogWarning("training utilisations of " + path + ": " + w);
    }
    LogInfo(
        fmt::format("{}: {} benchmarks x {} components, condition number {:.1f}, {} pair(s) "
                    "with |r| >= {:g}",
                    path, c.collinearity.benchmarks.size(), c.collinearity.components.size(),
                    c.collinearity.condition_number, c.collinearity.pairs.size(),
                    o_.collinearity.pair_threshold_abs_r));
    r_.corpora.push_back(std::move(c));
  }

  void CollectCorpora() {
    const PowerModel* primary =
        r_.primary_model >= 0 ? &r_.models[static_cast<size_t>(r_.primary_model)].model : nullptr;
    if (!o_.train.empty()) {
      for (const std::string& path : o_.train) AddCorpus(path, primary);
      return;
    }
    if (primary != nullptr) {
      const std::string named = primary->trained_on;
      std::string path = ResolveNamed(named, o_.run_dir, KnownFiles());
      // wattcal-port writes "<corpus> (ported from ...)".
      const size_t note = named.find(" (");
      if (path.empty() && note != std::string::npos) {
        path = ResolveNamed(named.substr(0, note), o_.run_dir, KnownFiles());
      }
      if (!path.empty()) {
        AddCorpus(path, primary);
      } else if (!named.empty()) {
        r_.notes.push_back(fmt::format(
            "the training corpus of {} ({}) was not found: no utilisation correlations (pass "
            "--train FILE)",
            r_.models[static_cast<size_t>(r_.primary_model)].path, named));
      }
      return;
    }
    for (const ReportValidation& v : r_.validations) {
      if (v.cross_validated && !v.extra && !v.measurements_path.empty()) {
        AddCorpus(v.measurements_path, nullptr);
        return;
      }
    }
  }

  // The applications: the predict run that wrote a breakdown with its predictions (wattcal-predict
  // --capture --breakdown-out); a second such run is noted.
  // The what-if table of the run's applications (wattcal-predict --what-if-out): the first predict
  // run that wrote one.
  void CollectWhatIf() {
    if (!r_.has_apps) return;
    for (const StageRun& run : run_files_.runs) {
      const RunOutput* what_if = run.Output("what_if");
      if (run.stage != "predict" || what_if == nullptr) continue;
      if (!r_.apps.what_if.path.empty()) {
        r_.notes.push_back(what_if->path + ": a second what-if table; only " +
                           r_.apps.what_if.path + " is shown");
        continue;
      }
      r_.apps.what_if = ReadReportWhatIf(what_if->path);
      UseInput(what_if->path);
    }
  }

  void CollectApps() {
    for (const StageRun& run : run_files_.runs) {
      const RunOutput* predictions = run.Output("apps_predictions");
      const RunOutput* breakdown = run.Output("apps_breakdown");
      if (run.stage != "predict" || predictions == nullptr || breakdown == nullptr) continue;
      if (!IsAppPredictionsCsv(predictions->path)) continue;
      if (r_.has_apps) {
        r_.notes.push_back(predictions->path +
                           ": a second prediction of applications with a breakdown; only " +
                           r_.apps.path + " is shown");
        continue;
      }
      r_.apps = ReadReportApps(predictions->path, breakdown->path);
      r_.has_apps = true;

      // The board limit of the run's model, drawn as a line over the bars.
      if (r_.primary_model >= 0) {
        r_.apps.chart.limit_w =
            r_.models[static_cast<size_t>(r_.primary_model)].model.power_limit_w;
      }
      UseInput(predictions->path);
      UseInput(breakdown->path);
    }
  }

  // True when every benchmark of `corpus` is one of the run's applications: its breakdown would
  // draw the applications a second time.
  bool AreTheApplications(const Corpus& corpus) const {
    if (!r_.has_apps) return false;
    std::set<std::string> apps;
    for (const ReportApp& a : r_.apps.rows) apps.insert(a.workload);
    for (const std::string& b : corpus.benchmark) {
      if (!apps.count(b)) return false;
    }
    return !corpus.benchmark.empty();
  }

  void CollectBreakdown() {
    int model = r_.primary_model;
    if (!o_.breakdown_model.empty()) {
      AddModel("", o_.breakdown_model);
      model = -1;
      for (size_t i = 0; i < r_.models.size(); ++i) {
        if (r_.models[i].path == o_.breakdown_model ||
            SameFile(r_.models[i].path, o_.breakdown_model)) {
          model = static_cast<int>(i);
        }
      }
    }
    if (model < 0) {
      // An AccelWattch run shows its own breakdown.
      if (!r_.validations.empty() && r_.accelwattch_models.empty() &&
          r_.accelwattch_breakdowns.empty()) {
        r_.notes.push_back("no model: no power breakdown");
      }
      return;
    }
    const ReportModel& m = r_.models[static_cast<size_t>(model)];
    std::string activity = o_.activity;
    if (activity.empty()) {
      for (const ReportValidation& v : r_.validations) {
        if (!v.measurements_path.empty() && SameFile(v.model_path, m.path)) {
          activity = v.measurements_path;
          break;
        }
      }
    }
    if (activity.empty()) {
      r_.notes.push_back("no held-out measurements validated with " + m.path +
                         ": no power breakdown (pass --activity FILE)");
      return;
    }
    const Corpus corpus = ReadCorpus(activity, ReadOptionsFor(&m.model));
    if (o_.activity.empty() && AreTheApplications(corpus)) {
      r_.notes.push_back("the held-out measurements " + activity +
                         " are the applications: their breakdown is drawn once, under "
                         "Applications");
      return;
    }
    UseInput(activity);
    r_.breakdown = ComputeBreakdownChart(m.model, corpus);
    r_.breakdown.limit_w = m.model.power_limit_w;
    if (r_.breakdown.bars.size() > kMaxBreakdownBars) {
      r_.notes.push_back(
          fmt::format("breakdown: the {} of {} benchmarks with the largest predicted power are "
                      "drawn, the other {} as one bar of their mean",
                      kMaxBreakdownBars - 1, r_.breakdown.bars.size(),
                      r_.breakdown.bars.size() - kMaxBreakdownBars + 1));
      KeepLargestBars(&r_.breakdown, kMaxBreakdownBars);
    }
    r_.has_breakdown = !r_.breakdown.bars.empty();
    r_.breakdown_model = model;
    r_.breakdown_activity = activity;
  }

  void CollectConstant() {
    std::string path = o_.constant_path;
    if (path.empty()) {
      const std::vector<std::string> found = DiscoverJson({"p_const_w", "curves"});
      for (size_t i = 1; i < found.size(); ++i) {
        r_.notes.push_back(found[i] + ": a second constant-power result; only " + found[0] +
                           " is shown (or pass --constant FILE)");
      }
      if (found.empty()) return;
      path = found[0];
    }
    r_.constant = ReadConstantFitChart(path);
    UseInput(path);
    std::vector<std::string> sweep_files;
    if (AddSweepPoints(path, &r_.constant, &sweep_files)) {
      for (const std::string& f : sweep_files) UseInput(f);
      constant_inputs_ = sweep_files;
    } else {
      r_.notes.push_back(path +
                         ": the sweep it names was not found; fitted curves drawn without "
                         "their measured points");
    }
    r_.constant_path = path;
    r_.has_constant = !r_.constant.curves.empty();
    // Spread the drawn curves over the range of power at the highest clock.
    std::vector<ConstantFitCurve> curves = r_.constant.curves;
    auto top = [&](const ConstantFitCurve& c) {
      const double f = c.f_max_mhz;
      return c.beta_w_per_mhz3 * f * f * f + c.tau_w_per_mhz * f;
    };
    std::stable_sort(
        curves.begin(), curves.end(),
        [&](const ConstantFitCurve& a, const ConstantFitCurve& b) { return top(a) < top(b); });
    r_.constant_drawn = r_.constant;
    r_.constant_drawn.curves.clear();
    const size_t k = static_cast<size_t>(o_.max_constant_curves);
    if (curves.size() <= k) {
      r_.constant_drawn.curves = curves;
    } else {
      std::set<size_t> picked;
      for (size_t i = 0; i < k; ++i) {
        picked.insert(k == 1 ? curves.size() / 2
                             : (i * (curves.size() - 1) + (k - 1) / 2) / (k - 1));
      }
      for (size_t i : picked) r_.constant_drawn.curves.push_back(curves[i]);
    }
  }

  // The run folder's JSON files that have every one of `keys`, in discovery order.
  std::vector<std::string> DiscoverJson(const std::vector<std::string>& keys) const {
    std::vector<std::string> paths;
    for (const auto& [path, j] : json_files_) {
      bool all = j.is_object();
      for (const std::string& key : keys) all = all && j.contains(key);
      if (all) paths.push_back(path);
    }
    return paths;
  }

  void CollectCompare() {
    const std::vector<std::string> paths = o_.compare_paths.empty()
                                               ? DiscoverJson({"arch_a", "arch_b", "per_workload"})
                                               : o_.compare_paths;
    for (const std::string& path : paths) {
      RelativePowerChart chart = ReadRelativePowerChart(path);
      UseInput(path);
      if (chart.bars.empty()) {
        r_.notes.push_back(path + ": no workload to compare");
        continue;
      }
      r_.compare_paths.push_back(path);
      r_.comparisons.push_back(std::move(chart));
    }
  }

  // Validations drawn over the V-F pairs (see VfValidationIndices).
  std::vector<int> VfValidations() const { return VfValidationIndices(r_.validations); }

  void ChooseBenchmarks() {
    const std::vector<int> vf = VfValidations();
    // Distinct V-F pairs per benchmark per validation (several windows at one pair draw no curve).
    std::map<std::string, int> most_rows;
    for (int i : vf) {
      std::map<std::string, std::set<std::pair<double, double>>> pairs;
      for (const PredictionRow& row : r_.validations[static_cast<size_t>(i)].rows)
        pairs[row.benchmark].insert({row.f_core_mhz, row.f_mem_mhz});
      for (const auto& [b, p] : pairs)
        most_rows[b] = std::max(most_rows[b], static_cast<int>(p.size()));
    }
    if (!o_.benchmarks.empty()) {
      for (const std::string& b : o_.benchmarks) {
        if (most_rows[b] < 2) {
          std::string available;
          int listed = 0;
          for (const auto& [name, n] : most_rows) {
            if (n < 2) continue;
            if (listed++ < 12) available += (available.empty() ? "" : ", ") + name;
          }
          throw OptionError(fmt::format(
              "--benchmark '{}': no validation of this run predicts it at two or more V-F pairs "
              "(available: {}{})",
              b, available.empty() ? "none" : available, listed > 12 ? ", ..." : ""));
        }
        if (std::find(r_.vf_benchmarks.begin(), r_.vf_benchmarks.end(), b) ==
            r_.vf_benchmarks.end()) {
          r_.vf_benchmarks.push_back(b);
        }
      }
      return;
    }
    if (o_.auto_benchmarks == 0) return;
    // By MAPE in the first validation with several pairs per benchmark.
    for (int i : vf) {
      std::map<std::string, std::pair<double, int>> ape;  // sum, count
      for (const PredictionRow& row : r_.validations[static_cast<size_t>(i)].rows) {
        auto& [sum, n] = ape[row.benchmark];
        sum += std::abs(row.error_pct());
        ++n;
      }
      std::vector<std::pair<double, std::string>> ranked;
      for (const auto& [b, s] : ape) {
        if (most_rows[b] >= 2) ranked.emplace_back(s.first / s.second, b);
      }
      if (ranked.empty()) continue;
      std::sort(ranked.begin(), ranked.end());
      const size_t n = ranked.size();
      const size_t k = std::min(n, static_cast<size_t>(o_.auto_benchmarks));
      std::set<size_t> picked;
      for (size_t j = 0; j < k; ++j) {
        picked.insert(k == 1 ? n / 2 : (j * (n - 1) + (k - 1) / 2) / (k - 1));
      }
      for (size_t j : picked) r_.vf_benchmarks.push_back(ranked[j].second);
      vf_ranking_label_ = r_.validations[static_cast<size_t>(i)].label;
      return;
    }
  }

  nlohmann::json OptionsJson() const {
    nlohmann::json j;
    j["run_dir"] = o_.run_dir;
    j["out_dir"] = o_.EffectiveOutDir();
    j["title"] = r_.title;
    if (!o_.notes.empty()) j["notes"] = o_.notes;
    nlohmann::json models = nlohmann::json::array();
    for (const ReportModel& m : r_.models) models.push_back({{"label", m.label}, {"path", m.path}});
    j["models"] = models;
    nlohmann::json validations = nlohmann::json::array();
    for (const ReportValidation& v : r_.validations) {
      validations.push_back(
          {{"label", v.label}, {"predictions", v.predictions_path}, {"metrics", v.metrics_path}});
    }
    j["validations"] = validations;
    j["train"] = o_.train;
    j["activity"] = r_.breakdown_activity;
    j["breakdown_model"] =
        r_.breakdown_model >= 0 ? r_.models[static_cast<size_t>(r_.breakdown_model)].path : "";
    j["benchmarks"] = r_.vf_benchmarks;
    j["auto_benchmarks"] = o_.auto_benchmarks;
    j["constant"] = r_.constant_path;
    j["max_constant_curves"] = o_.max_constant_curves;
    j["compare"] = r_.compare_paths;
    j["default_core_mhz"] = o_.corpus_read.default_core_mhz;
    j["default_mem_mhz"] = o_.corpus_read.default_mem_mhz;
    j["collinearity_pair_threshold_abs_r"] = o_.collinearity.pair_threshold_abs_r;
    j["collinearity_condition_number_threshold"] = o_.collinearity.condition_number_threshold;
    j["figures"] = o_.figures;
    // Only in runs that have them (the options of every other report stay as they were).
    if (!r_.accelwattch_models.empty()) {
      nlohmann::json models = nlohmann::json::array();
      for (const ReportAccelWattchModel& m : r_.accelwattch_models)
        models.push_back({{"path", m.path}, {"truth", m.truth_path}});
      j["accelwattch_models"] = models;
    }
    if (!r_.accelwattch_breakdowns.empty()) {
      nlohmann::json breakdowns = nlohmann::json::array();
      for (const ReportAccelWattchBreakdown& b : r_.accelwattch_breakdowns) {
        breakdowns.push_back({{"path", b.path}, {"reference_f_core_mhz", b.reference_f_core_mhz}});
      }
      j["accelwattch_breakdowns"] = breakdowns;
    }
    return j;
  }

  const ReportOptions& o_;
  RunReport r_;
  RunFiles run_files_;              // the run folder's stage runs, from provenance/
  std::vector<std::string> files_;  // their outputs
  std::string vf_ranking_label_;
  std::vector<std::pair<std::string, nlohmann::json>> json_files_;  // (path, content)
  std::vector<std::string> constant_inputs_;  // the sweep files behind the constant figure
};

}  // namespace

RunReport CollectRunReport(const ReportOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid report options: " + error);
  if (options.run_dir.empty() && options.out_dir.empty()) {
    throw OptionError("give a run folder (--run-dir) or an output folder (--out-dir)");
  }
  return Collector(options).Run();
}

}  // namespace wattcal
