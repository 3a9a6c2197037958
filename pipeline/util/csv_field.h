// One CSV field as RFC 4180 writes it: quoted (with inner quotes doubled) only when it holds
// a comma, a quote or a line break. Shared by every writer of wattcal's CSV outputs.
#pragma once

#include <optional>
#include <string>

namespace wattcal {

std::string CsvField(const std::string& text);

// The same, quoted also when it begins or ends with a space, so that a reader that trims its
// fields (CsvReader) reads it back whole.
std::string CsvFieldKeepingEdgeSpaces(const std::string& text);

// A number for a CSV cell: "%.9g", or an empty cell when it is not finite (unknown).
std::string CsvNumber(double value);
// The same for a value that may be absent: an empty cell when unset.
std::string CsvNumber(std::optional<double> value);

// A number for a CSV cell with `decimals` digits after the point ("%.6f" for 6), or an empty cell
// when it is not finite.
std::string CsvFixed(double value, int decimals);

// A number for a CSV cell that reads back as exactly `value` ("%.17g"), or an empty cell when it
// is not finite.
std::string CsvExactNumber(double value);

// `value` as "%.17g", which reads back as exactly `value` (a non-finite one as nan, inf, -inf).
std::string ExactNumber(double value);

}  // namespace wattcal
