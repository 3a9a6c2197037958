// Human-readable summaries of a model for the terminal.
#pragma once

#include <string>

#include "model/power_model.h"

namespace wattcal {

// Solver outcome, training fit, coefficients with their units and the voltage curves.
std::string FormatModelSummary(const PowerModel& model);

// Lower-case, underscore-separated form of a component name for column names
// ("SP ADD" -> "sp_add").
std::string ColumnSafeName(const std::string& name);

}  // namespace wattcal
