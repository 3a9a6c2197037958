#include "perf/dvfs_choice.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "perf/perf_csv.h"
#include "util/errors.h"
#include "util/option_rule.h"

namespace wattcal {

const char* DvfsObjectiveName(DvfsObjective objective) {
  switch (objective) {
    case DvfsObjective::kEnergy: return "energy";
    case DvfsObjective::kEdp: return "edp";
    case DvfsObjective::kEd2p: return "ed2p";
  }
  return "?";
}

const char* PowerModeName(PowerMode mode) { return mode == PowerMode::kDvfs ? "dvfs" : "scaling"; }

bool ParsePowerMode(const std::string& text, PowerMode* mode) {
  if (text == "dvfs")
    *mode = PowerMode::kDvfs;
  else if (text == "scaling")
    *mode = PowerMode::kScaling;
  else
    return false;
  return true;
}

const char* ActivityScalingName(ActivityScaling scaling) {
  return scaling == ActivityScaling::kEvents ? "events" : "fixed";
}

bool ParseActivityScaling(const std::string& text, ActivityScaling* scaling) {
  if (text == "events")
    *scaling = ActivityScaling::kEvents;
  else if (text == "fixed")
    *scaling = ActivityScaling::kFixed;
  else
    return false;
  return true;
}

bool DvfsOptions::Check(std::string* error) const {
  if (std::isnan(max_slowdown_pct) || std::isinf(max_slowdown_pct))
    return RejectOption(error, "max_slowdown_pct = {} must be finite (< 0: no budget)",
                        max_slowdown_pct);
  std::set<std::string> seen;
  for (const std::string& m : perf_models) {
    if (m.empty()) return RejectOption(error, "perf_models has an empty name");
    if (!seen.insert(m).second) return RejectOption(error, "perf_models lists '{}' twice", m);
  }
  return true;
}

double ObjectiveValue(DvfsObjective objective, const DvfsPoint& p) {
  switch (objective) {
    case DvfsObjective::kEnergy: return p.energy_j;
    case DvfsObjective::kEdp: return p.edp_js;
    case DvfsObjective::kEd2p: return p.ed2p_js2;
  }
  return p.energy_j;
}

namespace {

bool SameFrequency(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

// Index of the best candidate under the budget: lowest objective, ties to the higher frequency.
int Best(const std::vector<DvfsPoint>& points, const DvfsOptions& options) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(points.size()); ++i) {
    const DvfsPoint& p = points[static_cast<size_t>(i)];
    if (options.max_slowdown_pct >= 0.0 && p.slowdown_pct > options.max_slowdown_pct + 1e-9)
      continue;
    if (best < 0 || ObjectiveValue(options.objective, p) <=
                        ObjectiveValue(options.objective, points[static_cast<size_t>(best)])) {
      best = i;
    }
  }
  return best;
}

// Power, energy and friends of every candidate from run times.
struct PowerContext {
  const PowerModel* model;
  PowerMode mode;
  ActivityScaling scaling;
  std::vector<int> component_domain;
  Eigen::VectorXd util0;  // at the default pair
  double f0_mhz;
  double f_mem_mhz;
  double measured_w0;  // scaling mode

  double Power(double f_mhz, double time_s, double time0_s) const {
    Eigen::VectorXd u = util0;
    if (scaling == ActivityScaling::kEvents) {
      for (int c = 0; c < u.size(); ++c) {
        const double factor = component_domain[static_cast<size_t>(c)] == 0
                                  ? (time0_s * f0_mhz) / (time_s * f_mhz)
                                  : time0_s / time_s;
        u[c] *= factor;
      }
    }
    std::vector<double> freqs = {f_mhz};
    if (model->layout.num_domains() > 1) freqs.push_back(f_mem_mhz);
    const double p = model->Predict(u.data(), freqs.data());
    if (mode == PowerMode::kDvfs) return p;
    std::vector<double> freqs0 = {f0_mhz};
    if (model->layout.num_domains() > 1) freqs0.push_back(f_mem_mhz);
    const double p0 = model->Predict(util0.data(), freqs0.data());
    return p / p0 * measured_w0;
  }

  std::vector<DvfsPoint> Points(const std::vector<double>& freqs, const std::vector<double>& times,
                                double time0_s) const {
    std::vector<DvfsPoint> points;
    for (size_t i = 0; i < freqs.size(); ++i) {
      DvfsPoint p;
      p.f_core_mhz = freqs[i];
      p.time_s = times[i];
      p.power_w = Power(freqs[i], times[i], time0_s);
      p.energy_j = p.power_w * p.time_s;
      p.edp_js = p.energy_j * p.time_s;
      p.ed2p_js2 = p.edp_js * p.time_s;
      p.slowdown_pct = 100.0 * (p.time_s / time0_s - 1.0);
      points.push_back(p);
    }
    return points;
  }
};

// Refuses a model that cannot choose this activity's pairs: not a DVFS model, another layout
// (activity files without frequencies do not know the default pair, which the model's gives),
// or the scaling mode without the measured power at the default pair.
void CheckModelFitsActivity(const PowerModel& model, const std::string& model_path,
                            const Corpus& activity, const DvfsOptions& options) {
  if (model.method != FitMethod::kDvfs) {
    throw InputError(model_path, 0, "method",
                     "a '" + std::string(FitMethodName(model.method)) +
                         "' model predicts one V-F pair only; choosing a pair "
                         "needs a DVFS model (wattcal-calibrate --method dvfs)");
  }
  Layout relaxed = activity.layout;
  for (int d = 0; d < relaxed.num_domains() && d < model.layout.num_domains(); ++d) {
    if (relaxed.domains[d].default_freq_mhz == 0.0) {
      relaxed.domains[d].default_freq_mhz = model.layout.domains[d].default_freq_mhz;
    }
  }
  const std::string mismatch = model.layout.Mismatch(relaxed);
  if (!mismatch.empty()) {
    throw InputError(activity.path, activity.components_line, "component names",
                     model.LayoutMismatchMessage(mismatch));
  }
  if (options.power_mode == PowerMode::kScaling && !activity.has_power()) {
    throw InputError(activity.path, activity.components_line, "power_w",
                     "power mode 'scaling' (TPDS Eq. 10) needs the measured power at the default "
                     "pair; this activity file has no power column");
  }
}

// The predicted run times: the kernels in order of appearance with their first lines, the
// run-time models to choose with (the options', else the file's: the known ones in their own
// order, then the others as they appear), and (kernel, model) -> frequency -> time.
struct PredictedTimes {
  std::vector<std::string> kernels;
  std::map<std::string, int64_t> kernel_line;
  std::vector<std::string> models;
  std::map<std::pair<std::string, std::string>, std::map<double, double>> by_frequency;
};

PredictedTimes OrganiseTimes(const std::vector<TimePrediction>& times,
                             const std::string& times_path, const DvfsOptions& options) {
  PredictedTimes p;
  std::vector<std::string> models_seen;
  for (const TimePrediction& t : times) {
    if (p.kernel_line.emplace(t.kernel, t.line).second) p.kernels.push_back(t.kernel);
    if (std::find(models_seen.begin(), models_seen.end(), t.model) == models_seen.end()) {
      models_seen.push_back(t.model);
    }
  }
  std::vector<std::string>& models = p.models;
  for (PerfModelKind m : AllPerfModels()) {
    if (std::find(models_seen.begin(), models_seen.end(), PerfModelName(m)) != models_seen.end()) {
      models.push_back(PerfModelName(m));
    }
  }
  for (const std::string& m : models_seen) {
    if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  }
  if (!options.perf_models.empty()) {
    for (const std::string& m : options.perf_models) {
      if (std::find(models.begin(), models.end(), m) == models.end()) {
        std::string list;
        for (const std::string& s : models) list += (list.empty() ? "" : ", ") + s;
        throw InputError(
            times_path, 0, "model",
            "no predictions of run-time model '" + m + "' (the file has " + list + ")");
      }
    }
    models = options.perf_models;
  }
  for (const TimePrediction& t : times)
    p.by_frequency[{t.kernel, t.model}][t.target_mhz] = t.predicted_time_s;
  return p;
}

// The kernel's one activity row at the default pair (any row when the activity has no clocks);
// a second one, or none, is refused.
int DefaultActivityRow(const Corpus& activity, const PowerModel& model,
                       const std::vector<double>& defaults, const std::string& kernel,
                       const std::string& times_path, int64_t kernel_line) {
  int row = -1;
  for (int r = 0; r < activity.rows(); ++r) {
    if (activity.benchmark[static_cast<size_t>(r)] != kernel) continue;
    if (activity.has_freq()) {
      bool at_default = true;
      for (int d = 0; d < model.layout.num_domains() && d < activity.freq_mhz.cols(); ++d) {
        at_default =
            at_default && SameFrequency(activity.freq_mhz(r, d), defaults[static_cast<size_t>(d)]);
      }
      if (!at_default) continue;
    }
    if (row >= 0) {
      throw InputError(activity.path, activity.line[static_cast<size_t>(r)], "benchmark",
                       fmt::format("kernel '{}' has a second activity row at the default pair "
                                   "(the first is on line {})",
                                   kernel, activity.line[static_cast<size_t>(row)]));
    }
    row = r;
  }
  if (row < 0) {
    const double f0 = defaults[0];
    const double f_mem = model.layout.num_domains() > 1 ? defaults[1] : 0.0;
    throw InputError(
        times_path, kernel_line, "kernel",
        fmt::format("no activity for kernel '{}' at the default pair ({}) in {}", kernel,
                    model.layout.num_domains() > 1 ? fmt::format("{}/{} MHz", f0, f_mem)
                                                   : fmt::format("{} MHz", f0),
                    activity.path));
  }
  return row;
}

// Every kernel of the activity has predicted run times: one without would be left out of the
// choices without a word (the first such row is refused, naming the times file).
void CheckEveryKernelTimed(const Corpus& activity, const PredictedTimes& predicted,
                           const std::string& times_path) {
  for (size_t r = 0; r < activity.benchmark.size(); ++r) {
    const std::string& kernel = activity.benchmark[r];
    if (predicted.kernel_line.count(kernel) > 0) continue;
    throw InputError(activity.path, activity.line[r], "benchmark",
                     fmt::format("kernel '{}' has no predicted run time in {}: every kernel of the "
                                 "activity needs its times (wattcal-perf --counters with it), or "
                                 "leave it out of the activity",
                                 kernel, times_path));
  }
}

// The kernel's actual run time at each of `freqs`; a frequency without one is refused.
std::vector<double> TrueTimes(const std::map<std::string, std::map<double, double>>& truth,
                              const std::string& kernel, const std::vector<double>& freqs,
                              const std::string& actual_path) {
  const auto tr = truth.find(kernel);
  std::vector<double> true_times;
  for (double f : freqs) {
    double value = 0.0;
    bool found = false;
    if (tr != truth.end()) {
      for (const auto& [tf, tt] : tr->second) {
        if (SameFrequency(tf, f)) {
          value = tt;
          found = true;
        }
      }
    }
    if (!found) {
      throw InputError(actual_path, 0, "target_mhz",
                       fmt::format("no actual time for kernel '{}' at {} MHz", kernel, f));
    }
    true_times.push_back(value);
  }
  return true_times;
}

}  // namespace

std::vector<DvfsChoice> ChooseOperatingPoints(const PowerModel& model,
                                              const std::string& model_path, const Corpus& activity,
                                              const std::vector<TimePrediction>& times,
                                              const std::string& times_path,
                                              const std::vector<ActualTime>& actual,
                                              const std::string& actual_path,
                                              const DvfsOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid DVFS options: " + error);
  CheckModelFitsActivity(model, model_path, activity, options);
  const std::vector<double> defaults = model.DefaultFrequencies();
  const double f0 = defaults[0];
  const double f_mem = model.layout.num_domains() > 1 ? defaults[1] : 0.0;
  PredictedTimes predicted = OrganiseTimes(times, times_path, options);
  CheckEveryKernelTimed(activity, predicted, times_path);
  std::map<std::string, std::map<double, double>> truth;
  for (const ActualTime& a : actual) truth[a.kernel][a.target_mhz] = a.actual_time_s;

  PowerContext power;
  power.model = &model;
  power.mode = options.power_mode;
  power.scaling = options.activity_scaling;
  power.component_domain = model.layout.ComponentDomains();
  power.f0_mhz = f0;
  power.f_mem_mhz = f_mem;

  std::vector<DvfsChoice> choices;
  for (const std::string& kernel : predicted.kernels) {
    // The kernel's activity at the default pair.
    const int row = DefaultActivityRow(activity, model, defaults, kernel, times_path,
                                       predicted.kernel_line[kernel]);
    power.util0 = activity.util_frac.row(row).transpose();
    power.measured_w0 = activity.has_power() ? activity.power_w[row] : 0.0;
    if (options.power_mode == PowerMode::kScaling && !(power.measured_w0 > 0.0)) {
      throw InputError(activity.path, activity.line[static_cast<size_t>(row)], "power_w",
                       "the scaling mode needs a measured power > 0 at the default pair");
    }

    for (const std::string& m : predicted.models) {
      const auto it = predicted.by_frequency.find({kernel, m});
      if (it == predicted.by_frequency.end()) {
        throw InputError(
            times_path, predicted.kernel_line[kernel], "model",
            fmt::format("kernel '{}' has no predictions of run-time model '{}'", kernel, m));
      }
      std::vector<double> freqs, pred_times;
      for (double level : model.freq_levels_mhz[0]) {
        for (const auto& [f, t] : it->second) {
          if (SameFrequency(f, level)) {
            freqs.push_back(level);
            pred_times.push_back(t);
          }
        }
      }
      DvfsChoice choice;
      choice.kernel = kernel;
      choice.perf_model = m;
      choice.f_mem_mhz = f_mem;
      for (size_t i = 0; i < freqs.size(); ++i) {
        if (SameFrequency(freqs[i], f0)) choice.default_index = static_cast<int>(i);
      }
      if (choice.default_index < 0) {
        throw InputError(times_path, predicted.kernel_line[kernel], "target_mhz",
                         fmt::format("kernel '{}', model '{}' has no predicted time at the default "
                                     "core frequency {} MHz",
                                     kernel, m, f0));
      }
      choice.predicted =
          power.Points(freqs, pred_times, pred_times[static_cast<size_t>(choice.default_index)]);
      choice.chosen = Best(choice.predicted, options);
      if (!actual.empty()) {
        const std::vector<double> true_times = TrueTimes(truth, kernel, freqs, actual_path);
        choice.has_truth = true;
        choice.truth =
            power.Points(freqs, true_times, true_times[static_cast<size_t>(choice.default_index)]);
        choice.optimum = Best(choice.truth, options);
      }
      choices.push_back(std::move(choice));
    }
  }
  return choices;
}

namespace {

double SavingPct(double at_default, double value) { return 100.0 * (1.0 - value / at_default); }

}  // namespace

std::string DvfsChoicesToCsv(const std::vector<DvfsChoice>& choices, const DvfsOptions& options) {
  const bool truth = !choices.empty() && choices.front().has_truth;
  std::string out =
      "kernel,perf_model,objective,f_core_mhz,f_mem_mhz,predicted_time_s,predicted_power_w,"
      "predicted_energy_j,predicted_edp_js,predicted_ed2p_js2,slowdown_pct,default_f_core_mhz,"
      "default_time_s,default_power_w,default_energy_j,energy_saving_pct,edp_saving_pct,"
      "ed2p_saving_pct";
  if (truth) {
    out +=
        ",true_time_s,true_power_w,true_energy_j,true_edp_js,true_ed2p_js2,true_slowdown_pct,"
        "true_energy_saving_pct,true_edp_saving_pct,true_ed2p_saving_pct,optimum_f_core_mhz,"
        "objective_loss_pct";
  }
  out += "\n";
  for (const DvfsChoice& c : choices) {
    const DvfsPoint& p = c.choice();
    const DvfsPoint& d = c.at_default();
    out += PerfCsvField(c.kernel) + "," + PerfCsvField(c.perf_model) + "," +
           DvfsObjectiveName(options.objective);
    for (double v : {p.f_core_mhz, c.f_mem_mhz, p.time_s, p.power_w, p.energy_j, p.edp_js,
                     p.ed2p_js2, p.slowdown_pct, d.f_core_mhz, d.time_s, d.power_w, d.energy_j,
                     SavingPct(d.energy_j, p.energy_j), SavingPct(d.edp_js, p.edp_js),
                     SavingPct(d.ed2p_js2, p.ed2p_js2)}) {
      out += "," + PerfCsvNumber(v);
    }
    if (truth) {
      const DvfsPoint& t = c.truth[static_cast<size_t>(c.chosen)];
      const DvfsPoint& td = c.truth[static_cast<size_t>(c.default_index)];
      const DvfsPoint& to = c.truth[static_cast<size_t>(c.optimum)];
      const double loss =
          100.0 *
          (ObjectiveValue(options.objective, t) / ObjectiveValue(options.objective, to) - 1.0);
      for (double v : {t.time_s, t.power_w, t.energy_j, t.edp_js, t.ed2p_js2, t.slowdown_pct,
                       SavingPct(td.energy_j, t.energy_j), SavingPct(td.edp_js, t.edp_js),
                       SavingPct(td.ed2p_js2, t.ed2p_js2), to.f_core_mhz, loss}) {
        out += "," + PerfCsvNumber(v);
      }
    }
    out += "\n";
  }
  return out;
}

std::string DvfsCurvesToCsv(const std::vector<DvfsChoice>& choices) {
  const bool truth = !choices.empty() && choices.front().has_truth;
  std::string out =
      "kernel,perf_model,f_core_mhz,f_mem_mhz,predicted_time_s,predicted_power_w,"
      "predicted_energy_j,predicted_edp_js,predicted_ed2p_js2,chosen";
  if (truth) out += ",true_time_s,true_power_w,true_energy_j,true_edp_js,true_ed2p_js2,optimum";
  out += "\n";
  for (const DvfsChoice& c : choices) {
    for (size_t i = 0; i < c.predicted.size(); ++i) {
      const DvfsPoint& p = c.predicted[i];
      out += PerfCsvField(c.kernel) + "," + PerfCsvField(c.perf_model);
      for (double v :
           {p.f_core_mhz, c.f_mem_mhz, p.time_s, p.power_w, p.energy_j, p.edp_js, p.ed2p_js2}) {
        out += "," + PerfCsvNumber(v);
      }
      out += static_cast<int>(i) == c.chosen ? ",1" : ",0";
      if (truth) {
        const DvfsPoint& t = c.truth[i];
        for (double v : {t.time_s, t.power_w, t.energy_j, t.edp_js, t.ed2p_js2}) {
          out += "," + PerfCsvNumber(v);
        }
        out += static_cast<int>(i) == c.optimum ? ",1" : ",0";
      }
      out += "\n";
    }
  }
  return out;
}

std::vector<DvfsModelSummary> SummariseDvfs(const std::vector<DvfsChoice>& choices,
                                            const DvfsOptions& options) {
  std::vector<DvfsModelSummary> summary;
  for (const DvfsChoice& c : choices) {
    auto it = std::find_if(summary.begin(), summary.end(),
                           [&](const DvfsModelSummary& s) { return s.perf_model == c.perf_model; });
    if (it == summary.end()) {
      summary.push_back({});
      it = summary.end() - 1;
      it->perf_model = c.perf_model;
    }
    DvfsModelSummary& s = *it;
    const DvfsPoint& p = c.choice();
    const DvfsPoint& d = c.at_default();
    ++s.kernels;
    s.mean_energy_saving_pct += SavingPct(d.energy_j, p.energy_j);
    s.mean_edp_saving_pct += SavingPct(d.edp_js, p.edp_js);
    s.mean_ed2p_saving_pct += SavingPct(d.ed2p_js2, p.ed2p_js2);
    if (c.has_truth) {
      s.has_truth = true;
      const DvfsPoint& t = c.truth[static_cast<size_t>(c.chosen)];
      const DvfsPoint& td = c.truth[static_cast<size_t>(c.default_index)];
      const DvfsPoint& to = c.truth[static_cast<size_t>(c.optimum)];
      const double loss =
          100.0 *
          (ObjectiveValue(options.objective, t) / ObjectiveValue(options.objective, to) - 1.0);
      s.mean_objective_loss_pct += loss;
      s.max_objective_loss_pct = std::max(s.max_objective_loss_pct, loss);
      if (c.chosen == c.optimum) ++s.optimal_choices;
      s.mean_true_energy_saving_pct += SavingPct(td.energy_j, t.energy_j);
      s.mean_true_edp_saving_pct += SavingPct(td.edp_js, t.edp_js);
      s.mean_true_ed2p_saving_pct += SavingPct(td.ed2p_js2, t.ed2p_js2);
      s.mean_true_slowdown_pct += t.slowdown_pct;
      if (options.max_slowdown_pct >= 0.0 && t.slowdown_pct > options.max_slowdown_pct + 1e-9) {
        ++s.budget_violations;
      }
    }
  }
  for (DvfsModelSummary& s : summary) {
    const double n = static_cast<double>(s.kernels);
    for (double* v :
         {&s.mean_energy_saving_pct, &s.mean_edp_saving_pct, &s.mean_ed2p_saving_pct,
          &s.mean_objective_loss_pct, &s.mean_true_energy_saving_pct, &s.mean_true_edp_saving_pct,
          &s.mean_true_ed2p_saving_pct, &s.mean_true_slowdown_pct}) {
      *v /= n;
    }
  }
  return summary;
}

nlohmann::json DvfsSummaryToJson(const std::vector<DvfsModelSummary>& summary,
                                 const DvfsOptions& options) {
  nlohmann::json j;
  j["objective"] = DvfsObjectiveName(options.objective);
  j["max_slowdown_pct"] = options.max_slowdown_pct;
  j["power_mode"] = PowerModeName(options.power_mode);
  j["activity_scaling"] = ActivityScalingName(options.activity_scaling);
  nlohmann::json models = nlohmann::json::array();
  for (const DvfsModelSummary& s : summary) {
    nlohmann::json m;
    m["perf_model"] = s.perf_model;
    m["kernels"] = s.kernels;
    m["mean_energy_saving_pct"] = s.mean_energy_saving_pct;
    m["mean_edp_saving_pct"] = s.mean_edp_saving_pct;
    m["mean_ed2p_saving_pct"] = s.mean_ed2p_saving_pct;
    if (s.has_truth) {
      m["mean_objective_loss_pct"] = s.mean_objective_loss_pct;
      m["max_objective_loss_pct"] = s.max_objective_loss_pct;
      m["optimal_choices"] = s.optimal_choices;
      m["mean_true_energy_saving_pct"] = s.mean_true_energy_saving_pct;
      m["mean_true_edp_saving_pct"] = s.mean_true_edp_saving_pct;
      m["mean_true_ed2p_saving_pct"] = s.mean_true_ed2p_saving_pct;
      m["mean_true_slowdown_pct"] = s.mean_true_slowdown_pct;
      m["budget_violations"] = s.budget_violations;
    }
    models.push_back(m);
  }
  j["models"] = models;
  return j;
}

std::string FormatDvfsSummary(const std::vector<DvfsModelSummary>& summary,
                              const DvfsOptions& options) {
  std::string out =
      fmt::format("DVFS choice minimising {}{}:\n", DvfsObjectiveName(options.objective),
                  options.max_slowdown_pct >= 0.0
                      ? fmt::format(" within a {:g}% slowdown", options.max_slowdown_pct)
                      : std::string());
  const bool truth = !summary.empty() && summary.front().has_truth;
  // Predicted saving of the objective itself, then (with truth) its loss against the optimum.
  out += fmt::format("  {:<13} {:>7} {:>12}", "perf_model", "kernels", "pred_save_%");
  if (truth) {
    out += fmt::format(" {:>10} {:>9} {:>8} {:>12} {:>10} {:>11}", "loss_%", "max_loss_%",
                       "optimal", "true_E_save%", "true_EDP_%", "slowdown_%");
    // A choice over the budget in truth can beat the budget-respecting optimum (loss < 0).
    if (options.max_slowdown_pct >= 0.0) out += fmt::format(" {:>11}", "over_budget");
  }
  out += "\n";
  for (const DvfsModelSummary& s : summary) {
    const double pred = options.objective == DvfsObjective::kEnergy ? s.mean_energy_saving_pct
                        : options.objective == DvfsObjective::kEdp  ? s.mean_edp_saving_pct
                                                                    : s.mean_ed2p_saving_pct;
    out += fmt::format("  {:<13} {:>7} {:>12.2f}", s.perf_model, s.kernels, pred);
    if (truth) {
      out += fmt::format(" {:>10.2f} {:>9.2f} {:>5}/{:<2} {:>12.2f} {:>10.2f} {:>11.2f}",
                         s.mean_objective_loss_pct, s.max_objective_loss_pct, s.optimal_choices,
                         s.kernels, s.mean_true_energy_saving_pct, s.mean_true_edp_saving_pct,
                         s.mean_true_slowdown_pct);
      if (options.max_slowdown_pct >= 0.0) {
        out += fmt::format(" {:>8}/{:<2}", s.budget_violations, s.kernels);
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
