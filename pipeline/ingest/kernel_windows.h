// Kernel launch windows: when each kernel launch started and ended, to cut the power log into
// per-launch energies (Arafa et al.'s MTSM: only the readings inside the exact kernel window).
//
// File format: CSV with a header, one row per launch (a kernel may appear many times):
//
//   kernel,start_us,end_us
//   fadd_block,1693491403874000,1693491404174000
//
// Columns, matched case-insensitively (others are ignored):
//   kernel (or name, kernel_name)  the kernel's name; quote it when it holds commas.
//   start_<unit>, end_<unit>       unit ns, us, ms or s: numbers in the power log's time base
//                                  (for nvidia-smi logs: Unix epoch, UTC).
//   duration_<unit>                instead of end_<unit>: end = start + duration.
//   start, end                     nvidia-smi style timestamps `YYYY/MM/DD HH:MM:SS.mmm` (local
//                                  time; utc_offset_h is subtracted as for the log).
//   launches, blocks, threads      optional whole numbers >= 1 (a capture directory's windows.csv):
//                                  kernel launches in the window, and the launch configuration
//                                  (thread blocks in the grid, threads per block) that
//                                  wattcal-ingest --capture checks against the profiler's Grid
//                                  Size and Block Size. Empty cells are 0 (unknown).
//   mark                           optional (an applications capture's windows.csv): the mark
//                                  the window was cut at, empty for a run recorded unmarked.
//   steps                          optional (the same): the steps the program reported on the
//                                  window's end mark, a whole number >= 1; empty when unknown.
// Lines starting with '#' are comments. An end before its start, a missing column, an empty
// kernel name or a value that is not a number or timestamp is an InputError naming FILE:LINE
// and the column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

// One kernel launch.
struct KernelWindow {
  // Kernel name as written in the windows file.
  std::string kernel;
  // Launch start, seconds, in the power log's time base.
  double start_s = 0.0;
  // Launch end, seconds (>= start_s).
  double end_s = 0.0;
  // The same times in integer nanoseconds, read exactly from the file (a double holds epoch
  // seconds to ~0.24 us only): durations are integer differences, so a 1 us window at epoch
  // 1.8e9 s lasts exactly 1e-6 s. StartNs()/EndNs() fall back to start_s/end_s when a caller
  // moved those (a settle time) or built the window without them.
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // 1-based line of the windows file, for error messages.
  int64_t line = 0;
  // Optional columns (0 = not given): launches inside the window, thread blocks per launch
  // (the grid's product) and threads per block (the block's product).
  int64_t launches = 0;
  int64_t blocks = 0;
  int64_t threads = 0;
  // The `mark` column (wattcal-capture --app): the mark that cut the window, "" for a run
  // recorded unmarked (the whole run) or a file without the column.
  std::string mark;
  // The `steps` column (wattcal-capture --app): the steps the program ran in the window, 0 when
  // not given.
  int64_t steps = 0;
};

// The window's start and end in integer nanoseconds: start_ns/end_ns when they agree with
// start_s/end_s to 1 us, else start_s/end_s rounded to the nanosecond.
int64_t StartNs(const KernelWindow& w);
int64_t EndNs(const KernelWindow& w);
// EndNs(w) - StartNs(w) in seconds: exact to the nanosecond.
double DurationS(const KernelWindow& w);

// Moves the window's start `delay_s` later (a settle time), in seconds and in integer
// nanoseconds alike, so that DurationS stays exact.
void DelayWindowStart(KernelWindow* w, double delay_s);

// Reads every window of `path` in file order. `utc_offset_h`: hours the logging machine's clock
// was ahead of UTC, subtracted from nvidia-smi style timestamps in `start`/`end` columns.
std::vector<KernelWindow> ReadKernelWindows(const std::string& path, double utc_offset_h = 0.0);

}  // namespace wattcal
