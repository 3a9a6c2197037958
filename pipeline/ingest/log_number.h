// The number parser every power log cell goes through (ingest/power_log.cc), exposed for the
// test that holds it to std::from_chars and strtod (tests/csv_fast_path_test.cc).
#pragma once

namespace wattcal {

// The number at the start of [begin, end) as the power log reader parses every cell: the same
// double and the same end (*stop) as std::from_chars (and so as strtod, both correctly
// rounded), with a fast path for plain decimals of at most 15 digits (m / 10^k, k <= 15, both
// exact doubles, so the quotient is correctly rounded). False when no number starts there.
bool ParseLogNumberPrefix(const char* begin, const char* end, double* value, const char** stop);

}  // namespace wattcal
