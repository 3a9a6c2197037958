// windows.csv of an applications capture (wattcal-capture --app): one row per window,
//
//   kernel,start_us,end_us,run,mark,steps
//   gemm,1764242045123456,1764242047123456,1,steady,1379
//
// kernel is the workload's name (IsWorkloadName), start_us and end_us the window in integer
// microseconds of CLOCK_REALTIME (end after start: wattcal-ingest refuses a window of no length),
// run the run of the command it belongs to (>= 1), mark the marked window's name (IsMarkName) or
// empty when the whole run is the window, steps the steps the program reported on the window's
// `end` mark (a whole number >= 1; empty when it gave none). A file of the earlier form, without
// the steps column (kernel,start_us,end_us,run,mark), is read as windows without steps and written
// back with the column. The recorder checks every window against these rules
// before it writes one, and reads an existing file back with them before it adds to it, so that
// it never writes a file its readers (wattcal-ingest --capture, wattcal-predict --capture) refuse.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "capture_writer.h"

namespace wattcal::capture {

struct AppWindow {
  WindowRecord window;
  int run = 0;
  std::string mark;
  // The steps the `end` mark reported, >= 1; 0 when not given.
  int64_t steps = 0;
};

// A workload's name: letters, digits and _ . - +, up to 120, not starting with . or -.
bool IsWorkloadName(const std::string& name);

// "" when `w` keeps the rules above, else what it breaks ("end_us 5 is not after start_us 5").
std::string AppWindowProblem(const AppWindow& w);

// The first two windows of one workload that overlap in time (the later-starting one second),
// as indices into `windows`; {npos, npos} when none do. Overlapping windows would count the same
// energy twice.
std::pair<size_t, size_t> FirstOverlap(const std::vector<AppWindow>& windows);

std::string AppWindowsCsv(const std::vector<AppWindow>& windows);

// Reads one back. Throws InputError naming FILE:LINE (and the column) for another header, a row
// of other than the header's 6 (or 5) fields, a cell that is not wholly a number where one is due (never its numeric
// prefix), a window that breaks the rules above, two windows of one workload that overlap, and a
// last line without its end of line (a file cut short).
std::vector<AppWindow> ReadAppWindows(const std::string& path);

}  // namespace wattcal::capture
