// One CSV field as RFC 4180 writes it: quoted (with inner quotes doubled) only when it holds
// a comma, a quote or a line break. Shared by every writer of wattcal's CSV outputs.
#pragma once

#include <optional>
#include <string>

namespace wattcal {

std::string CsvField(const std::string& text);

// A number for a CSV cell: "%.9g", or an empty cell when it is not finite (unknown).
std::string CsvNumber(double value);
// The same for a value that may be absent: an empty cell when unset.
std::string CsvNumber(std::optional<double> value);

}  // namespace wattcal
