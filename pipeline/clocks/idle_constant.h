// The DVFS-aware constant power from an idle curve (idle board power at locked core clocks),
// two ways side by side:
//
//   with the estimated voltages (clocks/vf_model.h):  P_idle(f) = s * v(f) + d * v(f)^2 * f + P_const
//       the static and clock-tree power of an idle GPU on the voltage the workloads revealed
//       (TPDS Eq. 4 with no activity), non-negative least squares in s, d, P_const;
//   AccelWattch Eq. 3 (MICRO'21 §4.2, Fig. 2):       P_idle(f) = beta * f^3 + tau * f + P_const
//       V ~ f assumed (accelwattch/constant_power.h's FitEq3FreeConstant).
//
// Both on the idle points within the calibrated clocks (the voltages are not known outside).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/constant_power.h"
#include "clocks/vf_model.h"
#include "io/idle_curve.h"

namespace wattcal {

struct IdleConstantFit {
  double static_w = 0.0;           // s
  double dynamic_w_per_mhz = 0.0;  // d
  double p_const_w = 0.0;          // with the estimated voltages
  double rmse_w = 0.0;
  // The estimated voltage's range over the points: s v and P_const separate only as far as v
  // varies (on an A100, 0.81 .. 1: weakly).
  double v_min = 0.0, v_max = 0.0;
  Eq3Fit cubic;            // AccelWattch Eq. 3 on the same points
  int points = 0;          // idle points used (within the calibrated clocks)
  int points_outside = 0;  // left out
  double f_min_mhz = 0.0, f_max_mhz = 0.0;
};

// InputError when fewer than four idle points lie within the calibrated clocks.
IdleConstantFit FitIdleConstant(const VfModel& model, const IdleCurve& idle);

// The fit as JSON (keys sorted, as nlohmann::json writes them; a non-finite number as null).
void to_json(nlohmann::json& j, const IdleConstantFit& fit);

}  // namespace wattcal
