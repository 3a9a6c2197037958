#include "ingest/internal/capture_join.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "util/errors.h"

namespace wattcal {
namespace capture_internal {
namespace {

std::string Triple(const std::array<int64_t, 3>& t) {
  return fmt::format("({}, {}, {})", t[0], t[1], t[2]);
}

int64_t Product(const std::array<int64_t, 3>& t) { return t[0] * t[1] * t[2]; }

// Whether a profiled launch has the window's configuration (unknown parts match).
bool ConfigMatches(const CounterLaunch& launch, const KernelWindow& w) {
  if (!launch.has_launch_config) return true;
  if (w.blocks > 0 && Product(launch.grid) != w.blocks) return false;
  if (w.threads > 0 && Product(launch.block) != w.threads) return false;
  return true;
}

bool WindowHasConfig(const KernelWindow& w) { return w.blocks > 0 || w.threads > 0; }

// A kernel's name as a window would call it: "void k_fp32_fma<8>(P)" -> "fp32_fma".
std::string WindowNameOf(const std::string& kernel) {
  std::string k = kernel.substr(0, kernel.find_first_of("(<"));
  const size_t space = k.rfind(' ');
  if (space != std::string::npos) k = k.substr(space + 1);
  if (k.rfind("k_", 0) == 0) k = k.substr(2);
  return k;
}

}  // namespace

// The raw page is joined to the windows by launch order; launches of one configuration cannot
// tell a missing launch from the next. Names can: a launch named after the next window's
// benchmark, joined to a window with another name, means the window's own launch is missing (or,
// named after the previous one, that a launch is extra). Names that never match (an
// application's windows) say nothing, and nothing is refused for them.
void RefuseShiftedJoin(const std::vector<CounterLaunch>& launches, size_t first,
                       const std::vector<KernelWindow>& windows, const std::string& windows_path,
                       const std::string& raw_path) {
  const size_t n = std::min(launches.size() - first, windows.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string name = WindowNameOf(launches[first + i].kernel);
    if (name == windows[i].kernel) continue;
    const bool next = i + 1 < windows.size() && name == windows[i + 1].kernel;
    const bool previous = i > 0 && name == windows[i - 1].kernel;
    if (!next && !previous) continue;
    const KernelWindow& w = windows[i];
    throw InputError(
        windows_path, w.line, "kernel",
        fmt::format(
            "window {} would be joined to launch {}:{} ({}), which is the {} window's kernel ({}): "
            "{} (launches are joined to windows in order)",
            w.kernel, raw_path, launches[first + i].line, launches[first + i].kernel,
            next ? "next" : "previous", name,
            next ? fmt::format(
                       "window {} has no profiled launch in {} (profile it, or remove the window)",
                       w.kernel, raw_path)
                 : fmt::format("{} has an extra launch of {} (profile each window's kernel once)",
                               raw_path, name)));
  }
}

// The raw page is joined by launch order: the windows must be in time order.
void RefuseUnsortedWindows(const std::vector<KernelWindow>& windows,
                           const std::string& windows_path, const std::string& raw_path) {
  for (size_t i = 1; i < windows.size(); ++i) {
    if (windows[i].start_s < windows[i - 1].start_s) {
      throw InputError(
          windows_path, windows[i].line, "start_us",
          fmt::format("{} starts at {:.6f} s, before {} on line {} ({:.6f} s): the windows "
                      "are not in time order, and {} is joined to them in launch order (sort "
                      "the windows by their start, as the profiled launches ran)",
                      windows[i].kernel, windows[i].start_s, windows[i - 1].kernel,
                      windows[i - 1].line, windows[i - 1].start_s, raw_path));
    }
  }
}

// Set-up launches: the leading ones whose configuration is not the first window's, while at
// least one launch per window but one (a missing launch is named later) remains. Each is named
// in `dropped`; returns the index of the first window's launch.
size_t SkipSetupLaunches(const std::vector<CounterLaunch>& launches,
                         const std::vector<KernelWindow>& windows, const std::string& windows_path,
                         std::vector<std::string>* dropped) {
  size_t first = 0;
  if (WindowHasConfig(windows[0])) {
    while (first < launches.size() && launches.size() - first >= windows.size() &&
           !ConfigMatches(launches[first], windows[0])) {
      ++first;
    }
  }
  for (size_t i = 0; i < first; ++i) {
    const CounterLaunch& l = launches[i];
    dropped->push_back(fmt::format(
        "{}:{}: {} (grid {} x block {}): a set-up launch before the first window ({}:{} {})",
        l.path, l.line, l.kernel, Triple(l.grid), Triple(l.block), windows_path, windows[0].line,
        windows[0].kernel));
  }
  return first;
}

// Refuses a raw page whose launches after `first` are not one per window: one launch short
// names the window it belongs to, the first whose configuration the next launch does not match
// while the following window's does (not the launch after); any other count names the counts.
void RefuseLaunchCount(const std::vector<CounterLaunch>& launches, size_t first,
                       const std::vector<KernelWindow>& windows, const std::string& windows_path,
                       const std::string& raw_path) {
  const size_t n = launches.size() - first;
  if (n + 1 == windows.size()) {
    for (size_t i = 0, j = first; i < windows.size(); ++i, ++j) {
      const bool last = j >= launches.size();
      if (!last && ConfigMatches(launches[j], windows[i])) continue;
      if (!last && !(i + 1 < windows.size() && ConfigMatches(launches[j], windows[i + 1]))) break;
      throw InputError(
          windows_path, windows[i].line, "kernel",
          fmt::format("window {} ({} blocks of {} threads) has no profiled launch in {}: {} "
                      "launches for {} windows, and {} is the first the launches' order and "
                      "configurations leave out (profile it, or remove the window)",
                      windows[i].kernel, windows[i].blocks, windows[i].threads, raw_path, n,
                      windows.size(), windows[i].kernel));
    }
  }
  if (n != windows.size()) {
    throw InputError(
        raw_path, 0, "",
        fmt::format("{} profiled launches{} but {} has {} windows: counters are joined to "
                    "windows one launch per window, in order (profile each window's kernel "
                    "once, e.g. ncu --launch-count 1 per benchmark, or remove the extra rows)",
                    n, first > 0 ? fmt::format(" (after {} set-up launches)", first) : "",
                    windows_path, windows.size()));
  }
}

// Refuses launch l, the i-th after the set-up ones, when its configuration is not its window w's.
void RefuseConfigMismatch(const CounterLaunch& l, size_t i, const KernelWindow& w,
                          const std::string& windows_path) {
  if (ConfigMatches(l, w)) return;
  throw InputError(
      l.path, l.line, "Grid Size",
      fmt::format("launch {} of {} has grid {} x block {} ({} blocks of {} threads), but "
                  "its window {}:{} ({}) says {} blocks of {} threads: the rows and the "
                  "windows are not in the same order, or a launch is missing",
                  i + 1, l.kernel, Triple(l.grid), Triple(l.block), Product(l.grid),
                  Product(l.block), windows_path, w.line, w.kernel, w.blocks, w.threads));
}

}  // namespace capture_internal
}  // namespace wattcal
