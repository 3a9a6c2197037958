#include "usecases/calibration_flags.h"

#include <fmt/format.h>

#include "accelwattch/orderings.h"
#include "accelwattch/scaling_model.h"
#include "util/errors.h"
#include "io/csv_reader.h"

namespace wattcal {

const char* CalibrationMethodName(CalibrationMethod method) {
  switch (method) {
    case CalibrationMethod::kDvfs: return "dvfs";
    case CalibrationMethod::kFixed: return "fixed";
    case CalibrationMethod::kAuto: return "auto";
    case CalibrationMethod::kAccelWattch: return "accelwattch";
  }
  return "dvfs";
}

const std::vector<CalibrationMethod>& CalibrationMethods() {
  static const std::vector<CalibrationMethod> kAll = {
      CalibrationMethod::kDvfs, CalibrationMethod::kFixed, CalibrationMethod::kAuto,
      CalibrationMethod::kAccelWattch};
  return kAll;
}

CalibrationMethod ToCalibrationMethod(FitMethod method) {
  return method == FitMethod::kFixed ? CalibrationMethod::kFixed : CalibrationMethod::kDvfs;
}

void SetFitMethod(const CalibrationFlags& f, FitMethod method, CalibrationOptions* o) {
  SetFitMethod(f.loss, method, o);
}

void SetFitMethod(const std::optional<FitLoss>& loss, FitMethod method, CalibrationOptions* o) {
  o->method = method;
  o->loss = loss.value_or(DefaultLoss(method, o->solver));
}

CalibrationOptions ToCalibrationOptions(const CalibrationFlags& f, FitMethod method) {
  CalibrationOptions o = f.options;
  SetFitMethod(f, method, &o);
  std::string error;
  if (!o.Check(&error)) throw OptionError("invalid calibration options: " + error);
  return o;
}

CalibrationOptions ToCalibrationOptions(const CalibrationFlags& f) {
  if (f.method == CalibrationMethod::kAccelWattch) {
    throw OptionError(
        "--method accelwattch fits scaling factors to a per-kernel table: wattcal-calibrate "
        "--method accelwattch --components TABLE.csv (validate it with --mode accelwattch)");
  }
  return ToCalibrationOptions(
      f, f.method == CalibrationMethod::kFixed ? FitMethod::kFixed : FitMethod::kDvfs);
}

CorpusReadOptions ToCorpusReadOptions(const CalibrationFlags& f) {
  std::string error;
  if (!f.corpus.Check(&error)) throw OptionError(error);
  return f.corpus;
}

void to_json(nlohmann::json& j, const CalibrationOptions& o) {
  j = nlohmann::json::object();
  j["method"] = FitMethodName(o.method);
  // The solver actually used: the fixed method is one NNLS solve, whatever --solver says.
  j["solver"] = o.method == FitMethod::kFixed ? "nnls" : FitSolverName(o.solver);
  j["residual"] = FitResidualName(o.residual);
  j["loss"] = FitLossName(o.loss);
  j["loss_scale"] = o.loss == FitLoss::kL2 ? 0.0 : o.EffectiveLossScale();
  j["voltage_min"] = o.voltage_min;
  j["voltage_max"] = o.voltage_max;
  j["max_solver_iterations"] = o.max_iterations;
  j["max_alternating_iterations"] = o.max_iterations;
  j["alternating_tolerance_pct"] = o.alternating_tolerance_pct;
  j["alternating_patience"] = o.alternating_patience;
  j["joint_start_from_alternating"] = o.start_from_alternating;
  j["keep_flagged"] = o.keep_flagged;
  if (o.power_limit_w) j["power_limit_w"] = *o.power_limit_w;
}
bool AccelWattchFlagsGiven(const AccelWattchFlags& f) {
  return !f.bounds.empty() || !f.orderings_path.empty() || !f.paper_orderings ||
         !f.prior_path.empty() || f.prior_weight != 0.0 || !f.start_from_prior;
}

namespace {
// Parses "LO:HI" into two numbers; false when malformed.
bool ParseBoundPair(const std::string& text, double* lo, double* hi) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  return ParseFiniteDouble(text.substr(0, colon), lo) &&
         ParseFiniteDouble(text.substr(colon + 1), hi);
}
}  // namespace

AccelWattchFitOptions ToAccelWattchFitOptions(const AccelWattchFlags& f, int max_iterations) {
  AccelWattchFitOptions o;
  for (const std::string& b : f.bounds) {
    const size_t eq = b.find('=');
    const std::string name = eq == std::string::npos ? "" : b.substr(0, eq);
    double lo = 0.0, hi = 0.0;
    if (!ParseBoundPair(eq == std::string::npos ? b : b.substr(eq + 1), &lo, &hi) ||
        (eq != std::string::npos && name.empty())) {
      throw OptionError(
          fmt::format("--bounds '{}': expected LO:HI or NAME=LO:HI (e.g. 0.001:1000, "
                      "INTP=0.5:2)",
                      b));
    }
    if (name.empty()) {
      o.lower_bound = lo;
      o.upper_bound = hi;
    } else {
      o.component_bounds[name] = {lo, hi};
    }
  }
  o.paper_orderings = f.paper_orderings;
  if (!f.orderings_path.empty()) o.extra_orderings = ReadOrderingsFile(f.orderings_path);
  o.prior_weight = f.prior_weight;
  o.start_from_prior = f.start_from_prior;
  o.max_iterations = max_iterations;
  if (!f.prior_path.empty()) {
    const AccelWattchModel prior = ReadAccelWattchModel(f.prior_path);
    for (size_t i = 0; i < prior.components.size(); ++i)
      o.prior_x[prior.components[i]] = prior.x[i];
    o.prior_source = f.prior_path;
  }
  std::string error;
  if (!o.Check(&error))
    throw OptionError(
        "invalid accelwattch options (--bounds, --prior-weight, "
        "--max-iterations): " +
        error);
  return o;
}

nlohmann::json AccelWattchFitOptionsToJson(const AccelWattchFitOptions& o,
                                           const AccelWattchFlags& f) {
  nlohmann::json j;
  j["lower_bound"] = o.lower_bound;
  j["upper_bound"] = o.upper_bound;
  nlohmann::json bounds = nlohmann::json::object();
  for (const auto& [name, b] : o.component_bounds) bounds[name] = {b.first, b.second};
  j["component_bounds"] = bounds;
  j["paper_orderings"] = o.paper_orderings;
  j["orderings_file"] = f.orderings_path;
  j["prior"] = f.prior_path.empty() ? "x = 1" : f.prior_path;
  j["prior_weight"] = o.prior_weight;
  j["start_from_prior"] = o.start_from_prior;
  j["max_iterations"] = o.max_iterations;
  return j;
}

std::vector<std::string> AccelWattchInputFiles(const AccelWattchFlags& f) {
  std::vector<std::string> files;
  if (!f.orderings_path.empty()) files.push_back(f.orderings_path);
  if (!f.prior_path.empty()) files.push_back(f.prior_path);
  return files;
}

}  // namespace wattcal
