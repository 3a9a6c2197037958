#include "clocks/idle_constant.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "fit/nnls.h"
#include "util/errors.h"
#include "util/json_check.h"

namespace wattcal {

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
