// Per-kernel component power tables for AccelWattch's dynamic scaling factors (MICRO'21 §5,
// AccelWattch Eqs. 12-13): one row per kernel with the estimated dynamic power of every component
// at scaling factor x = 1, the fixed terms (constant, static, idle-SM power; x = 1 always) and the
// measured power.
//
// Two forms are read, recognised from the header:
//
// * AccelWattch's per_kernel_*.csv, converted from AccelWattch_graphs.xlsx
//   (../shared/datasets/README.md §2): `kernel_id`, metadata columns (benchmark, suite,
//   n_unique_kernels, runtime_covered, kernel_label, rel_error, abs_rel_error), the dynamic
//   components `<COMP>_W` (IBP_W, DCP_W, INTP_W, FP_MULP_W, ...), the fixed terms CONSTP_W,
//   STATICP_W, IDLE_COREP_W, the sheet's modelled total sim_total_W and the measured
//   hw_total_W (error_W, abs_error_W are derived and ignored). Component names are the column
//   names without the unit: "INTP", "FP_MULP".
// * the tidy form, written by wattcal and easy to produce from any other tool:
//     kernel,measured_w,const_w,static_w,idle_w,<component>_w,...
//   in any column order after `kernel`, at least one component; every other column must be a
//   component. Component names are the column names without the unit.
//
// In both forms a power column may be given in milliwatts instead (suffix _mW / _mw); it is
// converted to W. Any other column without a recognised unit is an error (no silent guess).
// Every problem is an InputError naming FILE:LINE and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

struct ComponentTable {
  std::string path;
  std::string format;                   // "accelwattch" or "tidy"
  std::vector<std::string> components;  // dynamic components, in column order
  std::vector<std::string> kernels;     // in file order, unique
  std::vector<int64_t> lines;           // line of each kernel's row
  // dynamic_w[k][i]: estimated dynamic power of component i on kernel k at x = 1, W (>= 0).
  std::vector<std::vector<double>> dynamic_w;
  std::vector<double> const_w;     // constant power (x = 1), W
  std::vector<double> static_w;    // static power of the active SMs (x = 1), W
  std::vector<double> idle_w;      // power of the idle SMs (x = 1), W
  std::vector<double> measured_w;  // measured power, W (> 0)
  // AccelWattch form only: the sheet's own modelled total (sim_total_W); empty otherwise.
  std::vector<double> published_total_w;
  // Rows whose published total differs from the sum of their terms at x = 1 by more than
  // 1e-6 relative (the Turing sheets: their totals include a term outside the columns).
  int published_total_mismatches = 0;
  double published_total_max_abs_diff_w = 0.0;

  int num_kernels() const { return static_cast<int>(kernels.size()); }
  int num_components() const { return static_cast<int>(components.size()); }
  // Index of `name` among the components, or -1.
  int FindComponent(const std::string& name) const;
  // Constant + static + idle power of kernel k, W.
  double FixedW(int k) const { return const_w[k] + static_w[k] + idle_w[k]; }
  // The table restricted to the given kernels (indices, in the given order).
  ComponentTable Subset(const std::vector<int>& kernel_indices) const;
};

// Reads either form (see above). Throws InputError when the file cannot be read, the header
// is neither form, a required column is missing or named twice, a row has the wrong number
// of fields, a kernel is named twice, a number is missing or not finite, a power is negative
// or a measured power is not > 0, or there are no rows. A published total that disagrees with
// the component sum is not an error: it is counted in the table and reported in one warning.
ComponentTable ReadComponentTable(const std::string& path);

// The table in the tidy form (kernel,measured_w,const_w,static_w,idle_w,<component>_w...),
// numbers with %.17g so that reading it back gives the same doubles. Kernel names are quoted
// (RFC 4180) only when they must be.
std::string ComponentTableToTidyCsv(const ComponentTable& table);

}  // namespace wattcal
