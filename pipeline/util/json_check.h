// Every number wattcal writes into a JSON output is finite: nlohmann::json writes NaN and
// infinity as `null`, which silently turns "the metric could not be computed" into "no value".
// Inputs are bounded (util/bounds.h), so a non-finite number here is a bug: an internal error.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace wattcal {

// The JSON path of the first non-finite number in `value` ("/metrics/mape_pct"), or "" when
// every number is finite.
std::string FirstNonFiniteNumber(const nlohmann::json& value);

// `value` as a JSON number (nlohmann::json or nlohmann::ordered_json), or null when it is NaN or
// infinite: what a non-finite number becomes when written and read back, stated where an output
// means "no value" by it.
template <typename Json = nlohmann::json>
Json FiniteOrNull(double value) {
  return std::isfinite(value) ? Json(value) : Json(nullptr);
}

// Throws std::logic_error (an internal error, exit 4) naming the path of the first non-finite
// number in `value`.
void CheckJsonNumbersFinite(const nlohmann::json& value);

}  // namespace wattcal
