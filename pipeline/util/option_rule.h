// One option rule, one statement, as Ceres writes its OPTION_GE lines in solver.cc. An options
// struct's Check(std::string* error) states each rule as
//   if (num_sms < 0) return RejectOption(error, "num_sms = {} must be >= 0", num_sms);
// the message naming the field, its value and the rule it broke.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

namespace wattcal {

// Sets `*error` to the formatted message and returns false (the option is rejected).
template <typename... Args>
bool RejectOption(std::string* error, fmt::format_string<Args...> format, Args&&... args) {
  *error = fmt::format(format, std::forward<Args>(args)...);
  return false;
}

}  // namespace wattcal
