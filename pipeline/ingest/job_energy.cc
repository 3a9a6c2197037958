// Per-job energy from Slurm windows over a DCGM field/power log (ingest/job_energy.h).
#include "ingest/job_energy.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "util/csv_field.h"
#include "util/errors.h"
#include "util/nan.h"

namespace wattcal {
namespace {

void AddFlag(std::string* flags, const std::string& flag) {
  if (flags->find(flag) != std::string::npos) return;
  *flags += (flags->empty() ? "" : ";") + flag;
}

// The log's power column: the instantaneous reading when it has one (157), else the averaged
// one (155); an InputError when it has neither.
std::string PowerColumn(const FieldLog& log) {
  for (const char* name : {"DCGM_FI_DEV_POWER_USAGE_INSTANT", "DCGM_FI_DEV_POWER_USAGE"}) {
    if (log.FieldIndex(name) >= 0) return name;
  }
  throw InputError(log.path, 0, "",
                   "the log has no power field: record DCGM field 155 (POWER) or 157 (POWINST) "
                   "beside the profiling fields, e.g. dcgmi dmon -e 155,1002,...");
}

// The GPUs (as the log names them) a job held: its indices, or every whole GPU of the log when
// the table gives only a count that matches the log's.
std::vector<std::string> JobGpus(const SlurmJob& job, const FieldLog& log) {
  std::vector<std::string> gpus;
  for (int g : job.gpus) gpus.push_back(std::to_string(g));
  if (!gpus.empty() || job.gpu_count == 0) return gpus;
  std::vector<std::string> whole;
  for (const FieldSeries& s : log.series) {
    if (s.mig_instance.empty()) whole.push_back(s.gpu.empty() ? s.uuid : s.gpu);
  }
  if (static_cast<int>(whole.size()) == job.gpu_count) return whole;
  throw InputError(job.path, job.line, "AllocTRES",
                   fmt::format("job {} held {} GPU(s) of the {} in the log, and the table does not "
                               "say which: add a GPUs column (indices, or Slurm's IDX:0-1 detail)",
                               job.job_id, job.gpu_count, whole.size()));
}

// Predicts one window: the model at the window's mean clocks when it is a DVFS model covering
// them, else at its default pair.
void Predict(const FieldLog& log, const FieldSeries& series, const PowerModel& model,
             const std::vector<double>& util, double start_s, double end_s, JobEnergyRow* row) {
  std::vector<double> freq = model.DefaultFrequencies();
  if (model.method != FitMethod::kFixed) {
    const char* clocks[] = {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"};
    for (int d = 0; d < model.layout.num_domains() && d < 2; ++d) {
      if (log.FieldIndex(clocks[d]) < 0) continue;
      const double f =
          AverageFieldWindow(log, series, start_s, end_s, {clocks[d]}, 1).means.at(clocks[d]);
      if (std::isfinite(f) && model.Covers(d, f)) freq[d] = f;
    }
  }
  PowerBreakdown b;
  row->predicted_w = model.Predict(util.data(), freq.data(), &b);
  row->predicted_energy_j = row->predicted_w * row->duration_s;
  row->base_energy_j = 0.0;
  for (double w : b.static_w) row->base_energy_j += w * row->duration_s;
  for (double w : b.idle_dyn_w) row->base_energy_j += w * row->duration_s;
  row->component_energy_j.clear();
  for (double w : b.component_w) row->component_energy_j.push_back(w * row->duration_s);
}

JobEnergyRow OneWindow(const SlurmJob& job, const std::string& gpu, const FieldLog& log,
                       const FieldSet& set, const PowerModel& model, const std::string& power,
                       const JobEnergyOptions& options) {
  JobEnergyRow row;
  row.job_id = job.job_id;
  row.gpu = gpu;
  row.start_s = job.start_s;
  row.duration_s = job.end_s - job.start_s;
  row.measured_w = row.measured_energy_j = row.predicted_w = row.predicted_energy_j = kNaN;
  row.base_energy_j = kNaN;
  row.component_energy_j.assign(set.components.size(), kNaN);
  if (std::isnan(job.end_s)) {
    AddFlag(&row.flags, kJobFlagStillRunning);
    return row;
  }
  const FieldSeries* series = log.Find(gpu);
  if (series == nullptr) {
    AddFlag(&row.flags, kJobFlagGpuNotInLog);
    return row;
  }
  const FieldWindowMeans fields =
      AverageFieldWindow(log, *series, job.start_s, job.end_s, set.Fields(), options.min_samples);
  const FieldWindowMeans watts =
      AverageFieldWindow(log, *series, job.start_s, job.end_s, {power}, options.min_samples);
  row.field_samples = fields.samples;
  row.power_samples = watts.samples - watts.na_cells.at(power);
  for (const std::string& f : fields.flags) AddFlag(&row.flags, f);
  if (row.power_samples < options.min_samples) AddFlag(&row.flags, kJobFlagFewPowerSamples);
  row.measured_w = watts.means.at(power);
  row.measured_energy_j = row.measured_w * row.duration_s;
  std::vector<std::string> missing;
  const std::vector<double> util = FieldUtilisations(set, fields.means, &missing);
  if (!missing.empty()) {
    AddFlag(&row.flags, kJobFlagNoFieldValue);
    return row;
  }
  Predict(log, *series, model, util, job.start_s, job.end_s, &row);
  return row;
}

}  // namespace

bool JobEnergyOptions::Check(std::string* error) const {
  if (min_samples < 1) {
    *error = fmt::format("min_samples = {} must be >= 1", min_samples);
    return false;
  }
  return true;
}

std::vector<JobEnergyRow> JobEnergies(const std::vector<SlurmJob>& jobs, const FieldLog& log,
                                      const FieldSet& set, const PowerModel& model,
                                      const JobEnergyOptions& options) {
  const std::string mismatch = model.layout.Mismatch(set.ToLayout());
  if (!mismatch.empty()) {
    throw InputError(set.path, 0, "components", model.LayoutMismatchMessage(mismatch));
  }
  const std::string power = PowerColumn(log);
  for (const std::string& field : set.Fields()) {
    if (log.FieldIndex(field) < 0) {  // named once, before any row
      AverageFieldWindow(log, log.series.front(), 0.0, 0.0, {field}, 1);
    }
  }
  std::vector<JobEnergyRow> rows;
  for (const SlurmJob& job : jobs) {
    if (!options.node.empty() && !NodeListHas(job.nodes, options.node)) continue;
    for (const std::string& gpu : JobGpus(job, log)) {
      rows.push_back(OneWindow(job, gpu, log, set, model, power, options));
    }
  }
  return rows;
}

std::string JobEnergyCsv(const std::vector<JobEnergyRow>& rows, const Layout& layout) {
  std::string out =
      "job_id,gpu,start_s,duration_s,field_samples,power_samples,measured_w,measured_energy_j,"
      "predicted_w,predicted_energy_j,energy_error_pct,base_energy_j";
  for (const std::string& c : layout.ComponentNames()) out += "," + CsvField("energy_j:" + c);
  out += ",flags\n";
  for (const JobEnergyRow& r : rows) {
    const double error_pct =
        100.0 * (r.predicted_energy_j - r.measured_energy_j) / r.measured_energy_j;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", CsvField(r.job_id), CsvField(r.gpu),
                       fmt::format("{:.3f}", r.start_s), CsvNumber(r.duration_s), r.field_samples,
                       r.power_samples, CsvNumber(r.measured_w), CsvNumber(r.measured_energy_j),
                       CsvNumber(r.predicted_w), CsvNumber(r.predicted_energy_j),
                       CsvNumber(error_pct), CsvNumber(r.base_energy_j));
    for (double e : r.component_energy_j) out += "," + CsvNumber(e);
    out += "," + CsvField(r.flags) + "\n";
  }
  return out;
}

}  // namespace wattcal
