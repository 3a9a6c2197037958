// The core voltage-frequency curve a what-if moves along (TPDS Eqs. 4-6): the core voltage v(f)
// relative to the reference clock's (v = 1 there), non-decreasing, linear between its levels.
//
// Power at another core clock f, from the model's terms at the reference pair (TPDS Eq. 4; a
// fixed model's TPDS Eq. 9 constant beta0 is its core static term alpha0, gpmTOOL's form):
//
//   P(f) = alpha0_core v(f) + v(f)^2 (f / f_ref) [alpha1_core f_ref + sum_core gamma_i f_ref U_i]
//          + (the memory domain's terms, memory clock held)
//
// The constant term stays static (~ v): on the H100 the idle board drew 115.5 W at 1980 MHz (the
// own capture's idle windows) and 71.9 W at 460 MHz (the shared capture's idle_before), which a
// constant ~ v^2 f cannot give (v = 1.64 at 460 MHz), and ~ v gives v(460 MHz) = 0.62.
//
// Where a curve comes from: fitted from the training rows the power cap moved off the reference
// clock (FitVfCurveFromCappedRows), a DVFS model's own voltage estimates, or a wattcal-clocks
// vf_model.json (--vf-curve); `source` says which, with the file and the rows.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "io/corpus.h"
#include "model/power_model.h"  // VfCurve

namespace wattcal {

// The curve a what-if uses for `model`: its vf_curve when it has one, else a DVFS model's own
// core voltages (TPDS Eq. 6 estimates) up to its default clock, else an empty curve.
VfCurve CoreCurveOf(const PowerModel& model);

// The power at core clock `f_core_mhz` along `curve` (TPDS Eq. 4 above) for utilisations
// `util_frac`, memory clock held at the model's reference; with `breakdown`, its terms. Below the
// curve's lowest level v is held there. The model's reference core clock must be the curve's.
double PowerOnCurve(const PowerModel& model, const VfCurve& curve, const double* util_frac,
                    double f_core_mhz, PowerBreakdown* breakdown = nullptr);

// The voltage v_i that one window measured at power `measured_w` and clock `f_mhz` must have had,
// given the model's terms at the reference pair split into core static S, core dynamic D and
// the memory domain's constant M:  measured = S v + D v^2 (f / f_ref) + M  (TPDS Eqs. 4-6),
// the positive root; NaN when there is none (measured <= M).
double SolveVoltage(double static_w, double dynamic_w, double constant_w, double f_rel,
                    double measured_w);

// Isotonic least squares (pool adjacent violators) of `v` at ascending `f_mhz` (ties pooled),
// non-decreasing and <= 1; returns one value per distinct clock, in `levels_out`'s order.
std::vector<double> MonotoneVoltages(const std::vector<double>& f_mhz, const std::vector<double>& v,
                                     std::vector<double>* levels_out);

// The curve from the rows of `corpus` (the training table, `path`) that the power cap held below
// the model's reference core clock (flag power_cap, clock < reference): each row's voltage from
// SolveVoltage with the model's terms for its utilisations at the reference pair, then
// MonotoneVoltages, with v(f_ref) = 1. An empty curve when there are no such rows (or the model is
// not at its reference clock in one core level). `notes` gets one sentence on what the rows gave.
VfCurve FitVfCurveFromCappedRows(const PowerModel& model, const Corpus& corpus,
                                 const std::string& path, std::string* notes);

}  // namespace wattcal
