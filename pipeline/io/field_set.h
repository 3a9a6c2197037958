// Field sets: GPU descriptions whose components are made of the counters a cluster already
// collects, DCGM profiling fields (dcgm_fields.h, DCGM_FI_PROF_*) or NVML GPM metrics (nvml.h,
// NVML_GPM_METRIC_*), instead of Nsight Compute metrics. Same component model (TPDS Eq. 9 at
// fixed clocks, TPDS Eqs. 4-6 under DVFS): a field set only changes where each component's
// utilisation comes from.
//
//   ratio field (DCGM PROF ratios 0..1, GPM percentages 0..100):
//       U = sum of the component's fields, each as a fraction (GPM values / 100)
//   rate field (PCIe / NVLink bytes per second; GPM gives MiB/s, converted to bytes):
//       U = sum of the component's fields / peak_bytes_per_s
//
// A field's value over a window is the mean of its samples in the window (ingest/field_log.h).
// The files are microbench_specs/gpus/fields/*.json; docs/fields.md gives each field, what it
// measures and the component it makes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/corpus.h"

namespace wattcal {

// Which tool's counters a field set reads.
enum class FieldSource { kDcgm, kGpm };

// "dcgm" or "gpm".
const char* FieldSourceName(FieldSource source);

// How a field's value becomes a utilisation.
enum class FieldScale {
  kRatio,    // DCGM PROF ratio, 0..1
  kPercent,  // GPM utilisation, 0..100
  kRate,     // bytes per second (DCGM): divided by the component's peak_bytes_per_s
  kRateMib,  // MiB per second (GPM): x 1048576, divided by the component's peak_bytes_per_s
  kDevice,   // a device reading (power W, clock MHz, temperature C): no component's field
};

// One field wattcal knows, with its id and names in every tool that prints it.
struct KnownField {
  FieldSource source;
  // DCGM field id (dcgm_fields.h) or GPM metric id (nvml.h nvmlGpmMetricId_t).
  int id;
  // The canonical name: DCGM_FI_PROF_SM_ACTIVE, NVML_GPM_METRIC_SM_UTIL.
  const char* name;
  // The column name `dcgmi dmon` prints (SMACT); "" for GPM metrics.
  const char* dmon_tag;
  FieldScale scale;
  // What the field measures, in the header's own words (docs/fields.md gives the source).
  const char* meaning;
};

// Every field wattcal knows, in id order: the DCGM device readings a field log carries beside
// the profiling fields (100 SMCLK, 101 MMCLK, 150 TMPTR, 155 POWER, 157 POWINST), DCGM PROF
// 1001-1016, then GPM 1-21 and 60-61.
const std::vector<KnownField>& KnownFields();

// The field a name, dmon tag or id names ("DCGM_FI_PROF_SM_ACTIVE", "SMACT", "1002",
// "NVML_GPM_METRIC_SM_UTIL", "gpm:2"); names and tags are matched without regard to case.
// nullptr when none.
const KnownField* FindKnownField(std::string_view text);

// One modelled component and the fields behind it.
struct FieldComponent {
  // Component name as in the model layout.
  std::string component;
  // "core" or "mem": the domain whose V-F scales it.
  std::string domain = "core";
  // Canonical field names (KnownField::name), summed.
  std::vector<std::string> fields;
  // Rate fields only: the peak, bytes per second, that makes U = 1.
  double peak_bytes_per_s = 0.0;
};

struct FieldSet {
  // File the set was read from ("" when built in code); for error messages.
  std::string path;
  std::string name;
  FieldSource source = FieldSource::kDcgm;
  // Default (reference) clocks, MHz.
  double default_core_mhz = 0.0;
  double default_mem_mhz = 0.0;
  // The modelled components, core first, then mem (model order).
  std::vector<FieldComponent> components;
  // Where each number and mapping came from: field path -> citation.
  std::map<std::string, std::string> sources;

  // The model layout these components make (domains "core" and, if any, "mem").
  Layout ToLayout() const;
  // Every field the set reads, once each, in component order.
  std::vector<std::string> Fields() const;
  // False, with a sentence naming the JSON path, the value and the rule, when invalid.
  bool Check(std::string* error) const;
};

// Reads a field set (throws InputError naming the file and the JSON field). Field names in the
// file may be names, dmon tags or ids (FindKnownField); they are stored canonical.
FieldSet ReadFieldSet(const std::string& path);

// The GPU a field set's name names, its source words left out ("h100-sxm-gpm" -> "h100-sxm",
// "h200-sxm-dcgm" -> "h200-sxm"), for io/gpu_description.h DescriptionDescribes.
std::string FieldSetGpuName(const FieldSet& set);

// Whether the JSON file at `path` is a field set rather than an ncu GPU description: an object
// with a "source" key (io/gpu_description.h's descriptions have none). Throws InputError when the
// file is not JSON.
bool IsFieldSetFile(const std::string& path);

// Per component utilisation from a window's mean field values (canonical name -> mean, in the
// field's own unit: ratio, percent or bytes per second). A field absent from `means` or NaN
// makes its component NaN and is listed once in `missing` (in component order).
std::vector<double> FieldUtilisations(const FieldSet& set,
                                      const std::map<std::string, double>& means,
                                      std::vector<std::string>* missing);

}  // namespace wattcal
