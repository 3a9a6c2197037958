// Microbenchmark sweeps for AccelWattch's constant, static and idle power models (MICRO'21
// AccelWattch §4): one measured power per (benchmark, active SMs, lanes per warp, core clock).
//
// A sweep file is a CSV with a header; columns are matched case-insensitively, others ignored:
//   benchmark  (or kernel)                name of the row; rows sharing benchmark, active SMs
//                                         and lanes form one curve over the core clock
//   power_w    (or power_mw, power_kw, mean_power_w, mean_power_mw)   measured power
//   f_core_mhz (or f_core_ghz, f_core_khz) core clock
//   category                              instruction-mix category (AccelWattch §4.5), optional
//   active_sms, lanes_per_warp            optional; empty or absent = unknown (all SMs, a
//                                         full warp: the stages resolve it)
// wattcal-ingest's KERNELS.csv (kernel, launches, ..., mean_power_w, f_core_mhz, ...) is such
// a file: rows with launches = 0 (all launches excluded) are skipped and counted.
//
// A description (optional) adds what a harness knew about each row: a CSV keyed by `kernel`
// (or `benchmark`) with any of benchmark, category, active_sms, lanes_per_warp, f_core_mhz,
// f_mem_mhz (or _ghz, _khz).
// Every sweep row's name must appear in it exactly once. Where both give a core clock, the
// sweep file's (measured) one wins; a mismatch of more than 1% is reported in one warning.
// Units come from the column names (mW/W/kW, kHz/MHz/GHz) and are never guessed.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wattcal {

// The nine instruction-mix categories of AccelWattch §4.5, in the paper's order:
// int_add, int_mul, int, int_fp, int_fp_dp, int_fp_sfu, int_fp_tex, int_fp_tensor, light.
const std::vector<std::string>& MixCategories();

// True when `name` (already lower-case) is one of MixCategories().
bool IsMixCategory(const std::string& name);

struct SweepPoint {
  // Row name in the sweep file (kernel or benchmark column).
  std::string kernel;
  // Curve name: the description's benchmark, else the row name.
  std::string benchmark;
  // One of MixCategories(), or "" when none is given.
  std::string category;
  // Active SMs and lanes per warp; 0 = unknown.
  int active_sms = 0;
  int lanes_per_warp = 0;
  // Core clock, MHz.
  double f_core_mhz = 0.0;
  // Measured power, W.
  double power_w = 0.0;
  // 1-based line in the sweep file.
  int64_t line = 0;
};

struct Sweep {
  std::string path;
  std::string description_path;
  std::vector<SweepPoint> points;
  // Rows skipped because their kernel had no usable launch (KERNELS.csv launches = 0).
  int64_t skipped_rows = 0;
};

// One row of a description (wattcal-synth's sweep.csv is one).
struct SweepDescriptionRow {
  // The key: the kernel (or benchmark) column.
  std::string kernel;
  // The benchmark column, else the key.
  std::string benchmark;
  // One of MixCategories(), or "".
  std::string category;
  // Active SMs and lanes per warp; 0 = not given.
  int active_sms = 0;
  int lanes_per_warp = 0;
  // Core and memory clocks, MHz; NaN = not given.
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_mem_mhz = std::numeric_limits<double>::quiet_NaN();
  // 1-based line in the description.
  int64_t line = 0;
};

// Reads a description in file order. Throws InputError naming FILE:LINE and the field for a
// missing key column, an empty or repeated key, a bad count, clock or category, or a file
// without rows.
std::vector<SweepDescriptionRow> ReadSweepDescription(const std::string& path);

// Reads a sweep (and its description, "" for none). Throws InputError naming FILE:LINE and the
// field for a missing column, a bad number, an unknown category, a row the description does
// not describe, or a file without rows.
Sweep ReadSweep(const std::string& path, const std::string& description_path = "");

// What the stages' JSON outputs record of their sweep: {path, description_path, rows,
// skipped_rows}.
void to_json(nlohmann::json& j, const Sweep& sweep);

// The `p_const_w` of a wattcal-constant output (throws InputError naming the file and field).
double ReadConstantPowerW(const std::string& constant_json_path);

}  // namespace wattcal
