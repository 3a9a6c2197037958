#include "seed_option.h"

#include <algorithm>
#include <string>

namespace wattcal {

CLI::Validator Seed() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const bool digits =
            !value.empty() && value.size() <= 20 &&
            std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || (value.size() == 20 && value > "18446744073709551615")) {
          return "'" + value + "' is not a seed: a whole number from 0 to 18446744073709551615";
        }
        return std::string();
      },
      "SEED");
}

}  // namespace wattcal
