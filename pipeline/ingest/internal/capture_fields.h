// A capture's utilisations from its field log (wattcal-capture --fields gpm writes gpm_fields.csv)
// through a field set (io/field_set.h), instead of from Nsight Compute counters: each field is
// averaged over each window, as the window's power is (capture_fields.cc). Internal to ingest/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/capture.h"
#include "ingest/internal/capture_files.h"
#include "ingest/kernel_windows.h"
#include "io/field_set.h"

namespace wattcal {
namespace capture_internal {

// The GPU description a field set makes: its name (less a "-gpm"/"-dcgm" suffix), default clocks and components (names and
// domains), no ncu metric: what CaptureReport and its corpus need of a description.
GpuDescription FieldSetDescription(const FieldSet& set);

// Per window `windows[i]` (settled: the span its power is measured over): the mean of each field
// of `set` over the field log's samples inside it, its component utilisations into `out[i]`, the
// log as its counters (path, first sample's line, "field log", the samples as launches, the
// window's length as time). Returns per window kFlagFewFieldSamples when fewer than `min_samples`
// samples lie inside it. A window with none, a capture without gpm_fields.csv, or a log without a
// column the set reads is an InputError naming the file (windows.csv's line; line 1, the header,
// and the field).
std::vector<uint32_t> JoinFieldLog(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                                   const FieldSet& set, int min_samples,
                                   std::vector<std::string>* inputs,
                                   std::vector<CaptureWindow>* out);

}  // namespace capture_internal
}  // namespace wattcal
