// Marked windows: a program run by `wattcal-capture --app` may mark the parts of its run
// that matter (its steady state, not its start-up). wattcal-capture sets WATTCAL_MARKS=FILE
// in the program's environment; the program appends one line when a window begins and one
// when it ends, with the wall clock (CLOCK_REALTIME, the NVML sampler's clock) in integer
// nanoseconds since the Unix epoch:
//
//   begin steady 1764242045123456789
//   end steady 1764242047123456789
//
// include/wattcal/marks.h (C++, header-only) and python/wattcal_marks.py (a context manager)
// write exactly this. Blank lines and lines starting with '#' are ignored. A name is one word
// (no white space). Windows do not nest: a `begin` while another window is open, an `end`
// without its `begin` (or naming another window), an `end` before its `begin`, and a `begin`
// never ended are errors naming the file and the line.
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
};

// Reads the windows of a marks file, in file order. A missing or empty file has none.
// Throws InputError (FILE:LINE: message) for what breaks the rules above.
std::vector<MarkedWindow> ReadMarks(const std::string& path);

}  // namespace wattcal::capture
