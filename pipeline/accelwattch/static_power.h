// Power-gating- and divergence-aware static power (AccelWattch, MICRO'21 §4.3-4.5, Eq. 9).
//
// Power gating (AccelWattch §4.3), from the total power of one microbenchmark at the reference
// clock: its 1-lane rows on 1..N SMs and its N-SM rows with 1..H lanes (H = half-warp lanes):
//   P(k SMs, 1 lane) = c0 + c1 k  (least squares over the SM counts)
//     first_sm_w   = c0 + c1 - P_const   the first SM: its own structures + the chip-wide ones
//     add_sm_w     = c1                  each further SM (its SM-wide structures)
//   P(N SMs, y lanes) = d0 + d1 y  (least squares over y <= H, the linear part of both models)
//     first_lane_per_sm_w = add_sm_w     the first lane of an SM brings up the SM-wide ones
//     add_lane_per_sm_w   = d1 / N       each further lane of an SM
// and the ratios first/add (AccelWattch §4.3 reports 47x and 31x on GV100), plus the paper's two
// worked figures: P(N, 1 lane) vs P(1, 1 lane) and P(N, 8 lanes) vs P(N, 1 lane), in %.
//
// Divergence (AccelWattch §4.4-4.5), per instruction-mix category: every (benchmark, y lanes) curve
// at N SMs is fitted to AccelWattch Eq. 3 with P_const held at the constant stage's value; its
// static power is the fitted tau f at the reference clock. Over the lanes y, two models are fitted
// by least squares (P_first and P_add free in both):
//   linear    (AccelWattch Eq. 4)  P_static(y) = P_first + P_add (y - 1)
//   half-warp (AccelWattch Eq. 5)  P_static(y) = P_first + P_add (y - 1)                     y <= H
//                                  = P_first + P_add (H - 1) / 2 + P_add (y - H - 1) / 2   y > H
// and the one with the smaller RMSE is chosen (ties, and sweeps without lanes above H where the
// two coincide, go to the linear model and are marked not distinguishable). AccelWattch Eq. 9
// divides by N for the per-active-SM terms.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/constant_power.h"
#include "io/sweep.h"

namespace wattcal {

struct StaticPowerOptions {
  // Constant power P_const, W (wattcal-constant's p_const_w); must be finite and >= 0.
  double p_const_w = std::numeric_limits<double>::quiet_NaN();
  // Core clock at which static power (tau f) and the gating terms are evaluated, MHz;
  // 0 = the highest core clock in the sweep.
  double reference_f_core_mhz = 0.0;
  // Rows within this many MHz of the reference clock count as at it.
  double f_tolerance_mhz = 1.0;
  // SMs on the GPU (N of AccelWattch Eq. 9); 0 = the largest active_sms in the sweep.
  int num_sms = 0;
  // Lanes per warp (rows with unknown lanes are taken as a full warp).
  int warp_size = 32;
  // Lanes per half-warp, H of AccelWattch Eq. 5 (16 on Volta); 1 <= H < warp_size.
  int half_warp_lanes = 16;
  // Benchmark whose SM and lane sweeps give the gating terms; "" = the benchmark with the most
  // distinct SM counts at one lane (ties: the first by name).
  std::string gating_benchmark;
  // A divergence curve needs at least this many distinct core clocks (>= 2: beta and tau).
  int min_frequencies = 3;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;
};

struct GatingTerms {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string benchmark;         // "" when the sweep has no gating sweep
  std::string status;            // "ok" or why a term is missing
  std::vector<int> sm_counts;    // SM counts of the 1-lane rows used
  std::vector<int> lane_counts;  // lane counts (<= H) of the N-SM rows used
  double first_sm_w = kNaN;
  double add_sm_w = kNaN;
  double first_to_add_sm_ratio = kNaN;
  double first_lane_per_sm_w = kNaN;
  double add_lane_per_sm_w = kNaN;
  double first_to_add_lane_ratio = kNaN;
  double sm_all_vs_1_increase_pct = kNaN;   // P(N, 1 lane) / P(1, 1 lane) - 1
  double lanes_8_vs_1_increase_pct = kNaN;  // P(N, 8 lanes) / P(N, 1 lane) - 1 (8 <= H)
};

// One divergence model fitted to a category's static powers.
struct DivergenceModel {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double p_static_first_lane_w = kNaN;  // P_first (all N SMs)
  double p_static_add_lane_w = kNaN;    // P_add (all N SMs)
  double p_static_full_warp_w = kNaN;   // the model at y = warp size
  double rmse_w = kNaN;
  double max_abs_error_w = kNaN;
};

struct DivergencePoint {
  std::string benchmark;
  int lanes_per_warp = 0;
  double static_w = 0.0;  // tau f at the reference clock, all N SMs
  double beta_w_per_mhz3 = 0.0;
  double tau_w_per_mhz = 0.0;
  double eq3_mape_pct = 0.0;  // the AccelWattch Eq. 3 fit of this curve
  int points = 0;
};

struct CategoryStatic {
  std::string category;
  std::string status;  // "ok", or why there is no model
  std::vector<std::string> benchmarks;
  std::vector<DivergencePoint> points;  // sorted by lanes, then benchmark
  DivergenceModel linear;
  DivergenceModel half_warp;
  std::string chosen_model;                     // "half_warp" or "linear" ("" without a model)
  bool distinguishable = false;                 // lanes above H present and RMSEs differ
  double eq3_mape_pct = DivergenceModel::kNaN;  // mean over the category's curves
};

struct StaticPowerReport {
  double p_const_w = 0.0;
  double reference_f_core_mhz = 0.0;
  int num_sms = 0;
  GatingTerms gating;
  std::vector<CategoryStatic> categories;  // the nine of MixCategories(), in order
  std::vector<ExcludedCurve> excluded;     // divergence curves left out
};

// The half-warp basis of AccelWattch Eq. 5: y - 1 for y <= H, (H - 1) / 2 + (y - H - 1) / 2 above
// (so a full warp of 2H lanes gives H - 1, the same as H lanes: the sawtooth's two maxima).
double HalfWarpBasis(int lanes, int half_warp_lanes);

// Throws OptionError for invalid options (or an unknown gating benchmark), InputError naming
// the sweep file when it has no row at the reference clock.
StaticPowerReport FitStaticPower(const Sweep& sweep, const StaticPowerOptions& options);

nlohmann::json StaticPowerToJson(const StaticPowerReport& result, const Sweep& sweep,
                                 const StaticPowerOptions& options);
// The effective options, for manifests.
void to_json(nlohmann::json& j, const StaticPowerOptions& options);

}  // namespace wattcal
