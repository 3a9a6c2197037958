// The options the idle-SM fit (idle_power.h) and the static-power fit (static_power.h) share, and
// their one check: both read a sweep at one core clock, given the constant power wattcal-constant
// found and the GPU's SM count.
#pragma once

#include <string>

namespace wattcal {

// Checks p_const_w (finite, >= 0), the clock `clock_field` = f_core_mhz (>= 0; 0: the highest
// clock of the sweep), f_tolerance_mhz (>= 0) and num_sms (>= 0; 0: from the sweep). The first
// rule broken is written to `*error`, naming its field; false then.
bool CheckSweepClockOptions(double p_const_w, const char* clock_field, double f_core_mhz,
                            double f_tolerance_mhz, int num_sms, std::string* error);

}  // namespace wattcal
