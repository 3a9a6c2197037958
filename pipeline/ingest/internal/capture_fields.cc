#include "ingest/internal/capture_fields.h"

#include <fmt/format.h>

#include "ingest/field_log.h"
#include "ingest/kernel_energy.h"
#include "util/errors.h"
#include "util/nan.h"

namespace wattcal {
namespace capture_internal {

GpuDescription FieldSetDescription(const FieldSet& set) {
  GpuDescription gpu;
  gpu.path = set.path;
  // The GPU's name without the set's source ("h100-sxm-gpm" -> "h100-sxm"), so that it is
  // compared with the capture's GPU as the ncu description of the same GPU is.
  gpu.name = set.name;
  for (const char* suffix : {"-gpm", "-dcgm"}) {
    const std::string s(suffix);
    if (gpu.name.size() > s.size() &&
        gpu.name.compare(gpu.name.size() - s.size(), s.size(), s) == 0) {
      gpu.name.resize(gpu.name.size() - s.size());
    }
  }
  gpu.default_core_mhz = set.default_core_mhz;
  gpu.default_mem_mhz = set.default_mem_mhz;
  gpu.sources = set.sources;
  for (const FieldComponent& c : set.components) {
    ComponentCounters counters;
    counters.component = c.component;
    counters.domain = c.domain;
    gpu.components.push_back(counters);
  }
  return gpu;
}

std::vector<uint32_t> JoinFieldLog(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                                   const FieldSet& set, int min_samples,
                                   std::vector<std::string>* inputs,
                                   std::vector<CaptureWindow>* out) {
  if (f.fields.empty()) {
    throw InputError(
        f.dir, 0, "",
        fmt::format("no gpm_fields.csv: the field set {} reads the capture's field log "
                    "(record it with wattcal-capture --fields gpm), or give an ncu GPU "
                    "description (microbench_specs/gpus/*.json) for its counters",
                    set.path.empty() ? set.name : set.path));
  }
  if (set.source != FieldSource::kGpm) {
    throw InputError(set.path, 0, "source",
                     fmt::format("a {} field set: a capture's field log ({}) holds NVML GPM "
                                 "metrics; read it through a GPM set "
                                 "(microbench_specs/gpus/fields/*_gpm.json)",
                                 FieldSourceName(set.source), f.fields));
  }
  const FieldLog log = ReadFieldLog(f.fields);
  inputs->push_back(f.fields);
  const std::vector<std::string> wanted = set.Fields();
  for (const std::string& field : wanted) {
    if (log.FieldIndex(field) >= 0) continue;
    const KnownField* known = FindKnownField(field);
    throw InputError(
        f.fields, 1, field,
        fmt::format("the header has no column for this field, which {} reads{}: record "
                    "it (wattcal-capture --fields gpm records every GPM metric)",
                    set.path.empty() ? set.name : set.path,
                    known != nullptr ? fmt::format(" (GPM metric id {})", known->id) : ""));
  }
  const FieldSeries& series = log.series.front();
  std::vector<uint32_t> flags(windows.size(), 0);
  for (size_t i = 0; i < windows.size(); ++i) {
    const KernelWindow& w = windows[i];
    const FieldWindowMeans means =
        AverageFieldWindow(log, series, w.start_s, w.end_s, wanted, min_samples);
    CaptureWindow& c = (*out)[i];
    c.counters_path = f.fields;
    c.counters_kernel = "field log";
    c.counters_launches = means.samples;
    c.counters_time_s = w.end_s - w.start_s;
    for (size_t k = 0; k < series.time_s.size(); ++k) {
      if (series.time_s[k] >= w.start_s) {
        c.counters_line = series.line[k];
        break;
      }
    }
    std::vector<std::string> missing;
    c.utilisations = FieldUtilisations(set, means.means, &missing);
    if (means.samples == 0) {
      throw InputError(
          f.windows, w.line, "kernel",
          fmt::format("{}: no field sample in {} inside the window [{:.6f}, {:.6f}] s (its settled "
                      "span; the log runs [{:.6f}, {:.6f}] s): no utilisation to give it",
                      w.kernel, f.fields, w.start_s, w.end_s,
                      series.time_s.empty() ? kNaN : series.time_s.front(),
                      series.time_s.empty() ? kNaN : series.time_s.back()));
    }
    if (means.samples < min_samples) flags[i] |= kFlagFewFieldSamples;
  }
  return flags;
}

}  // namespace capture_internal
}  // namespace wattcal
