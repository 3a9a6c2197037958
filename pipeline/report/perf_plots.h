// The run-time and DVFS figures, drawn by gnuplot through gnuplot-iostream with the session
// every figure shares (report/gnuplot_figure.h): PNG (pngcairo) and SVG, 800x600, data inline
// in the script, so the same inputs give byte-identical files. Each function writes exactly the
// two paths it is given (callers pass OutputSet temporaries), returns after gnuplot has closed
// them, throws std::runtime_error carrying gnuplot's output when gnuplot is missing or fails
// (neither file is left behind) and std::invalid_argument for inputs that cannot be drawn.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "perf/dvfs_choice.h"
#include "perf/perf_validation.h"

namespace wattcal {

// MAPE (%) against target core frequency, one line per run-time model (CRISP Fig. 8, right),
// on a logarithmic y axis (errors span orders of magnitude across models).
void WritePerfMapePlot(const PerfValidationReport& validation, const std::string& title,
                       const std::string& png_path, const std::string& svg_path);

// One kernel's run time, normalised to its time at the base frequency, against core frequency:
// every model's prediction as a line and the actual times as points (CRISP Fig. 10).
void WritePerfTimesPlot(const PerfValidationReport& validation, const std::string& kernel,
                        double base_time_s, const std::string& png_path,
                        const std::string& svg_path);

// One kernel's energy (left axis) and run time (right axis) against core frequency as one
// run-time model predicts them, the true curves dashed when known, with the chosen pair and the
// true optimum marked.
void WriteDvfsPlot(const DvfsChoice& choice, DvfsObjective objective, const std::string& png_path,
                   const std::string& svg_path);

}  // namespace wattcal
