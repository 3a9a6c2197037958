// Marked windows: a program run by `wattcal-capture --app` may mark the parts of its run
// that matter (its steady state, not its start-up). wattcal-capture sets WATTCAL_MARKS=FILE
// in the program's environment; the program appends one line when a window begins and one
// when it ends, with the wall clock (CLOCK_REALTIME, the NVML sampler's clock) in integer
// nanoseconds since the Unix epoch:
//
//   begin steady 1764242045123456789
//   end steady 1764242047123456789 1379
//
// The `end` line may carry a fourth field, the steps (iterations, batches) the program ran
// inside the window: a whole number >= 1 (decimal digits only). Energy per step follows from it
// (wattcal-predict --capture). A step count of 0, with a sign, not a number, or more fields
// after it is an error naming the file and the line.
// include/wattcal/marks.h (C++, header-only) and python/wattcal_marks.py (a context manager)
// write exactly this. Blank lines and lines starting with '#' are ignored. A name is one word
// (IsMarkName: 1 to 200 bytes, no white space or control byte, no ',' or '"', which the mark
// column of windows.csv cannot hold). Windows do not nest: a `begin` while another window is
// open, an `end` without its `begin` (or naming another window), an `end` before its `begin`,
// and a `begin` never ended are errors naming the file and the line. A helper that was given an
// invalid name writes a line `invalid REASON...` instead of the mark: an error naming that line
// and the helper's reason, so that a name the helper refused fails the recording rather
// than leaving the program's whole run as the window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal::capture {

struct MarkedWindow {
  std::string name;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  // 1-based lines of the `begin` and the `end`.
  int64_t begin_line = 0;
  int64_t end_line = 0;
  // The steps the `end` line gives, >= 1; 0 when it gives none.
  int64_t steps = 0;
};

// Whether `name` may name a marked window (the rule above).
bool IsMarkName(const std::string& name);
// The rule, for messages: "one word: 1 to 200 bytes without white space, control bytes, ',' or '\"'".
extern const char* const kMarkNameRule;

// `text` as a whole number: decimal digits only (no sign, space or exponent), that fit an int64.
bool ParseWholeNumber(const std::string& text, int64_t* value);

// Reads the windows of a marks file, in file order. A missing or empty file has none.
// Throws InputError (FILE:LINE: message) for what breaks the rules above.
std::vector<MarkedWindow> ReadMarks(const std::string& path);

}  // namespace wattcal::capture
