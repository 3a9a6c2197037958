// The parts of AccelWattch's whole power model (MICRO'21 Eqs. 10-12) beyond the scaling
// factors: the initial per-event energy estimates of the dynamic components (E-hat_i of
// AccelWattch Eq. 12) and the terms AccelWattch Eq. 12 keeps at x = 1 (constant power,
// divergence-aware static power of the active SMs, idle-SM power), read from the outputs of
// wattcal-constant, -static and -idle.
//
// Energy-estimate file (microbench_specs/virtual_volta_energies.json is one):
//   {"format": "wattcal-accelwattch-energies", "version": 1, "about": "...",
//    "reference_f_core_mhz": 1447,
//    "components": [{"component": "INTP", "events": ["smsp__...iadd_pred_on.sum"],
//                    "energy_per_event_pj": 1.625, "clock": "core", "voltage_scaled": true}, ...]}
// energy_per_event_pj is E-hat_i at the reference core clock's voltage; a component's events
// are counter names whose counts are summed (a_i of AccelWattch Eq. 11). `clock` says which clock
// its event rate follows when the model is evaluated at another V-F pair ("core" or "memory"),
// `voltage_scaled` whether its energy per event follows the core voltage squared
// (AccelWattch Eq. 2's C V^2 f; false for DRAM, whose supply does not follow the core's).
//
// Voltage. AccelWattch §4.2 takes the core voltage proportional to the core clock (V ~ k f),
// which is what makes AccelWattch Eq. 3 a cubic; by default the model keeps that assumption: V(f) /
// V(f_ref) = f / f_ref, so between core clocks static and idle power scale with f
// (AccelWattch Eq. 3's tau f) and the energy of a voltage-scaled event with f^2. A measured V-f
// curve (CSV f_core_mhz,voltage_v or voltage_mv; e.g. from nvidia-smi or a DVFS model's voltages)
// replaces it: V is interpolated linearly between its points, static power scales with V
// (AccelWattch Eq. 2's nV) and energy per event with V^2; clocks outside the curve are errors.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wattcal {

inline constexpr const char* kAccelWattchEnergiesFormat = "wattcal-accelwattch-energies";

struct EnergyComponent {
  std::string component;             // AccelWattch name: INTP, FP_MULP, DRAMP, ...
  std::vector<std::string> events;   // counters summed into a_i
  double energy_per_event_pj = 0.0;  // E-hat_i at the reference voltage, pJ (> 0)
  std::string clock = "core";        // "core" or "memory"
  bool voltage_scaled = true;
};

struct AccelWattchEnergies {
  std::string source;                 // the file they were read from
  double reference_f_core_mhz = 0.0;  // the clock whose voltage E-hat is given at
  std::vector<EnergyComponent> components;

  int FindComponent(const std::string& name) const;
  std::vector<std::string> ComponentNames() const;
};

// Static power of a category's kernels on all N SMs (AccelWattch Eqs. 4-5, 9) at the static stage's
// reference clock.
struct CategoryStaticTerm {
  std::string category;
  // "linear" (AccelWattch Eq. 4) or "half_warp" (AccelWattch Eq. 5)
  std::string model;
  double p_static_first_lane_w = 0.0;
  double p_static_add_lane_w = 0.0;
};

struct AccelWattchFixedTerms {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // Constant power (AccelWattch Eq. 3), W: independent of clock and activity.
  std::string constant_source;
  double p_const_w = kNaN;
  // Static power of the active SMs (AccelWattch Eqs. 4, 5, 9), per category, at static_f_core_mhz.
  std::string static_source;
  double static_f_core_mhz = kNaN;
  int num_sms = 0;
  int warp_size = 32;
  int half_warp_lanes = 16;
  std::vector<CategoryStaticTerm> categories;
  // Category whose static model serves kernels with none ("": such a kernel is an error).
  std::string default_category;
  // Power of one idle SM (AccelWattch Eqs. 6-8) at idle_f_core_mhz, W.
  std::string idle_source;
  double idle_f_core_mhz = kNaN;
  double p_idle_sm_w = kNaN;
  // The core voltage against the clock: empty = V ~ f (AccelWattch §4.2); else a measured curve,
  // clocks ascending, voltages > 0 in any one unit (only ratios matter).
  std::string voltage_source;
  std::vector<double> voltage_f_core_mhz;
  std::vector<double> voltage_v;

  // True when `f_core_mhz` lies where the voltage model is defined (always, for V ~ f).
  bool VoltageDefinedAt(double f_core_mhz) const;
  // V(f_to) / V(f_from) (both clocks where the model is defined).
  double VoltageRatio(double f_to_mhz, double f_from_mhz) const;
  // "V proportional to f_core ..." or "measured V-f curve ...".
  std::string VoltageModelName() const;

  const CategoryStaticTerm* FindCategory(const std::string& category) const;
  // The category whose static model applies to `category` ("" -> default_category), or
  // nullptr when there is none.
  const CategoryStaticTerm* StaticFor(const std::string& category) const;
  // P_static,yLanes (all N SMs) of a category at its reference clock (AccelWattch Eq. 4 or 5).
  static double StaticAllSmsW(const CategoryStaticTerm& term, int lanes, int half_warp_lanes);
};

// Reads an energy-estimate file. Throws InputError naming FILE:LINE and the key for a wrong
// format or version, a missing or mistyped key, a component named twice, an event counted by
// two components, an energy <= 0, an unknown clock, or no components.
AccelWattchEnergies ReadAccelWattchEnergies(const std::string& path);

// Assembles the fixed terms from wattcal-constant's, wattcal-static's and wattcal-idle's JSON
// outputs. Categories without a fitted model (status other than "ok") are left out; the idle
// stage must have an estimate. `default_category` ("" for none) must be one of the fitted
// categories. Throws InputError naming the file and key, OptionError for a bad default.
AccelWattchFixedTerms ReadAccelWattchFixedTerms(const std::string& constant_path,
                                                const std::string& static_path,
                                                const std::string& idle_path,
                                                const std::string& default_category);

// Reads a measured V-f curve into fixed->voltage_* (CSV with f_core_mhz and voltage_v or
// voltage_mv; other columns ignored). Throws InputError naming FILE:LINE and the field for a
// missing column, a clock <= 0 or not above the previous row's, a voltage <= 0, or fewer than
// two rows; OptionError when a clock the fixed terms were measured at (static, idle) lies
// outside the curve.
void ReadVoltageCurve(const std::string& path, AccelWattchFixedTerms* fixed);

// The JSON objects embedded in a wattcal-accelwattch-model file ("energies", "fixed_terms"),
// keys in the order written (nlohmann's per-type conversion: `ordered_json j = energies;`).
void to_json(nlohmann::ordered_json& j, const AccelWattchEnergies& energies);
void to_json(nlohmann::ordered_json& j, const AccelWattchFixedTerms& fixed);

// Reads them back from a model file's parsed JSON (`text` is the file's bytes, for lines;
// `key` the object's key at the top level). Throws InputError naming FILE:LINE and the key.
AccelWattchEnergies EnergiesFromJson(const std::string& path, const std::string& text,
                                     const nlohmann::json& object, const std::string& key);
AccelWattchFixedTerms FixedTermsFromJson(const std::string& path, const std::string& text,
                                         const nlohmann::json& object, const std::string& key);

}  // namespace wattcal
