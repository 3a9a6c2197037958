// Grouping a fleet's capture directories into GPUs (issue 39): which captures are one GPU, which
// description (GPU model) reads each, and which captures cannot be reduced and why. Nothing given
// is dropped silently: every capture ends in a FleetMember, a GPU or a rejected capture.
//
// Rules, in order, per capture directory:
//   empty       not a directory, or no windows.csv, or a windows.csv without windows;
//   incomplete  a wattcal-capture directory (capture.json "format": "wattcal-capture") whose
//               idle_windows.csv has no idle_after window: wattcal-capture writes it after the last
//               benchmark, so the task died (or was killed) mid-suite; also a capture whose
//               windows.csv, idle_windows.csv, power logs, ncu_raw.csv or gpm_fields.csv ends in a
//               line without its end of line (cut while written), or whose windows.csv does not
//               read;
//   other_model its GPU (capture.json, nvidia_smi_power.csv or nvidia_smi_q.txt) matches none of
//               the descriptions (io/gpu_description.h DescriptionDescribes), or none is named;
//   duplicate   captures of one UUID whose benchmarks overlap (a rerun): the capture with the most
//               windows is kept (a tie: the one given first); the other is named with the one
//               kept. Captures of one UUID with disjoint benchmarks are one GPU (the shared H100
//               capture: ubench_random and mix_random).
// A capture without a UUID is a GPU of its own, named by its directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ingest/capture_gpu.h"
#include "io/field_set.h"
#include "io/gpu_description.h"

namespace wattcal {

// What became of one GPU (or one capture that could not be one): the fleet.csv status column.
enum class FleetStatus { kOk, kFailed, kOtherModel, kEmpty, kIncomplete, kDuplicate };
// "ok", "failed", "other_model", "empty", "incomplete", "duplicate".
const char* FleetStatusName(FleetStatus status);

// One --gpu description: an ncu GPU description or a field set (read through its name only here).
struct FleetDescription {
  std::string path;
  // The description (a field set's: the GPU its name names, for matching).
  GpuDescription gpu;
  // The field set, read once, when the file is one (its captures are read through it).
  std::optional<FieldSet> fields;
};

// Reads each --gpu file (InputError as ReadGpuDescription / ReadFieldSet).
std::vector<FleetDescription> ReadFleetDescriptions(const std::vector<std::string>& paths);

// One GPU of the fleet, or one capture that is no GPU of it (status not ok, `model` may be -1).
struct FleetMember {
  std::string uuid;  // "" when the capture names none (FleetMemberName: its directory)
  std::string name;  // the product name, "" when unknown
  int model = -1;    // index of its description, -1 when none
  // Its capture directories, in the order given.
  std::vector<std::string> captures;
  // Every capture has counters of its own (ncu_raw.csv or ncu/).
  bool has_counters = false;
  int windows = 0;  // benchmark windows over its captures
  // The names of its benchmark windows, sorted, once each.
  std::vector<std::string> benchmarks;
  FleetStatus status = FleetStatus::kOk;
  std::string message;
};

// How the fleet's tables and report name a member: its UUID, or its first capture directory when
// its capture.json names none (two such captures are two GPUs, never one "").
std::string FleetMemberName(const FleetMember& m);

// The members: GPUs sorted by model, then UUID (then first directory), then the rejected captures
// in the order given; deterministic for any order of equal inputs within a GPU.
std::vector<FleetMember> GroupCaptures(const std::vector<std::string>& dirs,
                                       const std::vector<FleetDescription>& descriptions);

}  // namespace wattcal
