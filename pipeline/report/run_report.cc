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
#include "report/internal/run_collector.h"
#include "report/internal/run_report_internal.h"
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

namespace report_internal {

bool IsFile(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

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

}  // namespace report_internal

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

namespace report_internal {

RunReport Collector::Run() {
  r_.title = o_.title;
  if (r_.title.empty()) {
    const fs::path dir = fs::path(o_.run_dir.empty() ? o_.out_dir : o_.run_dir).lexically_normal();
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

void Collector::UseInput(const std::string& path) {
  if (std::find(r_.inputs.begin(), r_.inputs.end(), path) == r_.inputs.end()) {
    r_.inputs.push_back(path);
  }
}

void Collector::AddModel(const std::string& label, const std::string& path) {
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
    const std::string shown = o_.run_dir.empty() || !StartsWith(path, JoinPath(o_.run_dir, ""))
                                  ? fs::path(path).filename().string()
                                  : fs::path(path).lexically_relative(o_.run_dir).generic_string();
    m.label = fmt::format("{} ({})", ModelKind(m.model), shown);
  }
  UseInput(path);
  r_.models.push_back(std::move(m));
}

void Collector::ReadJsonFiles() {
  for (const std::string& path : files_) {
    if (!EndsWith(ToLower(path), ".json")) continue;
    try {
      json_files_.emplace_back(path, ReadJsonFile(path, "file for reading"));
    } catch (const InputError& e) {
      r_.notes.push_back(std::string(e.what()) + "; left out");
    }
  }
}

void Collector::DiscoverModels() {
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

std::string Collector::RunRelative(const std::string& path) const {
  return o_.run_dir.empty() || !StartsWith(path, JoinPath(o_.run_dir, ""))
             ? fs::path(path).filename().string()
             : fs::path(path).lexically_relative(o_.run_dir).generic_string();
}

void Collector::ChoosePrimaryModel() {
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

void Collector::ChooseBenchmarks() {
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

nlohmann::json Collector::OptionsJson() const {
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

}  // namespace report_internal

RunReport CollectRunReport(const ReportOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid report options: " + error);
  if (options.run_dir.empty() && options.out_dir.empty()) {
    throw OptionError("give a run folder (--run-dir) or an output folder (--out-dir)");
  }
  return report_internal::Collector(options).Run();
}

}  // namespace wattcal
