// The cross-domain DVFS model (TPDS'19 Eqs. 4-6) for data without per-unit counters: each
// workload's utilisations are one unknown, its dynamic activity (U one-hot), and there is one
// memory clock, so the memory domain is a constant:
//
//   P(w, f) = a0 * v(f) + c + v(f)^2 * f * g_w            (TPDS Eq. 4 with U one-hot)
//
// a0 * v: the core's static power (TPDS Eq. 4's a0 v_c); c: the memory domain's and the board's
// constant power (a2 v_m + v_m^2 f_m (a3 + g_m U_m) at the one memory clock, with U_m folded into
// it); g_w: a1 + sum_i g_i U_i of workload w, W/MHz. v(f) is the core voltage relative to the
// reference clock (v = 1 there), non-decreasing, one value per calibrated clock and linear
// between them; below the lowest calibrated clock it is held at the lowest one's value (the
// voltage floor), above the highest at the highest's.
#pragma once

#include <limits>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wattcal {

struct VfModel {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double reference_mhz = kNaN;
  std::vector<double> clocks_mhz;  // calibrated core clocks, ascending
  std::vector<double> v_rel;       // the voltage at each, relative to the reference clock
  double static_w = 0.0;           // a0: W at v = 1
  double constant_w = 0.0;         // c, W
  // g_w of every training workload, W/MHz.
  std::map<std::string, double> activity_w_per_mhz;
  // The board's power limit, W (unset: none): power above it is held by lowering the clock.
  std::optional<double> power_limit_w;

  // v(f): linear between calibrated clocks, held outside them.
  double VoltageAt(double f_mhz) const;
  // TPDS Eq. 4 with U one-hot: the power of a workload of activity g at clock f.
  double PowerAt(double activity_w_per_mhz, double f_mhz) const;
  // The activity that gives `power_w` at `f_mhz` (a new workload measured at one clock; 0 when
  // the power is at or below the static and constant power there).
  double ActivityFrom(double power_w, double f_mhz) const;
  bool WithinCalibratedClocks(double f_mhz) const;
};

// What a workload does when a clock is requested: the clock the power limit holds (the
// requested one when its power stays under the limit) and the power there.
struct HeldClock {
  double f_mhz = VfModel::kNaN;
  double power_w = VfModel::kNaN;
  bool limited = false;
};
HeldClock ClockUnderLimit(const VfModel& model, double activity_w_per_mhz, double requested_mhz);

// The wattcal-vf-model file (keys sorted, as nlohmann::json writes them; a non-finite number
// as null).
void to_json(nlohmann::json& j, const VfModel& model);
// InputError naming `path` and the field when a field is missing or out of range.
VfModel VfModelFromJson(const nlohmann::json& j, const std::string& path);

}  // namespace wattcal
