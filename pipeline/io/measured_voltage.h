// A GPU's measured core voltage at locked clocks, to lay beside the voltages wattcal estimates
// from power alone (clocks/vf_fit.h). Two shapes, told apart by their first line:
//   - CSV: f_core_mhz,voltage_mv (or _ghz, _v);
//   - the text of `nvidia-smi -q -d VOLTAGE,CLOCK`, one query per locked clock, concatenated:
//     each GPU block's "Clocks" section gives the clock ("SM", else "Graphics", in MHz) and its
//     "Voltage" section the voltage ("Graphics", in mV). A block without either is an error
//     naming its line (query both with -d VOLTAGE,CLOCK).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

struct VoltageReading {
  double f_core_mhz = 0.0;
  double voltage_mv = 0.0;
  int64_t line = 0;
};

// Readings sorted by clock; InputError naming file, line and field.
std::vector<VoltageReading> ReadMeasuredVoltages(const std::string& path);

}  // namespace wattcal
