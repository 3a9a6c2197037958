#include "accelwattch/sweep_clock_options.h"

#include <cmath>

#include "util/option_rule.h"

namespace wattcal {

bool CheckSweepClockOptions(double p_const_w, const char* clock_field, double f_core_mhz,
                            double f_tolerance_mhz, int num_sms, std::string* error) {
  if (!std::isfinite(p_const_w) || p_const_w < 0.0) {
    return RejectOption(error,
                        "p_const_w = {} must be finite and >= 0 (give wattcal-constant's output)",
                        p_const_w);
  }
  if (!(f_core_mhz >= 0.0) || !std::isfinite(f_core_mhz)) {
    return RejectOption(error, "{} = {} must be >= 0 (0: the highest clock)", clock_field,
                        f_core_mhz);
  }
  if (!(f_tolerance_mhz >= 0.0) || !std::isfinite(f_tolerance_mhz)) {
    return RejectOption(error, "f_tolerance_mhz = {} must be >= 0", f_tolerance_mhz);
  }
  if (num_sms < 0)
    return RejectOption(error, "num_sms = {} must be >= 0 (0: from the sweep)", num_sms);
  return true;
}

}  // namespace wattcal
