#include "clocks/idle_constant.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "fit/nnls.h"
#include "io/clock_runs.h"
#include "io/csv_reader.h"
#include "util/json_file.h"
#include "util/errors.h"
#include "util/json_check.h"

namespace wattcal {
namespace {

IdleCurve ReadIdleJson(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "the idle curve");
  if (!j.is_object() || j.empty()) {
    throw InputError(path, 0, "",
                     "expected an object {\"<MHz>\": W, ...} (idle power per locked clock)");
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& [key, value] : j.items()) {
    char* end = nullptr;
    const double f = std::strtod(key.c_str(), &end);
    if (end == key.c_str() || *end != '\0' || !(f >= kMinFrequencyMhz && f <= kMaxFrequencyMhz)) {
      throw InputError(path, 0, key, "a key must be a core clock in MHz");
    }
    if (!value.is_number() || !(value.get<double>() > 0.0 && value.get<double>() <= kMaxPowerW)) {
      throw InputError(path, 0, key,
                       fmt::format("expected a power in W within (0, {:g}]", kMaxPowerW));
    }
    points.emplace_back(f, value.get<double>());
  }
  std::sort(points.begin(), points.end());
  IdleCurve c;
  c.path = path;
  for (const auto& [f, p] : points) {
    c.f_core_mhz.push_back(f);
    c.power_w.push_back(p);
  }
  return c;
}

}  // namespace

IdleCurve ReadIdleCurve(const std::string& path) {
  std::string lower = path;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower.size() >= 5 && lower.compare(lower.size() - 5, 5, ".json") == 0)
    return ReadIdleJson(path);
  // A CSV: the per-run reader's column rules with a placeholder workload.
  CsvReader reader(path);
  std::vector<std::string> header, fields;
  if (!reader.Next(&header))
    throw InputError(path, 1, "", "empty file: expected f_core_mhz,power_w");
  int fi = -1, pi = -1;
  double fs = 1.0, ps = 1.0;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "f_core_mhz") fi = static_cast<int>(i);
    if (header[i] == "f_core_ghz") fi = static_cast<int>(i), fs = 1e3;
    if (header[i] == "power_w") pi = static_cast<int>(i);
    if (header[i] == "power_mw") pi = static_cast<int>(i), ps = 1e-3;
  }
  if (fi < 0 || pi < 0)
    reader.Fail("header", "expected columns f_core_mhz and power_w (or _ghz, _mw)");
  IdleCurve c;
  c.path = path;
  std::vector<std::pair<double, double>> points;
  while (reader.Next(&fields)) {
    if (fields.size() <= static_cast<size_t>(std::max(fi, pi))) reader.Fail("", "too few fields");
    points.emplace_back(
        reader.ParseBounded(fields[fi], header[fi], PhysicalQuantity::kFrequency, fs),
        reader.ParseBounded(fields[pi], header[pi], PhysicalQuantity::kPower, ps));
  }
  std::sort(points.begin(), points.end());
  for (const auto& [f, p] : points) {
    c.f_core_mhz.push_back(f);
    c.power_w.push_back(p);
  }
  return c;
}

IdleConstantFit FitIdleConstant(const VfModel& model, const IdleCurve& idle) {
  IdleConstantFit fit;
  SweepCurve curve;
  curve.benchmark = "idle";
  for (size_t i = 0; i < idle.f_core_mhz.size(); ++i) {
    if (!model.WithinCalibratedClocks(idle.f_core_mhz[i])) {
      ++fit.points_outside;
      continue;
    }
    curve.f_core_mhz.push_back(idle.f_core_mhz[i]);
    curve.power_w.push_back(idle.power_w[i]);
    curve.lines.push_back(static_cast<int64_t>(i) + 2);
  }
  fit.points = static_cast<int>(curve.f_core_mhz.size());
  if (fit.points < 4) {
    throw InputError(
        idle.path, 0, "",
        fmt::format("{} idle points within the calibrated clocks ({:g} .. {:g} MHz): need 4 "
                    "or more for three coefficients and a residual",
                    fit.points, model.clocks_mhz.front(), model.clocks_mhz.back()));
  }
  fit.f_min_mhz = curve.f_core_mhz.front();
  fit.f_max_mhz = curve.f_core_mhz.back();
  // With the voltages: columns v, v^2 f (GHz for conditioning), 1.
  Eigen::MatrixXd a(fit.points, 3);
  Eigen::VectorXd y(fit.points);
  for (int i = 0; i < fit.points; ++i) {
    const double f = curve.f_core_mhz[static_cast<size_t>(i)];
    const double v = model.VoltageAt(f);
    a(i, 0) = v;
    a(i, 1) = v * v * f * 1e-3;
    a(i, 2) = 1.0;
    y(i) = curve.power_w[static_cast<size_t>(i)];
  }
  // Non-negative (TPDS: every coefficient >= 0): where v hardly varies, s v and P_const are
  // nearly collinear and an unconstrained fit trades one for the other past zero.
  const Eigen::VectorXd x = SolveNnls(a, y);
  fit.v_min = a.col(0).minCoeff();
  fit.v_max = a.col(0).maxCoeff();
  fit.static_w = x(0);
  fit.dynamic_w_per_mhz = x(1) * 1e-3;
  fit.p_const_w = x(2);
  fit.rmse_w = std::sqrt((a * x - y).squaredNorm() / fit.points);
  fit.cubic = FitEq3FreeConstant(curve);
  return fit;
}

void to_json(nlohmann::json& j, const IdleConstantFit& f) {
  j = nlohmann::json::object();
  j["points"] = f.points;
  j["points_outside_calibrated_clocks"] = f.points_outside;
  j["f_core_min_mhz"] = FiniteOrNull(f.f_min_mhz);
  j["f_core_max_mhz"] = FiniteOrNull(f.f_max_mhz);
  j["with_voltages"] = {{"equation", "P = s*v(f) + d*v(f)^2*f + P_const"},
                        {"s_w", FiniteOrNull(f.static_w)},
                        {"d_w_per_mhz", FiniteOrNull(f.dynamic_w_per_mhz)},
                        {"p_const_w", FiniteOrNull(f.p_const_w)},
                        {"rmse_w", FiniteOrNull(f.rmse_w)},
                        {"v_min", FiniteOrNull(f.v_min)},
                        {"v_max", FiniteOrNull(f.v_max)}};
  j["accelwattch_eq3"] = {{"equation", "P = beta*f^3 + tau*f + P_const"},
                          {"beta_w_per_mhz3", FiniteOrNull(f.cubic.beta_w_per_mhz3)},
                          {"tau_w_per_mhz", FiniteOrNull(f.cubic.tau_w_per_mhz)},
                          {"p_const_w", FiniteOrNull(f.cubic.p_const_w)},
                          {"rmse_w", FiniteOrNull(f.cubic.rmse_w)}};
}

}  // namespace wattcal
