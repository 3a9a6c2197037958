#include "usecases/clocks_stage.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "clocks/idle_constant.h"
#include "io/measured_voltage.h"
#include "report/clocks_report.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/json_check.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {
namespace {

std::string N(double v) { return CsvNumber(v); }

std::string VoltagesCsv(const VfModel& m) {
  std::string out = "f_core_mhz,v_rel\n";
  for (size_t i = 0; i < m.clocks_mhz.size(); ++i)
    out += N(m.clocks_mhz[i]) + "," + N(m.v_rel[i]) + "\n";
  return out;
}

std::string TrainingFitCsv(const ClockRunTable& t, const VfFitResult& fit) {
  std::string out = "workload,f_core_requested_mhz,f_core_mhz,measured_w,fitted_w\n";
  for (size_t i = 0; i < t.runs.size(); ++i) {
    const ClockRun& r = t.runs[i];
    out += CsvField(r.workload) + "," + N(r.f_requested_mhz) + "," + N(r.f_core_mhz) + "," +
           N(r.power_w) + "," + N(fit.fitted_w[i]) + "\n";
  }
  return out;
}

std::string CvCsv(const ClockCvResult& cv) {
  std::string out =
      "workload,f_core_mhz,measured_w,predicted_w,f_core_requested_mhz,proportional_w,fold,"
      "predicted_held_mhz,predicted_held_w,anchor_f_core_mhz\n";
  for (const ClockCvPoint& p : cv.points) {
    out += CsvField(p.workload) + "," + N(p.f_core_mhz) + "," + N(p.measured_w) + "," +
           N(p.predicted_w) + "," + N(p.f_requested_mhz) + "," + N(p.proportional_w) + "," +
           std::to_string(p.fold + 1) + "," + N(p.predicted_held_mhz) + "," +
           N(p.predicted_held_w) + "," + N(cv.anchor_mhz) + "\n";
  }
  return out;
}

std::string ChoiceCsv(const ClockCvResult& cv) {
  std::string out =
      "workload,chosen_f_core_mhz,optimum_f_core_mhz,energy_loss_pct,chosen_edp_f_core_mhz,"
      "optimum_edp_f_core_mhz,edp_loss_pct,highest_f_core_mhz,highest_loss_pct,best_fixed_f_core_"
      "mhz,"
      "best_fixed_loss_pct,t_mem_s,c_s_mhz,fold,chosen_within_f_core_mhz,within_loss_pct\n";
  for (const ClockChoice& c : cv.choices) {
    out += CsvField(c.workload) + "," + N(c.chosen_mhz) + "," + N(c.optimum_mhz) + "," +
           N(c.energy_loss_pct) + "," + N(c.chosen_edp_mhz) + "," + N(c.optimum_edp_mhz) + "," +
           N(c.edp_loss_pct) + "," + N(c.highest_mhz) + "," + N(c.highest_loss_pct) + "," +
           N(c.best_fixed_mhz) + "," + N(c.best_fixed_loss_pct) + "," + N(c.t_mem_s) + "," +
           N(c.c_s_mhz) + "," + std::to_string(c.fold + 1) + "," + N(c.chosen_within_mhz) + "," +
           N(c.within_loss_pct) + "\n";
  }
  return out;
}

// Every held-out workload at every requested clock but the anchor: power, run time and energy
// per run predicted from the anchor (run time through the two timed clocks, and from the anchor's
// run time alone) against the measured energy.
std::string EnergyCsv(const ClockCvResult& cv) {
  std::string out =
      "workload,fold,f_core_requested_mhz,predicted_f_core_mhz,predicted_w,measured_time_s,"
      "predicted_time_s,predicted_time_anchor_only_s,measured_energy_j,predicted_energy_j,"
      "predicted_energy_anchor_only_j,energy_error_pct,energy_anchor_only_error_pct,"
      "anchor_f_core_mhz\n";
  for (const ClockChoice& c : cv.choices) {
    for (const ClockCandidate& k : c.candidates) {
      if (std::abs(k.f_requested_mhz - cv.anchor_mhz) < 1e-6) continue;
      out += CsvField(c.workload) + "," + std::to_string(c.fold + 1) + "," + N(k.f_requested_mhz) +
             "," + N(k.predicted_f_mhz) + "," + N(k.predicted_w) + "," + N(k.measured_time_s) +
             "," + N(k.predicted_time_s) + "," + N(k.predicted_time_anchor_s) + "," +
             N(k.measured_energy_j) + "," + N(k.predicted_energy_j) + "," +
             N(k.predicted_energy_anchor_j) + "," +
             N(100.0 * (k.predicted_energy_j / k.measured_energy_j - 1.0)) + "," +
             N(100.0 * (k.predicted_energy_anchor_j / k.measured_energy_j - 1.0)) + "," +
             N(cv.anchor_mhz) + "\n";
    }
  }
  return out;
}

nlohmann::json EnergyJson(const EnergyAtClock& e) {
  nlohmann::json j = nlohmann::json::object();
  if (std::isfinite(e.f_requested_mhz)) j["f_core_requested_mhz"] = e.f_requested_mhz;
  j["points"] = e.points;
  j["energy_mape_pct"] = FiniteOrNull(e.energy_mape_pct);
  j["energy_anchor_time_only_mape_pct"] = FiniteOrNull(e.energy_anchor_time_mape_pct);
  j["time_mape_pct"] = FiniteOrNull(e.time_mape_pct);
  j["time_anchor_only_mape_pct"] = FiniteOrNull(e.time_anchor_mape_pct);
  return j;
}

// New workloads, each from its run at the anchor clock (else its first run): power at every
// calibrated clock, and the clock the power limit holds.
std::string PredictionsCsv(const VfModel& m, const ClockRunTable& table, double anchor_mhz) {
  std::string out =
      "workload,anchor_f_core_mhz,anchor_w,activity_w_per_mhz,f_core_requested_mhz,predicted_f_"
      "core_mhz,"
      "predicted_w,limited\n";
  for (const std::string& w : table.Workloads()) {
    const ClockRun* anchor = nullptr;
    for (const ClockRun& r : table.runs) {
      if (r.workload != w) continue;
      if (anchor == nullptr || std::abs(r.f_requested_mhz - anchor_mhz) < 1e-6) anchor = &r;
    }
    if (!m.WithinCalibratedClocks(anchor->f_core_mhz)) {
      throw InputError(
          anchor->path, anchor->line, "f_core_mhz",
          fmt::format("'{}' ran at {:g} MHz, outside the calibrated clocks ({:g} .. {:g} MHz)", w,
                      anchor->f_core_mhz, m.clocks_mhz.front(), m.clocks_mhz.back()));
    }
    const double g = m.ActivityFrom(anchor->power_w, anchor->f_core_mhz);
    for (double f : m.clocks_mhz) {
      const HeldClock h = ClockUnderLimit(m, g, f);
      out += CsvField(w) + "," + N(anchor->f_core_mhz) + "," + N(anchor->power_w) + "," + N(g) +
             "," + N(f) + "," + N(h.f_mhz) + "," + N(h.power_w) + "," + (h.limited ? "1" : "0") +
             "\n";
    }
  }
  return out;
}

nlohmann::json SummaryJson(const VfFitResult& fit, const ClockCvResult& cv) {
  nlohmann::json j = nlohmann::json::object();
  j["training_mape_pct"] = FiniteOrNull(fit.mape_pct);
  j["fit_residuals"] = VfResidualsName(fit.residuals);
  j["training_converged"] = fit.converged;
  j["anchor_f_core_mhz"] = FiniteOrNull(cv.anchor_mhz);
  j["folds"] = cv.fold_workloads.size();
  j["cv_points"] = cv.points.size();
  j["cv_mape_pct"] = FiniteOrNull(cv.mape_pct);
  j["cv_proportional_mape_pct"] = FiniteOrNull(cv.proportional_mape_pct);
  if (!cv.choices.empty()) {
    j["choices"] = cv.choices.size();
    j["mean_energy_loss_pct"] = FiniteOrNull(cv.mean_energy_loss_pct);
    j["mean_within_timed_clocks_loss_pct"] = FiniteOrNull(cv.mean_within_loss_pct);
    j["mean_edp_loss_pct"] = FiniteOrNull(cv.mean_edp_loss_pct);
    j["mean_highest_clock_loss_pct"] = FiniteOrNull(cv.mean_highest_loss_pct);
    j["mean_best_fixed_clock_loss_pct"] = FiniteOrNull(cv.mean_best_fixed_loss_pct);
    j["energy_mape_pct"] = FiniteOrNull(cv.energy_overall.energy_mape_pct);
    j["energy_anchor_time_only_mape_pct"] =
        FiniteOrNull(cv.energy_overall.energy_anchor_time_mape_pct);
    j["energy_by_clock"] = nlohmann::json::array();
    for (const EnergyAtClock& e : cv.energy_by_clock) j["energy_by_clock"].push_back(EnergyJson(e));
  }
  j["notes"] = cv.notes;
  j["warnings"] = fit.warnings;
  return j;
}

}  // namespace

void ClocksStageOptions::Check() const {
  if (runs_paths.empty()) throw OptionError("--runs is required");
  if (out_dir.empty()) throw OptionError("--out-dir is required");
  std::string error;
  if (!cv.fit.Check(&error)) throw OptionError(error);
  if (!cv.time_clocks_mhz.empty() && cv.time_clocks_mhz.size() != 2) {
    throw OptionError(fmt::format("--time-clocks: two clocks, got {}", cv.time_clocks_mhz.size()));
  }
}

void to_json(nlohmann::json& j, const ClocksStageOptions& o) {
  j = nlohmann::json::object();
  j["anchor_mhz"] =
      std::isnan(o.cv.anchor_mhz) ? nlohmann::json("middle") : nlohmann::json(o.cv.anchor_mhz);
  j["time_clocks_mhz"] = o.cv.time_clocks_mhz;
  j["folds"] = o.cv.folds;
  j["seed"] = o.cv.seed;
  j["reference_mhz"] = std::isnan(o.cv.fit.reference_mhz) ? nlohmann::json("highest")
                                                          : nlohmann::json(o.cv.fit.reference_mhz);
  j["power_limit_w"] =
      o.cv.fit.power_limit_w ? nlohmann::json(*o.cv.fit.power_limit_w) : nlohmann::json(nullptr);
  j["fit_residuals"] = VfResidualsName(o.cv.fit.residuals);
  j["voltage_min"] = o.cv.fit.voltage_min;
  j["voltage_max"] = o.cv.fit.voltage_max;
  j["figures"] = o.figures;
  j["title"] = o.title;
}

ClocksCalibration CalibrateClocks(const ClockRunTable& table, const ClockCvOptions& options) {
  ClocksCalibration c;
  c.fit = FitVfModel(table, options.fit);
  for (const std::string& w : c.fit.warnings) LogWarning(w);
  c.cv = CrossValidateClocks(table, options);
  for (const std::string& n : c.cv.notes) LogWarning(n);
  return c;
}

namespace {

// The inputs beside the runs: the idle curve (and the constant power it gives) and the measured
// voltages, each read when its flag is given.
struct ClocksExtras {
  std::vector<std::string> inputs;
  std::unique_ptr<IdleCurve> idle_curve;
  std::unique_ptr<IdleConstantFit> idle;
  std::vector<VoltageReading> measured;
};

ClocksExtras ReadClocksExtras(const ClocksStageOptions& o, const VfModel& model) {
  ClocksExtras x;
  x.inputs = o.runs_paths;
  if (!o.idle_path.empty()) {
    x.idle_curve = std::make_unique<IdleCurve>(ReadIdleCurve(o.idle_path));
    x.idle = std::make_unique<IdleConstantFit>(FitIdleConstant(model, *x.idle_curve));
    x.inputs.push_back(o.idle_path);
  }
  if (!o.measured_voltage_path.empty()) {
    x.measured = ReadMeasuredVoltages(o.measured_voltage_path);
    x.inputs.push_back(o.measured_voltage_path);
  }
  return x;
}

// Stages the run's tables in `outputs`; returns each with what it holds, for the report.
std::vector<std::pair<std::string, std::string>> StageClocksTables(const ClocksStageOptions& o,
                                                                   const ClockRunTable& table,
                                                                   const ClocksCalibration& c,
                                                                   ClocksExtras* x,
                                                                   OutputSet* outputs) {
  const std::string& dir = o.out_dir;
  const ClockCvResult& cv = c.cv;
  std::vector<std::pair<std::string, std::string>> files = {
      {"the fitted model (voltages, static and constant power, each workload's activity)",
       dir + "/vf_model.json"},
      {"the estimated voltage at every calibrated clock", dir + "/voltages.csv"},
      {"every run with the fitted power", dir + "/training_fit.csv"},
      {"every held-out point of the cross-validation", dir + "/cv_predictions.csv"},
      {"the headline figures", dir + "/clocks_summary.json"}};
  outputs->StageText(dir + "/vf_model.json", DumpJson(nlohmann::json(c.fit.model)));
  outputs->StageText(dir + "/voltages.csv", VoltagesCsv(c.fit.model));
  outputs->StageText(dir + "/training_fit.csv", TrainingFitCsv(table, c.fit));
  outputs->StageText(dir + "/cv_predictions.csv", CvCsv(cv));
  outputs->StageText(dir + "/clocks_summary.json", DumpJson(SummaryJson(c.fit, cv)));
  if (!cv.choices.empty()) {
    outputs->StageText(dir + "/clock_choice.csv", ChoiceCsv(cv));
    files.push_back(
        {"the clock chosen for each held-out workload, scored", dir + "/clock_choice.csv"});
    outputs->StageText(dir + "/energy_at_clocks.csv", EnergyCsv(cv));
    files.push_back({"each held-out workload's energy at every clock, predicted from the anchor",
                     dir + "/energy_at_clocks.csv"});
  }
  if (x->idle) {
    outputs->StageText(dir + "/idle_constant.json", DumpJson(nlohmann::json(*x->idle)));
    files.push_back({"the constant power from the idle curve", dir + "/idle_constant.json"});
  }
  if (!o.predict_path.empty()) {
    const ClockRunTable fresh = ReadClockRuns(o.predict_path);
    x->inputs.push_back(o.predict_path);
    outputs->StageText(dir + "/predictions.csv", PredictionsCsv(c.fit.model, fresh, cv.anchor_mhz));
    files.push_back({"the new workloads at every calibrated clock", dir + "/predictions.csv"});
  }
  return files;
}

// Stages the report (index.html, index.md, figures) over the tables; returns its files.
std::vector<std::string> StageClocksIndex(
    const ClocksStageOptions& o, const ClockRunTable& table, const ClocksCalibration& c,
    const ClocksExtras& x, const std::vector<std::pair<std::string, std::string>>& files,
    OutputSet* outputs) {
  ClocksReportInput in;
  in.title = o.title.empty()
                 ? std::filesystem::path(o.out_dir).lexically_normal().filename().string()
                 : o.title;
  in.out_dir = o.out_dir;
  in.table = &table;
  in.fit = &c.fit;
  in.cv = &c.cv;
  in.idle = x.idle.get();
  in.idle_curve = x.idle_curve.get();
  if (!x.measured.empty()) in.measured_voltages = &x.measured;
  in.measured_voltage_path = o.measured_voltage_path;
  in.files = files;
  in.figures = o.figures;
  return StageClocksReport(in, outputs);
}

// The headline figures, one per line.
std::string ClocksSummaryText(const ClocksCalibration& c, const IdleConstantFit* idle) {
  const ClockCvResult& cv = c.cv;
  std::string summary = fmt::format(
      "training MAPE {:.2f}%\nCV by workload from {:g} MHz: {:.2f}% (P ~ f {:.2f}%) over {} "
      "points\n",
      c.fit.mape_pct, cv.anchor_mhz, cv.mape_pct, cv.proportional_mape_pct, cv.points.size());
  if (!cv.choices.empty()) {
    summary += fmt::format(
        "energy lost by the chosen clock: {:.2f}% ({:.2f}% chosen between the timed clocks; "
        "highest clock {:.2f}%, "
        "best fixed clock {:.2f}%) over {} workloads\n",
        cv.mean_energy_loss_pct, cv.mean_within_loss_pct, cv.mean_highest_loss_pct,
        cv.mean_best_fixed_loss_pct, cv.choices.size());
    summary += fmt::format(
        "energy at every clock from {:g} MHz: MAPE {:.2f}% (run time from the anchor alone "
        "{:.2f}%) over {} points\n",
        cv.anchor_mhz, cv.energy_overall.energy_mape_pct,
        cv.energy_overall.energy_anchor_time_mape_pct, cv.energy_overall.points);
  }
  if (idle) {
    summary += fmt::format(
        "constant power: {:.2f} W with the estimated voltages, {:.2f} W cubic (AccelWattch Eq. "
        "3)\n",
        idle->p_const_w, idle->cubic.p_const_w);
  }
  return summary;
}

}  // namespace

ClocksStageReport RunClocksStage(const ClocksStageOptions& o) {
  o.Check();
  const ClockRunTable table = ReadClockRuns(o.runs_paths);
  LogInfo(fmt::format("{}: {} runs of {} workloads at {} clocks ({} format)", table.path,
                      table.runs.size(), table.Workloads().size(), table.RequestedClocks().size(),
                      table.format));
  const ClocksCalibration c = CalibrateClocks(table, o.cv);
  ClocksExtras extras = ReadClocksExtras(o, c.fit.model);
  OutputSet outputs;
  const auto files = StageClocksTables(o, table, c, &extras, &outputs);
  const std::vector<std::string> report_files =
      StageClocksIndex(o, table, c, extras, files, &outputs);
  // One record for the run, listing every output (the model first: it names the record).
  for (const auto& [what, path] : files)
    outputs.StageProvenance(path, "clocks", extras.inputs, nlohmann::json(o));
  for (const std::string& path : report_files)
    outputs.StageProvenance(path, "clocks", extras.inputs, nlohmann::json(o));
  outputs.Commit();
  ClocksStageReport report;
  report.written = outputs.Outputs();
  report.training_mape_pct = c.fit.mape_pct;
  report.cv = c.cv;
  report.summary = ClocksSummaryText(c, extras.idle.get());
  LogInfo("wrote " + o.out_dir + "/index.html");
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

}  // namespace wattcal
