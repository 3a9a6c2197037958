// kNaN: the library's one spelling of "no value" in a double that is a measured or fitted number
// (a mean over no samples, a correlation of a constant, an unknown clock). A value that an option
// or a file may leave unset is a std::optional instead (issue 37, item 2).
#pragma once

#include <limits>

namespace wattcal {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace wattcal
