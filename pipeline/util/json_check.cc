#include "util/json_check.h"

#include <cmath>
#include <stdexcept>

namespace wattcal {

namespace {

bool Find(const nlohmann::json& value, const std::string& path, std::string* found) {
  if (value.is_number_float()) {
    if (std::isfinite(value.get<double>())) return false;
    *found = path.empty() ? "/" : path;
    return true;
  }
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (Find(it.value(), path + "/" + it.key(), found)) return true;
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      if (Find(value[i], path + "/" + std::to_string(i), found)) return true;
    }
  }
  return false;
}

}  // namespace

std::string FirstNonFiniteNumber(const nlohmann::json& value) {
  std::string found;
  Find(value, "", &found);
  return found;
}

void CheckJsonNumbersFinite(const nlohmann::json& value) {
  const std::string path = FirstNonFiniteNumber(value);
  if (!path.empty()) {
    throw std::logic_error("a non-finite number at " + path +
                           " of a JSON output (it would be written as null)");
  }
}

}  // namespace wattcal
