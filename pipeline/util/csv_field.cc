#include "util/csv_field.h"

#include <fmt/format.h>

#include <cmath>

namespace wattcal {

namespace {

// `text` in quotes, its quotes doubled.
std::string Quoted(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  return Quoted(text);
}

std::string CsvFieldKeepingEdgeSpaces(const std::string& text) {
  const bool edge_space = !text.empty() && (text.front() == ' ' || text.back() == ' ');
  return edge_space ? Quoted(text) : CsvField(text);
}

std::string CsvNumber(double value) {
  return std::isfinite(value) ? fmt::format("{:.9g}", value) : std::string();
}

std::string CsvNumber(std::optional<double> value) {
  return value ? CsvNumber(*value) : std::string();
}

std::string CsvFixed(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : std::string();
}

std::string CsvExactNumber(double value) {
  return std::isfinite(value) ? ExactNumber(value) : std::string();
}

std::string ExactNumber(double value) { return fmt::format("{:.17g}", value); }

}  // namespace wattcal
