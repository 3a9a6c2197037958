#include "util/csv_field.h"

#include <fmt/format.h>

#include <cmath>

namespace wattcal {

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string CsvNumber(double value) {
  return std::isfinite(value) ? fmt::format("{:.9g}", value) : std::string();
}

std::string CsvNumber(std::optional<double> value) {
  return value ? CsvNumber(*value) : std::string();
}

}  // namespace wattcal
