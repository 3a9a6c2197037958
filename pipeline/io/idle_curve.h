// An idle curve: idle board power at locked core clocks, the input of clocks/idle_constant.h's
// fit.
#pragma once

#include <string>
#include <vector>

namespace wattcal {

struct IdleCurve {
  std::string path;
  std::vector<double> f_core_mhz;  // ascending
  std::vector<double> power_w;
};

// JSON {"<MHz>": W, ...} (EnergAIzer's idle_power.json) or CSV f_core_<unit>,power_<unit>
// (units by suffix from io/units.h: f_core_mhz, f_core_ghz, power_w, power_mw ...);
// InputError naming file, line and field.
IdleCurve ReadIdleCurve(const std::string& path);

}  // namespace wattcal
