// The capture's time base: wall-clock microseconds since the Unix epoch (the power log, the
// windows and the marks all stamp with it, so their times compare across files and processes).
#pragma once

#include <chrono>
#include <cstdint>

namespace wattcal {
namespace capture {

inline int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace capture
}  // namespace wattcal
