// Per-job energy from what a cluster already records (issue 38 item 4): Slurm's job windows
// (ingest/slurm_jobs.h) cut a DCGM field/power log (ingest/field_log.h) into one window per job
// and GPU; each window gives the job's measured energy on that GPU (the mean of the log's power
// samples in the window x its length, as a capture window's power is averaged) and its
// predicted energy and component split (a calibrated model evaluated on the window's mean field
// utilisations, io/field_set.h, x the length).
//
// Nothing becomes a silent number: a field the set needs that the log lacks is an InputError; a
// GPU the job held that the log does not hold, a window outside the log, a window with fewer
// field samples than asked for, N/A cells, a field with no value at all, or a job still running
// flag the row (JobEnergyRow::flags), and a row that cannot be measured or predicted leaves those
// cells empty.
#pragma once

#include <string>
#include <vector>

#include "ingest/field_log.h"
#include "ingest/slurm_jobs.h"
#include "io/field_set.h"
#include "model/power_model.h"

namespace wattcal {

// Row flags beside the field-window ones (kFieldFlag*).
inline constexpr const char* kJobFlagGpuNotInLog = "gpu_not_in_log";
inline constexpr const char* kJobFlagStillRunning = "still_running";
inline constexpr const char* kJobFlagNoFieldValue = "field_without_value";
inline constexpr const char* kJobFlagFewPowerSamples = "few_power_samples";

struct JobEnergyOptions {
  // Only the jobs whose NodeList names this node ("" = every job: the log is of their node).
  std::string node;
  // A window with fewer field (or power) samples than this is flagged.
  int min_samples = 3;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;
};

struct JobEnergyRow {
  std::string job_id;
  // The GPU index as the job and the log name it.
  std::string gpu;
  double start_s = 0.0;
  double duration_s = 0.0;
  int field_samples = 0;
  int power_samples = 0;
  // NaN when the row cannot give it (see flags).
  double measured_w = 0.0;
  double measured_energy_j = 0.0;
  double predicted_w = 0.0;
  double predicted_energy_j = 0.0;
  // Static + idle-dynamic energy, and one entry per model component (layout order), J.
  double base_energy_j = 0.0;
  std::vector<double> component_energy_j;
  // Semicolon-separated flags, "" when none.
  std::string flags;
};

// One row per job and GPU it held, in the table's order. Throws InputError for a field the set
// needs that the log lacks, a log without a power field, a model whose layout is not the field
// set's, and a job whose GPUs the table does not name when the log holds more GPUs than it held.
std::vector<JobEnergyRow> JobEnergies(const std::vector<SlurmJob>& jobs, const FieldLog& log,
                                      const FieldSet& set, const PowerModel& model,
                                      const JobEnergyOptions& options);

// The table: job_id,gpu,start_s,duration_s,field_samples,power_samples,measured_w,
// measured_energy_j,predicted_w,predicted_energy_j,energy_error_pct,base_energy_j, one
// energy_j:COMPONENT column per component, flags. start_s with 3 decimals (epoch seconds),
// the rest as CsvNumber (%.9g); empty cells for NaN.
std::string JobEnergyCsv(const std::vector<JobEnergyRow>& rows, const Layout& layout);

}  // namespace wattcal
