// What ingest/capture.cc flags or refuses in a capture beyond joining its power and counters:
// the capture's own record (capture.json), the toggle sweep's windows, idle windows over a
// benchmark, one workload's differently marked recordings, and optional metrics some exports
// lack. Internal to ingest/.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ingest/capture.h"
#include "ingest/kernel_windows.h"

namespace wattcal {
namespace capture_internal {

// DIR/capture.json (wattcal-capture's record of the recording), parsed: null when the directory
// has none. A file that cannot be read or is not JSON (InputError naming its line), or whose
// value is not a JSON object, is an InputError: it is never taken for absent.
nlohmann::json ReadCaptureJson(const std::string& dir);

// The toggle sweep's windows (microbench/suite_plan.cc names them toggle_<unit>_<pct, 3 digits>
// with an optional _b<blocks per SM>) among windows[first...] of capture `dir`, whose share of
// toggling bits differs from the data of the suite's other benchmarks, are flagged data_toggle
// with one warning naming them. The windows are found by their names in windows.csv; the
// suite's data by capture.json's options.data (random 50%, zeros 0%). An applications
// recording (capture.json "kind") flags nothing. Without capture.json (or with another tool's)
// the data is taken as wattcal-capture's default, random, and a warning says so; an
// options.data other than random or zeros is an InputError.
void FlagToggleSweep(const std::string& dir, const std::string& windows_path,
                     std::vector<CaptureWindow>* windows, size_t first,
                     std::vector<std::string>* warnings);

// Idle windows[first...] that overlap any of `benchmarks` (windows.csv) measure the benchmark's
// power, not the idle GPU's: flagged overlap, each named with the benchmark's line.
void FlagIdleOverBenchmarks(const std::vector<KernelWindow>& benchmarks,
                            const std::string& windows_path, const std::string& idle_path,
                            const std::vector<KernelWindow>& idle,
                            std::vector<CaptureWindow>* windows, size_t first,
                            std::vector<std::string>* warnings);

// One workload whose windows come from a marked and an unmarked recording (windows.csv's mark
// column: a mark name, or empty for the whole run, start-up included) mixes two measurements of
// different work: an InputError naming the first window of each kind. Windows marked with
// different names (an application's phases) are one workload, as before.
void RefuseMixedMarks(const std::vector<KernelWindow>& windows, const std::string& windows_path);

// The description's optional metrics over every export read: those absent from every launch
// of some export (metric -> those exports, each once, in order) and those some export has.
struct OptionalMetrics {
  std::map<std::string, std::vector<std::string>> absent;
  std::set<std::string> present;
};

// An optional component whose metric no export has is left out: its column goes from every
// window, the description loses it, and a warning names it with the metric and file. One whose
// metric only some exports lack keeps its term: the windows of those exports (NaN utilisation)
// count it as 0, flagged metric_absent (left out of training), and a warning names the metric,
// the exports and their workloads.
void ResolveOptionalMetrics(const OptionalMetrics& metrics, CaptureReport* r);

}  // namespace capture_internal
}  // namespace wattcal
