// The raw page's join (ingest/capture.cc): the launches of ncu_raw.csv are joined to a capture's
// windows one launch per window, in launch order. These find the set-up launches before the
// first window and refuse a join that the windows' order, the launches' count, names or
// configurations show to be wrong, each naming the window or launch. Internal to ingest/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ingest/counters.h"
#include "ingest/kernel_windows.h"

namespace wattcal {
namespace capture_internal {

// The windows must be in time order, as the profiled launches ran.
void RefuseUnsortedWindows(const std::vector<KernelWindow>& windows,
                           const std::string& windows_path, const std::string& raw_path);

// Set-up launches: the leading ones whose configuration is not the first window's, while at
// least one launch per window but one (a missing launch is named later) remains. Each is named
// in `dropped`; returns the index of the first window's launch.
size_t SkipSetupLaunches(const std::vector<CounterLaunch>& launches,
                         const std::vector<KernelWindow>& windows, const std::string& windows_path,
                         std::vector<std::string>* dropped);

// A launch from `first` on named after the next (or previous) window's benchmark, joined to a
// window of another name: a missing (or extra) launch.
void RefuseShiftedJoin(const std::vector<CounterLaunch>& launches, size_t first,
                       const std::vector<KernelWindow>& windows, const std::string& windows_path,
                       const std::string& raw_path);

// Launches from `first` on that are not one per window.
void RefuseLaunchCount(const std::vector<CounterLaunch>& launches, size_t first,
                       const std::vector<KernelWindow>& windows, const std::string& windows_path,
                       const std::string& raw_path);

// Launch l, the i-th after the set-up ones, when its configuration is not its window w's.
void RefuseConfigMismatch(const CounterLaunch& l, size_t i, const KernelWindow& w,
                          const std::string& windows_path);

}  // namespace capture_internal
}  // namespace wattcal
