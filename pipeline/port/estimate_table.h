// Per-kernel power estimates split into terms, to carry them to another technology node
// (technology_node.h) and to compare two versions of them (AccelWattch's Pascal estimates
// before and after the authors' scaling).
//
// Two forms are read, recognised from the first column:
//
// * AccelWattch's per_kernel_*.csv (`kernel_id` first; ../shared/datasets/README.md §2):
//   CONSTP_W constant, STATICP_W static, IDLE_COREP_W idle SMs, sim_total_W the sheet's total,
//   hw_total_W measured; error_W and abs_error_W are derived and ignored; every other `*_W`
//   column is a dynamic component (IBP_W -> component "IBP"); columns without a power unit
//   (benchmark, suite, rel_error, ...) are metadata and ignored.
// * the tidy form (`kernel` first), as written by EstimateTableToCsv and read by
//   pipeline/accelwattch's component tables: kernel,measured_w,const_w,static_w,idle_w and
//   one <component>_w per dynamic component (measured_w optional here).
//
// Columns in milliwatts (_mW/_mw) are converted to W. When the sheet's total exceeds the sum
// of its columns (the Turing sheet: +22.90 W on every kernel, its raised board constant), the
// remainder is counted as constant power and kept in remainder_w.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "port/technology_node.h"

namespace wattcal {

enum class EstimateTerm { kDynamic, kStatic, kIdleSm, kConstant, kTotal };

// "dynamic" | "static" | "idle_sm" | "constant" | "total"
const char* EstimateTermName(EstimateTerm term);

struct EstimateTable {
  std::string path;
  // Dynamic component names (unit stripped), in column order.
  std::vector<std::string> components;
  std::vector<std::string> kernels;
  std::vector<int64_t> lines;
  // dynamic_w[k][i]: dynamic power of component i on kernel k, W.
  std::vector<std::vector<double>> dynamic_w;
  std::vector<double> static_w;
  std::vector<double> idle_w;
  // Constant (board) power, W, including remainder_w.
  std::vector<double> const_w;
  // The published total minus the sum of the columns (0 without a total column), W.
  std::vector<double> remainder_w;
  // Measured power, W (> 0); empty when the file has none.
  std::vector<double> measured_w;

  int num_kernels() const { return static_cast<int>(kernels.size()); }
  // Total estimated power of kernel k, W.
  double TotalW(int k) const;
  int FindKernel(const std::string& kernel) const;
};

// Reads either form. Throws InputError naming FILE:LINE and the field for a missing term
// column, a column without a recognised unit in the tidy form, a short row, a repeated kernel,
// a negative or non-finite power, a measured power not > 0, or no rows.
EstimateTable ReadEstimateTable(const std::string& path);

// The table in the tidy form kernel[,measured_w],const_w,static_w,idle_w,<component>_w...,
// numbers with %.17g (reading it back gives the same doubles).
std::string EstimateTableToCsv(const EstimateTable& table);

// Each kernel's total as kernel,power_w (%.17g), e.g. the estimates of wattcal-compare.
std::string EstimateTotalsToCsv(const EstimateTable& table);

// Every term times its factor: dynamic components x dynamic_factor, static x static_factor,
// idle SMs x idle_sm_factor, constant (with the remainder) x board_constant_factor.
EstimateTable ScaleEstimates(const EstimateTable& table, const NodeScaling& scaling);

// How a column changed between two versions of the same estimates: after / before per kernel
// (kernels where `before` is 0 are left out).
struct ColumnFactor {
  std::string column;  // component name, or "static", "idle_sm", "constant", "total"
  EstimateTerm term = EstimateTerm::kDynamic;
  int kernels = 0;  // kernels with a non-zero `before`
  double min = 0.0;
  double max = 0.0;
  double mean = 0.0;
  // True when every ratio equals the mean to 1e-12 relative: one factor was applied.
  bool single_factor() const;
};

// Per column (dynamic components, then static, idle_sm, constant, total). The two tables must
// hold the same kernels and components (InputError naming `after` otherwise).
std::vector<ColumnFactor> DeriveColumnFactors(const EstimateTable& before,
                                              const EstimateTable& after);

// One factor as a JSON row (a std::vector<ColumnFactor> converts to an array of them).
void to_json(nlohmann::ordered_json& j, const ColumnFactor& f);

}  // namespace wattcal
