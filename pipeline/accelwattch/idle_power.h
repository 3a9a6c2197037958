// Power of idle SMs (AccelWattch, MICRO'21 §4.6, Eqs. 6-8), from microbenchmarks that run
// full warps on a varying number of SMs, at one core clock. For microbenchmark i:
//
//   AccelWattch Eq. 6  a_i = (P_total,N,i - P_const) / N      dynamic + static power per active SM
//   AccelWattch Eq. 7  P_idleSMs,i,k = P_total,i,k - P_const - a_i * k all idle SMs at k active SMs
//                      P_perIdleSM,i,k = P_idleSMs,i,k / (N - k)
//   AccelWattch Eq. 8  P_perIdleSM = (prod_i P_perIdleSM,i)^(1/n)   geometric mean over benchmarks
//
// where P_total,N,i is the mean power of i's rows on all N SMs. A benchmark measured at several
// k < N gets one P_perIdleSM,i: the least-squares slope through the origin of P_idleSMs,i,k
// against N - k (sum P_idleSMs (N - k) / sum (N - k)^2), which weights the configurations with
// more idle SMs (and a better-conditioned quotient) more; the per-k quotients are reported too.
// The geometric mean needs positive values: benchmarks whose estimate is <= 0 are listed and
// left out, and with none left the result has no estimate (status says why).
//
// Note: with chip-wide structures (power G, on whenever any SM is active) these equations give
// the per-idle-SM power of AccelWattch Eq. 10's form, P_idleSM + G / N, which is what makes
// AccelWattch Eq. 10 exact.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/sweep.h"

namespace wattcal {

struct IdlePowerOptions {
  // Constant power P_const, W (wattcal-constant's p_const_w); must be finite and >= 0.
  double p_const_w = std::numeric_limits<double>::quiet_NaN();
  // Core clock of the rows used, MHz; 0 = the highest core clock in the sweep.
  double f_core_mhz = 0.0;
  // Rows within this many MHz of f_core_mhz are used.
  double f_tolerance_mhz = 1.0;
  // SMs on the GPU (N); 0 = the largest active_sms in the sweep.
  int num_sms = 0;
  // Rows with this many lanes per warp are used (AccelWattch §4.6: full warps, so that divergence
  // does not perturb the result); rows whose lanes are unknown are used too.
  int lanes_per_warp = 32;
  // Only these benchmarks (empty: every benchmark with rows on all N SMs and on fewer).
  std::vector<std::string> benchmarks;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;
};

struct IdleConfig {
  int active_sms = 0;
  double power_w = 0.0;        // mean measured power
  double idle_sms_w = 0.0;     // AccelWattch Eq. 7, all idle SMs together
  double per_idle_sm_w = 0.0;  // AccelWattch Eq. 7 / (N - k)
};

struct IdleBenchmark {
  std::string benchmark;
  double power_all_sms_w = 0.0;     // P_total,N,i
  double per_active_sm_w = 0.0;     // AccelWattch Eq. 6
  double per_idle_sm_w = 0.0;       // least squares over the configurations
  bool used = false;                // in the geometric mean
  std::string note;                 // why not used
  std::vector<IdleConfig> configs;  // k < N, ascending
};

struct IdlePowerReport {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double p_const_w = 0.0;
  double f_core_mhz = 0.0;
  int num_sms = 0;
  double per_idle_sm_w = kNaN;      // AccelWattch Eq. 8
  double arithmetic_mean_w = kNaN;  // beside it, over the same benchmarks
  int benchmarks_used = 0;
  std::string status;                     // "ok" or why there is no estimate
  std::vector<IdleBenchmark> benchmarks;  // by name
};

// Throws OptionError for invalid options (or a named benchmark not in the sweep), InputError
// naming the sweep file when no benchmark has rows on all N SMs and on fewer at the clock.
IdlePowerReport FitIdlePower(const Sweep& sweep, const IdlePowerOptions& options);

nlohmann::json IdlePowerToJson(const IdlePowerReport& result, const Sweep& sweep,
                               const IdlePowerOptions& options);
// The effective options, for manifests.
void to_json(nlohmann::json& j, const IdlePowerOptions& options);

}  // namespace wattcal
