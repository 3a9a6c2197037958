#include "report/run_report.h"

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "model/model_io.h"
#include "report/gnuplot_figure.h"
#include "report/validation_plots.h"
#include "util/errors.h"
#include "util/logging.h"
#include "validate/metrics.h"

namespace fs = std::filesystem;

namespace wattcal {
namespace {

bool IsFile(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

nlohmann::json ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "",
      std::string("cannot open file for reading") + ": " + std::strerror(errno));
  try {
    nlohmann::json j;
    in >> j;
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, 0, "", std::string("not valid JSON: ") + e.what());
  }
}

// What the ingest run's provenance says about a measured table's power (wattcal-ingest
// --capture records options.power_sources), with the table's board limit and flagged rows.
std::string MeasurementNote(const Corpus& corpus, const std::string& path) {
  std::string note;
  const std::string provenance = FindProvenanceOf(path);
  if (!provenance.empty()) {
    try {
      const nlohmann::json j = ReadJsonFile(provenance);
      // The output's own options when it has them, else the run's.
      const nlohmann::json* options = j.contains("options") ? &j["options"] : nullptr;
      for (const nlohmann::json& o : j.value("outputs", nlohmann::json::array())) {
        if (fs::path(o.value("path", "")).filename() == fs::path(path).filename() && o.contains("options")) {
          options = &o["options"];
        }
      }
      const nlohmann::json* sources = nullptr;
      if (options != nullptr && options->contains("power_sources")) sources = &(*options)["power_sources"];
      if (sources != nullptr && sources->is_array() && !sources->empty()) {
        note += "Measured power: ";
        for (size_t i = 0; i < sources->size(); ++i) {
          const nlohmann::json& e = (*sources)[i];
          note += fmt::format("{}{} from {} ({})", i > 0 ? "; " : "",
                              e.value("power_source", std::string("?")),
                              e.value("power_log", std::string("?")),
                              e.value("capture", std::string("?")));
        }
        note += " (preference: energy counter, then instant power, then 1-s averaged power). ";
      }
    } catch (const std::exception&) {
      // A provenance file that cannot be read says nothing about the power.
    }
  }
  if (std::isfinite(corpus.power_limit_w)) {
    note += fmt::format("Board power limit {:g} W. ", corpus.power_limit_w);
  }
  if (corpus.has_flags()) {
    std::vector<std::string> flagged;
    // The rows calibrate leaves out, by its own rule (power_cap or clock_moved).
    for (int i = 0; i < corpus.rows(); ++i) {
      if (IsThrottledRow(corpus, i)) {
        flagged.push_back(fmt::format("{} [{}]", corpus.benchmark[static_cast<size_t>(i)],
                                      corpus.flags[static_cast<size_t>(i)]));
      }
    }
    if (!flagged.empty()) {
      note += fmt::format("{} of {} rows are flagged (left out of training unless calibrate "
                          "--keep-flagged): ",
                          flagged.size(), corpus.rows());
      for (size_t i = 0; i < flagged.size(); ++i) note += (i > 0 ? ", " : "") + flagged[i];
      note += ".";
    }
  }
  while (!note.empty() && note.back() == ' ') note.pop_back();
  return note;
}

// Depth below the run folder searched for files (run/, run/a/, run/a/b/).
constexpr int kDiscoveryDepth = 2;
// Most bars in the breakdown figure (more would not fit a column; the rest are noted).
constexpr size_t kMaxBreakdownBars = 30;
// Most bars of the AccelWattch figures: core clocks, and benchmarks (plus the all-kernel bar).
constexpr size_t kMaxAccelWattchClockBars = 12;
constexpr size_t kMaxAccelWattchBenchmarkBars = 11;

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

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

std::string JsonString(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// Files of the run folder, relative to it, sorted, down to kDiscoveryDepth; manifests and
// staged temporaries left out.
std::vector<std::string> ListRunFiles(const std::string& run_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(run_dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw OptionError("--run-dir " + run_dir + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory()) {
      // provenance/ describes the run, it is not one of its results.
      if (it.depth() >= kDiscoveryDepth || name == "provenance") it.disable_recursion_pending();
      continue;
    }
    if (EndsWith(name, ".manifest.json") || name.find(".tmp.") != std::string::npos) continue;
    files.push_back(path.lexically_relative(run_dir).generic_string());
  }
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    const auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
    if (depth(a) != depth(b)) return depth(a) < depth(b);
    return a < b;
  });
  return files;
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
  return m.fit.solver.empty() ? m.method : m.fit.solver;
}

std::string TitlePrefix(const RunReport& r) { return r.title.empty() ? "" : r.title + ": "; }

// Validations drawn over the V-F pairs: those in the run folder itself, else every discovered
// one (not the --predictions extras, which may be other GPUs' benchmarks).
std::vector<int> VfValidationIndices(const std::vector<ReportValidation>& validations) {
  std::vector<int> chosen;
  for (size_t i = 0; i < validations.size(); ++i) {
    if (validations[i].in_run_root) chosen.push_back(static_cast<int>(i));
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

}  // namespace

LabelledPath ParseLabelledPath(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return {"", text};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

bool ReportOptions::Check(std::string* error) const {
  if (auto_benchmarks < 0) {
    *error = fmt::format("auto_benchmarks = {} must be >= 0", auto_benchmarks);
    return false;
  }
  if (max_constant_curves < 1) {
    *error = fmt::format("max_constant_curves = {} must be >= 1", max_constant_curves);
    return false;
  }
  for (const LabelledPath& m : models) {
    if (m.path.empty()) {
      *error = "models: an entry '" + m.label + "=' names no file";
      return false;
    }
  }
  if (!corpus_read.Check(error)) return false;
  return collinearity.Check(error);
}

std::vector<PredictionRow> ReadPredictionsCsv(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) reader.Fail("", "empty file: expected a predictions header");
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < fields.size(); ++i) column.emplace(fields[i], i);
  auto find = [&](const std::string& name, bool required) -> long {
    auto it = column.find(name);
    if (it == column.end()) {
      if (required) {
        reader.Fail(name,
                    "missing column (expected benchmark,f_core_mhz,f_mem_mhz,measured_w,"
                    "predicted_w as wattcal-validate writes)");
      }
      return -1;
    }
    return static_cast<long>(it->second);
  };
  const long benchmark = find("benchmark", true);
  const long f_core = find("f_core_mhz", true);
  const long f_mem = find("f_mem_mhz", false);
  const long measured = find("measured_w", true);
  const long predicted = find("predicted_w", true);
  const long fold = find("fold", false);
  // The capping columns, when the predictions have them (a power limit was known).
  const long uncapped = find("uncapped_w", false);
  const long capped = find("capped", false);
  const long measured_capped = find("measured_capped", false);
  const long flags = find("flags", false);  // capped;util_beyond_training:<component>;...
  std::vector<PredictionRow> rows;
  while (reader.Next(&fields)) {
    if (fields.size() != column.size()) {
      reader.Fail("", fmt::format("{} fields, the header has {}", fields.size(), column.size()));
    }
    PredictionRow row;
    row.line = reader.line();
    row.benchmark = fields[static_cast<size_t>(benchmark)];
    if (row.benchmark.empty()) reader.Fail("benchmark", "empty benchmark name");
    row.f_core_mhz = reader.ParseNumber(fields[static_cast<size_t>(f_core)], "f_core_mhz");
    if (f_mem >= 0)
      row.f_mem_mhz = reader.ParseNumber(fields[static_cast<size_t>(f_mem)], "f_mem_mhz");
    row.measured_w = reader.ParseNumber(fields[static_cast<size_t>(measured)], "measured_w");
    if (!(row.measured_w > 0.0)) {
      reader.Fail("measured_w", fmt::format("{} must be > 0 (errors are relative to it)",
                                            fields[static_cast<size_t>(measured)]));
    }
    row.predicted_w = reader.ParseNumber(fields[static_cast<size_t>(predicted)], "predicted_w");
    if (fold >= 0) {
      row.fold = static_cast<int>(reader.ParseNumber(fields[static_cast<size_t>(fold)], "fold"));
    }
    row.uncapped_w = uncapped >= 0 ? reader.ParseNumber(fields[static_cast<size_t>(uncapped)], "uncapped_w")
                                   : row.predicted_w;
    auto flag = [&](long at, const char* name) {
      if (at < 0) return false;
      const std::string& v = fields[static_cast<size_t>(at)];
      if (v != "0" && v != "1") reader.Fail(name, fmt::format("'{}': expected 0 or 1", v));
      return v == "1";
    };
    row.capped = flag(capped, "capped");
    row.measured_capped = flag(measured_capped, "measured_capped");
    if (flags >= 0) row.flags = fields[static_cast<size_t>(flags)];
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw InputError(path, reader.line(), "", "no prediction rows");
  return rows;
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
      files_ = ListRunFiles(o_.run_dir);
      // A folder from before provenance/: its per-file manifests are not read.
      std::error_code ec;
      bool old_manifests = false;
      for (fs::directory_iterator it(o_.run_dir, ec), end; !ec && it != end; it.increment(ec)) {
        old_manifests = old_manifests || EndsWith(it->path().filename().string(), ".manifest.json");
      }
      if (old_manifests && !fs::is_directory(fs::path(o_.run_dir) / "provenance")) {
        r_.notes.push_back(o_.run_dir + " was written by an older wattcal (a .manifest.json beside each file, no "
                           "provenance/ folder): those manifests are not read; rerun its stages to record "
                           "provenance");
      }
    }
    ReadJsonFiles();
    DiscoverModels();
    DiscoverAccelWattch();
    DiscoverValidations();
    ChoosePrimaryModel();
    CollectCorpora();
    CollectBreakdown();
    CollectConstant();
    CollectCompare();
    CollectApps();
    ChooseBenchmarks();
    DecideFigures();
    r_.options = OptionsJson();
    return std::move(r_);
  }

 private:
  void UseInput(const std::string& path) {
    if (std::find(r_.inputs.begin(), r_.inputs.end(), path) == r_.inputs.end()) {
      r_.inputs.push_back(path);
    }
  }

  std::vector<std::string> KnownFiles() const {
    std::vector<std::string> known;
    for (const std::string& f : files_) known.push_back(JoinPath(o_.run_dir, f));
    return known;
  }

  void AddModel(const std::string& label, const std::string& path) {
    for (const ReportModel& m : r_.models) {
      if (m.path == path || SameFile(m.path, path)) return;
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

  // Parses every JSON file of the run folder once (discovery goes by content, not by name);
  // one that is not valid JSON is noted and left out.
  void ReadJsonFiles() {
    for (const std::string& f : files_) {
      if (!EndsWith(Lower(f), ".json")) continue;
      const std::string path = JoinPath(o_.run_dir, f);
      try {
        json_files_.emplace_back(path, ReadJsonFile(path));
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
      } else if (Lower(format).find("model") != std::string::npos) {
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
      // The truth beside the training table, else the run's first.
      for (const auto& [truth, x] : truths) {
        if (!m.trained_on_path.empty() &&
            fs::path(truth).parent_path() == fs::path(m.trained_on_path).parent_path()) {
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
    for (const std::string& f : files_) {
      if (!EndsWith(Lower(f), ".csv")) continue;
      const std::string path = JoinPath(o_.run_dir, f);
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
      b.component_chart = DynamicByBenchmarkChart(b.table, b.reference_f_core_mhz,
                                                  kMaxAccelWattchBenchmarkBars,
                                                  &b.benchmarks_at_reference);
      r_.accelwattch_breakdowns.push_back(std::move(b));
    }
  }

  // Loads predictions (and the metrics JSON beside them when there is one).
  // `name` is what its files are called after (metrics_<name>.json), "" for metrics.json.
  void AddValidation(const std::string& predictions_path, const std::string& metrics_path,
                     const std::string& name, const std::string& given_label, bool in_root,
                     bool extra) {
    ReportValidation v;
    v.extra = extra;
    v.name = name;
    v.mode = name;
    v.predictions_path = predictions_path;
    v.metrics_path = metrics_path;
    v.in_run_root = in_root;
    v.rows = ReadPredictionsCsv(predictions_path);
    UseInput(predictions_path);
    if (!metrics_path.empty()) {
      v.metrics = ReadJsonFile(metrics_path);
      UseInput(metrics_path);
    } else {
      v.metrics = MetricsToJson(ComputeValidationMetrics(v.rows), MetricsOptions());
    }
    v.title = JsonString(v.metrics, "title");
    if (!JsonString(v.metrics, "mode").empty()) v.mode = JsonString(v.metrics, "mode");
    const std::vector<std::string> known = KnownFiles();
    v.cross_validated = v.metrics.is_object() && v.metrics.contains("cv_folds");
    v.model_path = ResolveNamed(JsonString(v.metrics, "model"), o_.run_dir, known);
    v.measurements_path = ResolveNamed(JsonString(v.metrics, "measurements"), o_.run_dir, known);
    if (!JsonString(v.metrics, "measurements").empty() && v.measurements_path.empty()) {
      r_.notes.push_back(fmt::format("{}: the measurements it names ({}) were not found",
                                     metrics_path, JsonString(v.metrics, "measurements")));
    }
    const std::string summary = JoinPath(fs::path(predictions_path).parent_path().string(),
                                         name.empty() ? "summary.md" : "summary_" + name + ".md");
    if (!metrics_path.empty() && IsFile(summary)) v.summary_path = summary;

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
      const std::string dir = o_.run_dir.empty() ? std::string()
                                                 : fs::path(predictions_path)
                                                       .parent_path()
                                                       .lexically_relative(o_.run_dir)
                                                       .generic_string();
      // Named after its files, else after its folder (metrics.json), else after its mode.
      const std::string base = !name.empty() ? name : !dir.empty() && dir != "." ? dir : v.mode;
      v.label = how.empty() ? base : base + ", " + how;
      if (!in_root && !name.empty()) {
        if (!dir.empty() && dir != ".") {
          bool clash = false;
          for (const ReportValidation& other : r_.validations)
            clash = clash || other.label == v.label;
          if (clash || how.empty()) v.label += " (" + dir + ")";
        }
      }
    }
    for (const ReportValidation& other : r_.validations) {
      if (other.label == v.label) v.label += fmt::format(" #{}", r_.validations.size() + 1);
    }
    r_.validations.push_back(std::move(v));
  }

  void DiscoverValidations() {
    struct Found {
      std::string dir, mode, metrics, predictions;
    };
    std::vector<Found> found;
    for (const auto& [path, j] : json_files_) {
      const fs::path relative = fs::path(path).lexically_relative(o_.run_dir);
      const std::string name = relative.filename().string();
      // metrics.json or metrics_<name>.json, with predictions[_<name>].csv beside it.
      if (!StartsWith(name, "metrics") || !EndsWith(name, ".json")) continue;
      const std::string suffix = name.substr(7, name.size() - 7 - 5);
      if (!suffix.empty() && suffix[0] != '_') continue;
      if (!j.is_object() || !j.contains("mape_pct")) continue;
      const std::string dir = relative.parent_path().generic_string();
      const std::string predictions =
          JoinPath(o_.run_dir, JoinPath(dir, "predictions" + suffix + ".csv"));
      if (!IsFile(predictions)) {
        r_.notes.push_back(
            fmt::format("{}: no predictions{}.csv beside it; not shown", path, suffix));
        continue;
      }
      found.push_back({dir, suffix.empty() ? "" : suffix.substr(1), path, predictions});
    }
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
      if (a.dir != b.dir) {
        if (a.dir.empty() != b.dir.empty()) return a.dir.empty();
        return a.dir < b.dir;
      }
      if (ModeRank(a.mode) != ModeRank(b.mode)) return ModeRank(a.mode) < ModeRank(b.mode);
      return a.mode < b.mode;
    });
    for (const Found& f : found)
      AddValidation(f.predictions, f.metrics, f.mode, "", f.dir.empty(), false);
    for (const std::string& text : o_.predictions) {
      const LabelledPath lp = ParseLabelledPath(text);
      const std::string name = fs::path(lp.path).filename().string();
      std::string mode = fs::path(lp.path).stem().string();
      if (StartsWith(mode, "predictions_")) mode = mode.substr(12);
      const std::string metrics =
          JoinPath(fs::path(lp.path).parent_path().string(), "metrics_" + mode + ".json");
      std::string label = lp.label;
      if (label.empty()) {
        const std::string parent = fs::path(lp.path).parent_path().filename().string();
        label = parent.empty() ? mode : parent + ": " + mode;
      }
      AddValidation(lp.path, StartsWith(name, "predictions_") && IsFile(metrics) ? metrics : "",
                    mode, label, false, true);
    }
  }

  void ChoosePrimaryModel() {
    for (size_t i = 0; i < r_.models.size() && r_.primary_model < 0; ++i) {
      if (!o_.run_dir.empty() && r_.models[i].path == JoinPath(o_.run_dir, "model.json")) {
        r_.primary_model = static_cast<int>(i);
      }
    }
    for (size_t i = 0; i < r_.models.size() && r_.primary_model < 0; ++i) {
      if (r_.models[i].model.method == "dvfs") r_.primary_model = static_cast<int>(i);
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

  // wattcal-predict --capture's table in the run folder, and its breakdown beside it.
  void CollectApps() {
    if (o_.run_dir.empty()) return;
    const std::string path = (fs::path(o_.run_dir) / "apps_predictions.csv").string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || !IsAppPredictionsCsv(path)) return;
    const std::string breakdown = (fs::path(o_.run_dir) / "apps_breakdown.csv").string();
    const bool with_breakdown = fs::is_regular_file(breakdown, ec);
    r_.apps = ReadReportApps(path, with_breakdown ? breakdown : "");
    r_.has_apps = true;
    UseInput(path);
    if (with_breakdown) UseInput(breakdown);
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
    UseInput(activity);
    r_.breakdown = ComputeBreakdownChart(m.model, corpus);
    r_.breakdown.limit_w = m.model.power_limit_w;
    if (r_.breakdown.bars.size() > kMaxBreakdownBars) {
      r_.notes.push_back(fmt::format("breakdown: the {} of {} benchmarks with the largest predicted power are "
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
      for (const auto& [b, p] : pairs) most_rows[b] = std::max(most_rows[b], static_cast<int>(p.size()));
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

  std::string UniqueStem(const std::string& stem) {
    std::string candidate = stem;
    for (int k = 2; !stems_.insert(candidate).second; ++k)
      candidate = fmt::format("{}_{}", stem, k);
    return candidate;
  }

  void DecideFigures() {
    const std::string prefix = TitlePrefix(r_);
    // Validation.
    if (!r_.validations.empty()) {
      ReportFigure f;
      f.kind = FigureKind::kErrorCdf;
      f.stem = UniqueStem("error_cdf");
      f.section = "validation";
      f.title = prefix + "cumulative distribution of the absolute error";
      f.caption =
          "Fraction of held-out points whose absolute percentage error is at most x, one "
          "curve per validation (TPDS'19 Figs. 8b, 10C-D); the key gives each one's n "
          "and MAPE.";
      for (const ReportValidation& v : r_.validations) f.inputs.push_back(v.predictions_path);
      r_.figures.push_back(f);
    }
    for (size_t i = 0; i < r_.validations.size(); ++i) {
      const ReportValidation& v = r_.validations[i];
      ReportFigure f;
      f.kind = FigureKind::kScatter;
      f.index = static_cast<int>(i);
      // scatter_<folder>_<name> after the validation's files, or after its label.
      std::string stem = "scatter_" + SafeStem(v.label);
      if (!v.extra && !o_.run_dir.empty()) {
        const std::string dir = fs::path(v.predictions_path)
                                    .parent_path()
                                    .lexically_relative(o_.run_dir)
                                    .generic_string();
        std::string key = dir == "." ? "" : dir;
        if (!v.name.empty()) key += (key.empty() ? "" : "_") + v.name;
        if (!key.empty()) stem = "scatter_" + SafeStem(key);
      }
      f.stem = UniqueStem(stem);
      f.section = "validation";
      f.title = v.title.empty() ? prefix + v.label : v.title;
      f.caption = fmt::format(
          "Measured against predicted power, {} ({}), with y = x and the "
          "±10% band; MAPE with its confidence interval and Pearson r in the "
          "key.",
          v.label, v.predictions_path);
      f.inputs = {v.predictions_path};
      if (!v.metrics_path.empty()) f.inputs.push_back(v.metrics_path);
      r_.figures.push_back(f);
      // Its per-workload error, beside the table of the same numbers in the index.
      ReportFigure w = f;
      w.kind = FigureKind::kWorkloadErrors;
      w.stem = UniqueStem("workload_errors" + stem.substr(std::string("scatter").size()));
      w.section = "workload_errors";
      w.title = f.title + ": error per workload";
      w.caption = fmt::format(
          "Signed error of the prediction per held-out workload, {} ({}): (predicted − "
          "measured) / measured in %, averaged over the workload's points, the largest in "
          "absolute value at the top; the table below gives the same numbers.",
          v.label, v.predictions_path);
      w.inputs = {v.predictions_path};
      r_.figures.push_back(w);
    }
    // Benchmarks over the V-F pairs.
    for (size_t i = 0; i < r_.vf_benchmarks.size(); ++i) {
      const std::string& b = r_.vf_benchmarks[i];
      ReportFigure f;
      f.kind = FigureKind::kBenchmarkVf;
      f.name = b;
      f.stem = UniqueStem("vf_" + SafeStem(b));
      f.section = "benchmarks";
      f.title = prefix + b + " over the V-F pairs";
      std::string why;
      if (o_.benchmarks.empty() && !vf_ranking_label_.empty()) {
        const size_t n = r_.vf_benchmarks.size();
        why = i == 0 && n > 1       ? " (lowest MAPE"
              : i + 1 == n && n > 1 ? " (highest MAPE"
              : n == 3 || n == 1    ? " (median MAPE"
                                    : " (intermediate MAPE";
        why += " of " + vf_ranking_label_ + ")";
      }
      f.caption = fmt::format(
          "{}{}: measured power (points) and predicted power (lines, one dash per validation) "
          "against the core frequency, one colour per memory frequency (TPDS'19 Figs. 9, 10A-B).",
          b, why);
      for (int v : VfValidations())
        f.inputs.push_back(r_.validations[static_cast<size_t>(v)].predictions_path);
      r_.figures.push_back(f);
    }
    // Models.
    bool any_levels = false;
    for (const ReportModel& m : r_.models) {
      for (const auto& levels : m.model.freq_levels_mhz)
        any_levels = any_levels || levels.size() >= 2;
    }
    if (any_levels) {
      ReportFigure f;
      f.kind = FigureKind::kVoltage;
      f.stem = UniqueStem("voltage_vs_frequency");
      f.section = "models";
      f.title = prefix + "estimated voltage against frequency";
      f.caption =
          "Voltage of each domain, relative to its voltage at the default frequency "
          "(dotted line), as each model estimated it together with its coefficients "
          "(TPDS'19 Eqs. 4-6): the joint solution beside gpmTOOL's alternating one when "
          "both are present. Fixed-frequency models have one level and draw nothing.";
      for (const ReportModel& m : r_.models) f.inputs.push_back(m.path);
      r_.figures.push_back(f);
    } else if (!r_.models.empty()) {
      r_.notes.push_back("no model has two or more frequency levels: no voltage figure");
    }
    if (r_.has_breakdown) {
      const ReportModel& m = r_.models[static_cast<size_t>(r_.breakdown_model)];
      ReportFigure f;
      f.kind = FigureKind::kBreakdown;
      f.stem = UniqueStem("breakdown_default_pair");
      f.section = "breakdown";
      f.title = prefix + "predicted power by component at " + r_.breakdown.pair_label;
      f.caption = fmt::format(
          "Predicted power of each benchmark of {} at the default pair ({}) split into the "
          "model's terms (TPDS'19 Fig. 11, AccelWattch Figs. 8-9), with {} model {}; the last "
          "bar is the average over the benchmarks; diamonds mark the measured power.",
          r_.breakdown_activity, r_.breakdown.pair_label, m.label, m.path);
      f.inputs = {m.path, r_.breakdown_activity};
      r_.figures.push_back(f);
    }
    if (r_.has_apps && !r_.apps.chart.bars.empty()) {
      ReportFigure f;
      f.kind = FigureKind::kApps;
      f.stem = UniqueStem("apps_breakdown");
      f.section = "apps";
      f.title = prefix + "applications: predicted power by component at " + r_.apps.chart.pair_label;
      f.caption = fmt::format(
          "Each application's power predicted from its counters alone (wattcal-predict --capture), split "
          "into the model's terms (TPDS'19 §4.5); the last bar is their mean{}.",
          r_.apps.measured() > 0 ? "; diamonds mark the measured power where the capture had a power log" : "");
      f.inputs = {r_.apps.path, r_.apps.breakdown_path};
      r_.figures.push_back(f);
    }
    // Training utilisations.
    for (size_t i = 0; i < r_.corpora.size(); ++i) {
      const ReportCorpus& c = r_.corpora[i];
      const std::string corpus_stem = SafeStem(fs::path(c.path).stem().string());
      ReportFigure bench;
      bench.kind = FigureKind::kBenchmarkCorrelation;
      bench.index = static_cast<int>(i);
      bench.stem = UniqueStem("util_corr_benchmarks_" + corpus_stem);
      bench.section = "collinearity";
      bench.title = prefix + "correlation of the benchmarks' utilisations";
      bench.caption = fmt::format(
          "Pearson r between the utilisation vectors of every pair of the {} benchmarks of {} "
          "(TPDS'19 Fig. 3b); median |r| between distinct benchmarks {:.2f}.",
          c.collinearity.benchmarks.size(), c.path, c.collinearity.median_abs_benchmark_r);
      int shortened = 0;
      HeatmapBenchmarkLabels(c.collinearity.benchmarks, &shortened);
      if (shortened > 0) {
        bench.caption += fmt::format(
            " Every benchmark is named on both axes in corpus order; the {} names longer than "
            "{} characters are shortened in the middle (…).",
            shortened, kHeatmapLabelChars);
      }
      bench.inputs = {c.path};
      if (o_.benchmark_heatmap) r_.figures.push_back(bench);
      ReportFigure comp = bench;
      comp.kind = FigureKind::kComponentCorrelation;
      comp.stem = UniqueStem("util_corr_components_" + corpus_stem);
      comp.title = prefix + "correlation of the components' utilisations";
      comp.caption = fmt::format(
          "Pearson r between the utilisations of every pair of components across the benchmarks "
          "of {} (TPDS'19 Fig. 13a); outlined cells reach |r| >= {:g}.",
          c.path, o_.collinearity.pair_threshold_abs_r);
      r_.figures.push_back(comp);
    }
    if (r_.has_constant) {
      ReportFigure f;
      f.kind = FigureKind::kConstant;
      f.stem = UniqueStem("constant_power_fits");
      f.section = "constant";
      f.title = prefix + "constant power from the V-F sweeps";
      f.caption = fmt::format(
          "P = beta f^3 + tau f + P_const fitted to each microbenchmark's sweep with one shared "
          "P_const (AccelWattch Eq. 3, Fig. 2), from {}; {} of {} curves drawn, solid over the "
          "measured clocks and dotted down to f = 0, where every curve meets P_const.",
          r_.constant_path, r_.constant_drawn.curves.size(), r_.constant.curves.size());
      f.inputs = {r_.constant_path};
      f.inputs.insert(f.inputs.end(), constant_inputs_.begin(), constant_inputs_.end());
      r_.figures.push_back(f);
    }
    DecideCompareFigures(prefix);
    DecideAccelWattchFigures(prefix);
  }

  // The AccelWattch figures' titles carry the run's title only when both fit across the figure.
  static std::string ShortTitle(const std::string& prefix, const std::string& title) {
    constexpr size_t kMaxTitleChars = 66;
    return prefix.size() + title.size() <= kMaxTitleChars ? prefix + title : title;
  }

  void DecideAccelWattchFigures(const std::string& prefix) {
    for (size_t i = 0; i < r_.accelwattch_breakdowns.size(); ++i) {
      const ReportAccelWattchBreakdown& b = r_.accelwattch_breakdowns[i];
      std::set<std::string> benchmarks, kernels;
      for (const AccelWattchBreakdownRow& row : b.table.rows) {
        benchmarks.insert(row.benchmark);
        kernels.insert(row.kernel);
      }
      ReportFigure clocks;
      clocks.kind = FigureKind::kAccelWattchClocks;
      clocks.index = static_cast<int>(i);
      clocks.stem = UniqueStem("accelwattch_power_vs_clock");
      clocks.section = "accelwattch_breakdown";
      clocks.title = ShortTitle(prefix, "Eq. 12's power split against the core clock");
      clocks.caption = fmt::format(
          "Predicted power of the {} kernels ({} benchmarks) of {}, averaged at each core clock "
          "they were evaluated at, split into Eq. 12's terms (AccelWattch MICRO'21): constant "
          "power (Eq. 3), static power of the active SMs (Eqs. 4-5, 9) and of the idle SMs "
          "(Eqs. 6-8) in greys, and the dynamic power of every component (x_i times its "
          "energy per event times its event rate) on top. With V ~ f, static and idle power "
          "grow as f and voltage-scaled dynamic power as f^3.",
          kernels.size(), benchmarks.size(), b.path);
      clocks.inputs = {b.path};
      r_.figures.push_back(clocks);
      ReportFigure components = clocks;
      components.kind = FigureKind::kAccelWattchComponents;
      components.stem = UniqueStem("accelwattch_dynamic_by_component");
      components.title = ShortTitle(
          prefix, fmt::format("Dynamic power by component at {:g} MHz", b.reference_f_core_mhz));
      const size_t drawn = b.component_chart.bars.size();
      components.caption = fmt::format(
          "Dynamic power of each component at {:g} MHz ({}), the mean over each benchmark's "
          "kernels, {} (in increasing dynamic power); the last bar is the mean over every kernel "
          "evaluated at that clock. Components without dynamic power there are left out. From {}.",
          b.reference_f_core_mhz, b.reference_why,
          drawn == b.benchmarks_at_reference
              ? fmt::format("for all {} benchmarks", drawn)
              : fmt::format("for {} of the {} benchmarks, spread over the range of dynamic power",
                            drawn, b.benchmarks_at_reference),
          b.path);
      r_.figures.push_back(components);
    }
  }

  void DecideCompareFigures(const std::string& prefix) {
    for (size_t i = 0; i < r_.comparisons.size(); ++i) {
      const RelativePowerChart& c = r_.comparisons[i];
      ReportFigure f;
      f.kind = FigureKind::kRelative;
      f.index = static_cast<int>(i);
      f.stem = UniqueStem("relative_power_" + SafeStem(c.gpu_b + "_vs_" + c.gpu_a));
      f.section = "compare";
      f.title = prefix + c.gpu_b + " relative to " + c.gpu_a;
      f.caption = fmt::format(
          "Power of {} relative to {} per workload, (P_B - P_A) / P_A, as estimated and as "
          "measured, and the averages (AccelWattch Fig. 12), from {}.",
          c.gpu_b, c.gpu_a, r_.compare_paths[i]);
      f.inputs = {r_.compare_paths[i]};
      r_.figures.push_back(f);
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
        breakdowns.push_back(
            {{"path", b.path}, {"reference_f_core_mhz", b.reference_f_core_mhz}});
      }
      j["accelwattch_breakdowns"] = breakdowns;
    }
    return j;
  }

  const ReportOptions& o_;
  RunReport r_;
  std::vector<std::string> files_;
  std::set<std::string> stems_;
  std::string vf_ranking_label_;
  std::vector<std::pair<std::string, nlohmann::json>> json_files_;  // (path, content)
  std::vector<std::string> constant_inputs_;  // the sweep files behind the constant figure
};

// The metrics options a validation was computed with, as far as its JSON tells.
MetricsOptions MetricsOptionsOf(const ReportValidation& v) {
  MetricsOptions options;
  const double level = JsonNumber(v.metrics, "confidence_level");
  if (std::isfinite(level) && level > 0.0 && level < 1.0) options.confidence_level = level;
  return options;
}

void DrawFigure(const RunReport& r, const ReportFigure& f, const std::string& png,
                const std::string& svg) {
  switch (f.kind) {
    case FigureKind::kErrorCdf: {
      std::vector<std::pair<std::string, std::vector<double>>> series;
      for (const ReportValidation& v : r.validations) {
        std::vector<double> ape;
        for (const PredictionRow& row : v.rows) ape.push_back(std::abs(row.error_pct()));
        series.emplace_back(v.label, std::move(ape));
      }
      WriteErrorCdfPlot(series, f.title, png, svg);
      return;
    }
    case FigureKind::kScatter: {
      const ReportValidation& v = r.validations[static_cast<size_t>(f.index)];
      const MetricsOptions options = MetricsOptionsOf(v);
      ValidationMetrics m = ComputeValidationMetrics(v.rows, options);
      // The interval as the validation computed it (its method may differ from the default).
      const std::string ci = PercentKeyLabel(100.0 * options.confidence_level);
      const double low = JsonNumber(v.metrics, "mape_ci" + ci + "_low_pct");
      const double high = JsonNumber(v.metrics, "mape_ci" + ci + "_high_pct");
      if (std::isfinite(low) && std::isfinite(high)) {
        m.overall.mape_ci_low_pct = low;
        m.overall.mape_ci_high_pct = high;
      }
      WriteScatterPlot(v.rows, m, f.title, png, svg, options);
      return;
    }
    case FigureKind::kWorkloadErrors: {
      const ReportValidation& v = r.validations[static_cast<size_t>(f.index)];
      WriteWorkloadErrorPlot(ComputeWorkloadErrors(v.rows), f.title, png, svg);
      return;
    }
    case FigureKind::kBenchmarkVf: {
      std::vector<BenchmarkSeries> series;
      for (int i : VfValidationIndices(r.validations)) {
        const ReportValidation& v = r.validations[static_cast<size_t>(i)];
        BenchmarkSeries s;
        s.label = v.label;
        for (const PredictionRow& row : v.rows) {
          if (row.benchmark == f.name) s.rows.push_back(row);
        }
        if (s.rows.size() >= 2) series.push_back(std::move(s));
      }
      WriteBenchmarkVfPlot(f.name, series, f.title, png, svg);
      return;
    }
    case FigureKind::kVoltage: {
      std::vector<std::pair<std::string, PowerModel>> models;
      for (const ReportModel& m : r.models) models.emplace_back(m.label, m.model);
      WriteVoltagePlot(models, f.title, png, svg);
      return;
    }
    case FigureKind::kBreakdown:
      WriteBreakdownPlot(r.breakdown, f.title, png, svg);
      return;
    case FigureKind::kBenchmarkCorrelation:
      WriteBenchmarkCorrelationHeatmap(r.corpora[static_cast<size_t>(f.index)].collinearity,
                                       f.title, png, svg);
      return;
    case FigureKind::kComponentCorrelation: {
      const double threshold = r.options.value("collinearity_pair_threshold_abs_r", 0.95);
      WriteComponentCorrelationHeatmap(r.corpora[static_cast<size_t>(f.index)].collinearity,
                                       threshold, f.title, png, svg);
      return;
    }
    case FigureKind::kConstant:
      WriteConstantPowerPlot(r.constant_drawn, f.title, png, svg);
      return;
    case FigureKind::kRelative:
      WriteRelativePowerPlot(r.comparisons[static_cast<size_t>(f.index)], f.title, png, svg);
      return;
    case FigureKind::kAccelWattchClocks:
      WriteBreakdownPlot(r.accelwattch_breakdowns[static_cast<size_t>(f.index)].clock_chart,
                         f.title, png, svg);
      return;
    case FigureKind::kApps:
      WriteBreakdownPlot(r.apps.chart, f.title, png, svg);
      return;
    case FigureKind::kAccelWattchComponents:
      WriteBreakdownPlot(r.accelwattch_breakdowns[static_cast<size_t>(f.index)].component_chart,
                         f.title, png, svg);
      return;
  }
}

}  // namespace

RunReport CollectRunReport(const ReportOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid report options: " + error);
  if (options.run_dir.empty() && options.out_dir.empty()) {
    throw OptionError("give a run folder (--run-dir) or an output folder (--out-dir)");
  }
  return Collector(options).Run();
}

void StageRunReport(const RunReport& report, const ReportOptions& options, OutputSet* outputs) {
  const std::string out_dir = options.EffectiveOutDir();
  if (options.figures) {
    Progress progress("drawing figures", static_cast<int64_t>(report.figures.size()));
    for (const ReportFigure& f : report.figures) {
      const std::string png = JoinPath(out_dir, "figures/" + f.stem + ".png");
      const std::string svg = JoinPath(out_dir, "figures/" + f.stem + ".svg");
      DrawFigure(report, f, outputs->Stage(png), outputs->Stage(svg));
      nlohmann::json figure_options = report.options;
      figure_options["figure"] = f.stem;
      outputs->StageProvenance(png, "report", f.inputs, figure_options);
      outputs->StageProvenance(svg, "report", f.inputs, figure_options);
      progress.Tick();
    }
    progress.Finish();
  }
  const std::string html = JoinPath(out_dir, "index.html");
  const std::string md = JoinPath(out_dir, "index.md");
  outputs->StageText(html, RunReportHtml(report, options));
  outputs->StageProvenance(html, "report", report.inputs, report.options);
  outputs->StageText(md, RunReportMarkdown(report, options));
  outputs->StageProvenance(md, "report", report.inputs, report.options);
}

}  // namespace wattcal
