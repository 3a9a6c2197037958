// Activity-free DVFS calibration: the voltage-frequency curve, the static and constant power and
// one dynamic activity per workload (clocks/vf_model.h, TPDS'19 Eqs. 4-6 with U one-hot) from
// power measured per workload and locked clock, no counters. Solved jointly with Ceres (as
// wattcal's DVFS calibration: monotone voltages through fit/cost_functions.h's VoltageCurve,
// v = 1 at the reference clock, coefficients >= 0) by plain least squares in watts (absolute
// residuals; relative ones, each run's error over its power, on request).
//
// Why absolute by default (measured on the A100 of EnergAIzer, docs/perf.md): relative residuals
// give a 60 W run (250/60)^2 = 17 times the weight of a 250 W one, and the two lightest A100
// workloads (Qwen2 1.5B b1 s128 and b8 s4096, 55-75 W, nearly flat from 510 to 1050 MHz) then
// hold the voltage floor up at 0.804 (0.780 in W; 0.718 / 0.750 without those two), above the
// measured supply voltage; in W the cross-validated power error is lower on both real data sets
// (A100 3.90 against 3.99%, V100 4.51 against 4.66%).
//
// Each row enters at the clock it ran at: a row the power limit held below its requested clock
// (ClockRun::HeldBelowRequest) is fitted at its measured clock, its voltage linear between the
// calibrated clocks around it. The calibrated clocks are the requested ones.
//
// What the data must give (InputError naming file and line otherwise): two workloads or more,
// each at two clocks or more (one clock says nothing about the voltage: predict such a workload
// from a calibrated model instead), each requested clock with two workloads or more (one
// workload's run would fit its clock's voltage exactly), and not most workloads' power falling
// from their lowest clock to their highest (columns swapped or mislabelled). A workload whose
// power falls so (a light one within the sensor's noise, or two runs the power limit held near one
// clock: on the A100 reduced to 510 and 600 MHz, 2 of 20), or drops between neighbouring clocks by
// more than 10%, is fitted as measured, and listed in the result's warnings; so are two clocks
// only, which give the voltages but not the static power apart from the constant power.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "clocks/vf_model.h"
#include "io/clock_runs.h"

namespace wattcal {

// What a row's residual is divided by: 1 W (absolute, the default) or its measured power
// (relative).
enum class VfResiduals { kRelative, kAbsolute };
// "relative" or "absolute".
const char* VfResidualsName(VfResiduals r);

struct VfFitOptions {
  // Clock at which v = 1, MHz; NaN: the highest requested clock.
  double reference_mhz = std::numeric_limits<double>::quiet_NaN();
  // Bounds of the relative voltage (gpmTOOL's and wattcal's DVFS default).
  double voltage_min = 0.5;
  double voltage_max = 2.0;
  VfResiduals residuals = VfResiduals::kAbsolute;
  // Ceres iterations at most.
  int max_iterations = 500;
  // The board's power limit, W (--power-limit-w; unset: none); stored in the model for
  // predictions.
  std::optional<double> power_limit_w;

  bool Check(std::string* error) const;
};

struct VfFitResult {
  VfModel model;
  std::vector<double> fitted_w;  // per row of the table
  double mape_pct = 0.0;         // training MAPE
  double cost = 0.0;             // Ceres' final cost, 1/2 sum of squared residuals
  VfResiduals residuals = VfResiduals::kAbsolute;  // what the cost's residuals were
  int iterations = 0;                              // over every start
  bool converged = false;                          // the best start
  std::vector<std::string> warnings;
};

// Throws InputError (the data's shape, above) or OptionError (the reference clock is not one of
// the requested clocks).
VfFitResult FitVfModel(const ClockRunTable& table, const VfFitOptions& options);

// The same checks alone, for a table before fitting; returns the warnings.
std::vector<std::string> CheckClockRunsForFit(const ClockRunTable& table);

}  // namespace wattcal
