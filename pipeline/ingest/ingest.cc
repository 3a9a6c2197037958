#include "ingest/ingest.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "ingest/accelwattch_activity.h"
#include "ingest/utilisation.h"
#include "io/corpus_io.h"
#include "io/csv_reader.h"
#include "io/ubench_cfg.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/option_rule.h"

namespace wattcal {

bool IngestOptions::Check(std::string* error) const {
  for (const auto& [name, value] : {std::pair<const char*, double>{"--f-core-mhz", f_core_mhz},
                                    std::pair<const char*, double>{"--f-mem-mhz", f_mem_mhz}}) {
    if (!std::isnan(value) && !(value >= 1.0 && value <= 1e5))
      return RejectOption(error, "{}: {} is not a clock in MHz (1 to 100000)", name, value);
  }
  if (std::isnan(f_core_mhz) && !std::isnan(f_mem_mhz)) {
    return RejectOption(error, "--f-mem-mhz needs --f-core-mhz (the pair the whole log ran at)");
  }
  return log.Check(error) && energy.Check(error);
}

std::string KernelKey(const std::string& name) {
  std::string s = name;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  const size_t paren = s.find('(');
  if (paren != std::string::npos) s = s.substr(0, paren);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

namespace {

// The measured tidy table: one row per (kernel, V-F pair), the kernel's utilisations
// (measured at the default pair, as in TPDS §4.1) repeated on every row.
std::string MeasuredTidyCsv(const std::vector<KernelEnergy>& kernels, const GpuDescription& gpu,
                            const std::map<std::string, std::vector<double>>& util_of) {
  const Layout layout = gpu.ToLayout();
  std::string s = fmt::format("# wattcal-tidy default_f_core_mhz={}", gpu.default_core_mhz);
  if (layout.num_domains() > 1) s += fmt::format(" default_f_mem_mhz={}", gpu.default_mem_mhz);
  s += "\nbenchmark,power_w,f_core_mhz";
  if (layout.num_domains() > 1) s += ",f_mem_mhz";
  for (const FrequencyDomain& d : layout.domains) {
    for (const std::string& c : d.components) s += "," + CsvField(d.name + ":" + c);
  }
  s += "\n";
  for (const KernelEnergy& k : kernels) {
    // Every launch of this kernel at this pair was excluded (--exclude-flagged): it has no
    // power to train on, and an empty cell would make the table unreadable. Named in the summary.
    if (k.launches == 0) continue;
    const std::vector<double>& u = util_of.at(KernelKey(k.kernel));
    s += CsvField(k.kernel) + "," + CsvNumber(k.mean_power_w) + "," + CsvNumber(k.f_core_mhz);
    if (layout.num_domains() > 1) s += "," + CsvNumber(k.f_mem_mhz);
    for (double v : u) s += "," + fmt::format("{:.6g}", v);
    s += "\n";
  }
  return s;
}

std::string InstructionEnergiesCsv(const IngestInputs& in,
                                   const std::vector<KernelEnergy>& kernels) {
  CsvReader reader(in.instructions);
  std::vector<std::string> header, fields;
  if (!reader.Next(&header)) reader.Fail("", "the file is empty");
  if (header.size() != 3 || header[0] != "kernel" || header[1] != "overhead_kernel" ||
      header[2] != "instructions") {
    reader.Fail("header", "expected the header kernel,overhead_kernel,instructions");
  }
  std::string s =
      "kernel,overhead_kernel,f_core_mhz,f_mem_mhz,instructions,energy_per_instruction_j,"
      "energy_per_instruction_j_sd,energy_per_instruction_j_se,papi_energy_per_instruction_j,"
      "total_energy_j,overhead_energy_j,launches,overhead_launches\n";
  while (reader.Next(&fields)) {
    if (fields.size() != 3) {
      reader.Fail("", fmt::format("expected 3 fields, got {}", fields.size()));
    }
    const double n = reader.ParseNumber(fields[2], "instructions");
    if (!(n > 0.0)) reader.Fail("instructions", "must be > 0");
    bool found = false;
    for (const KernelEnergy& with : kernels) {
      if (with.kernel != fields[0]) continue;
      for (const KernelEnergy& without : kernels) {
        if (without.kernel != fields[1] || without.f_core_mhz != with.f_core_mhz ||
            without.f_mem_mhz != with.f_mem_mhz) {
          continue;
        }
        const InstructionEnergy e = PerInstructionEnergy(with, without, n);
        s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(with.kernel),
                         CsvField(without.kernel), CsvNumber(with.f_core_mhz),
                         CsvNumber(with.f_mem_mhz), CsvNumber(n), CsvNumber(e.energy_j),
                         CsvNumber(e.energy_j_sd), CsvNumber(e.energy_j_se),
                         CsvNumber(e.papi_energy_j), CsvNumber(e.total_energy_j),
                         CsvNumber(e.overhead_energy_j), e.launches_with, e.launches_without);
        found = true;
      }
    }
    if (!found) {
      reader.Fail("kernel",
                  fmt::format("no measured pair of '{}' and '{}' at the same V-F pair in {}",
                              fields[0], fields[1], in.windows));
    }
  }
  return s;
}

// AccelWattch's measured power per kernel: ",mean HW_power,st_dev,var,#samples".
std::string KernelPowerTableCsv(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> f;
  if (!reader.Next(&f)) reader.Fail("", "the file is empty");
  if (f.size() != 5 || f[1] != "mean HW_power" || f[2] != "st_dev" || f[3] != "var" ||
      f[4] != "#samples") {
    reader.Fail("header", "expected AccelWattch's header ',mean HW_power,st_dev,var,#samples'");
  }
  std::string s = "kernel,mean_power_w,power_sd_w,power_var_w2,samples\n";
  int rows = 0;
  while (reader.Next(&f)) {
    if (f.size() != 5) reader.Fail("", fmt::format("expected 5 fields, got {}", f.size()));
    if (f[0].empty()) reader.Fail("kernel", "empty kernel name");
    const double mean_w = reader.ParseNumber(f[1], "mean HW_power");
    const double sd_w = reader.ParseNumber(f[2], "st_dev");
    const double var_w2 = reader.ParseNumber(f[3], "var");
    const double samples = reader.ParseNumber(f[4], "#samples");
    if (!(mean_w > 0.0)) reader.Fail("mean HW_power", "must be > 0 W");
    if (sd_w < 0.0 || var_w2 < 0.0) reader.Fail("st_dev", "spread must be >= 0");
    if (!(samples >= 1.0) || samples != std::floor(samples))
      reader.Fail("#samples", "must be a count >= 1");
    s += fmt::format("{},{},{},{},{}\n", CsvField(f[0]), CsvNumber(mean_w), CsvNumber(sd_w),
                     CsvNumber(var_w2), static_cast<int64_t>(samples));
    ++rows;
  }
  if (rows == 0) reader.Fail("", "no kernels after the header");
  return s;
}

// Refuses inputs that do not go together (each check names the flags).
void CheckIngestInputs(const IngestInputs& in, const IngestOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (in.power_log.empty() && in.counters.empty() && in.corpus.empty() && in.kernel_power.empty() &&
      in.ubench.empty()) {
    throw OptionError(
        "give --power-log with --windows, --counters, --corpus, --kernel-power, --ubench, or "
        "several");
  }
  if (!in.power_log.empty() && in.windows.empty()) {
    throw OptionError("--power-log needs --windows (the kernel launch windows)");
  }
  if (!in.instructions.empty() && in.power_log.empty()) {
    throw OptionError("--instructions needs --power-log and --windows");
  }
  if (!in.description.empty() && in.counters.empty()) {
    throw OptionError("--description (AccelWattch's activity table) needs --counters");
  }
}

// When repeated launches of a kernel are aggregated without clocks, the note that says so
// (also logged as a warning); "" when none is.
std::string ClocklessNote(const IngestInputs& in, const KernelEnergyReport& energy) {
  // Kernel-window energy (Arafa et al.) needs no clocks: the per-launch and per-kernel
  // tables are written with blank clocks. Only the measured V-F table needs the pair.
  for (const KernelEnergy& k : energy.kernels) {
    if (k.launches + k.excluded_launches < 2) continue;
    std::vector<int64_t> lines;  // the kernel's first two windows
    for (const WindowEnergy& w : energy.windows) {
      if (w.kernel == k.kernel && lines.size() < 2) lines.push_back(w.line);
    }
    const std::string note = fmt::format(
        "the log has no clock columns, so wattcal cannot tell the V-F pairs of the windows "
        "apart: kernel "
        "'{}' has {} launches ({}:{} and {} ...), aggregated with blank clocks as if they ran "
        "at one pair. "
        "Log the clocks (nvidia-smi clocks.sm,clocks.mem; NVML sm_clock_mhz), or state the "
        "pair the whole "
        "log ran at with --f-core-mhz (and --f-mem-mhz)",
        k.kernel, k.launches + k.excluded_launches, in.windows, lines[0], lines[1]);
    LogWarning(note);
    return note;
  }
  return "";
}

// The kernel windows' energies from the power log, with the clocks the user states when the
// log has none; returns the clockless note (see ClocklessNote).
std::string MeasurePowerLog(const IngestInputs& in, const IngestOptions& options, IngestReport* r) {
  std::string clockless_note;
  r->energy = MeasureKernelEnergies(in.power_log, options.log, in.windows, options.energy);
  bool clocks = false;
  for (const WindowEnergy& w : r->energy.windows) clocks = clocks || std::isfinite(w.f_core_mhz);
  if (!clocks && std::isfinite(options.f_core_mhz)) {
    // The user states the pair the whole log ran at.
    for (WindowEnergy& w : r->energy.windows) {
      w.f_core_mhz = w.f_core_min_mhz = w.f_core_max_mhz = options.f_core_mhz;
      if (std::isfinite(options.f_mem_mhz)) {
        w.f_mem_mhz = w.f_mem_min_mhz = w.f_mem_max_mhz = options.f_mem_mhz;
      }
    }
    r->energy.kernels = AggregateKernelEnergies(r->energy.windows, options.energy);
  } else if (!clocks) {
    clockless_note = ClocklessNote(in, r->energy);
  }
  r->kernels_csv = KernelEnergiesToCsv(r->energy.kernels);
  if (options.windows_table) r->windows_csv = WindowEnergiesToCsv(r->energy.windows);
  return clockless_note;
}

// The counters export, read for the metrics something uses, with its long table.
std::vector<KernelCounters> ReadIngestCounters(const IngestInputs& in, const IngestOptions& options,
                                               CounterFormat* format, IngestReport* r) {
  // Without windows to join by name (counters alone, --activity), a kernel launched with
  // several configurations is summed: its work over the whole export.
  const MixedLaunchConfigs mixed = in.power_log.empty() && in.description.empty()
                                       ? MixedLaunchConfigs::kSum
                                       : MixedLaunchConfigs::kError;
  // Only the description's metrics, when nothing else reads the others.
  std::set<std::string> keep;
  const bool only_described =
      !options.counters_table && !in.gpu_description.empty() && in.description.empty();
  if (only_described) {
    const std::vector<std::string> m = ReadGpuDescription(in.gpu_description).Metrics();
    keep.insert(m.begin(), m.end());
  }
  std::vector<KernelCounters> counters =
      ReadCounters(in.counters, format, mixed, only_described ? &keep : nullptr);
  for (const KernelCounters& k : counters) {
    if (k.launch_configs > 1) {
      r->summary += fmt::format("counters: {}: {} launches in {} launch configurations summed\n",
                                k.kernel, k.launches, k.launch_configs);
    }
  }
  r->counters_csv = "kernel,benchmark,launches,metric,value\n";
  for (const KernelCounters& k : counters) {
    for (const auto& [metric, value] : k.metrics) {
      r->counters_csv += fmt::format("{},{},{},{},{}\n", CsvField(k.kernel), CsvField(k.benchmark),
                                     k.launches, CsvField(metric), CsvNumber(value));
    }
  }
  return counters;
}

// Each kernel's utilisations (TPDS Eqs. 7-8) under the GPU description, by KernelKey; two
// kernels with one key are refused.
std::map<std::string, std::vector<double>> KernelUtilisations(
    const IngestInputs& in, const std::vector<KernelCounters>& counters, IngestReport* r) {
  std::map<std::string, std::vector<double>> util_of;
  r->gpu = ReadGpuDescription(in.gpu_description);
  for (const KernelCounters& k : counters) {
    const std::string key = KernelKey(k.kernel);
    if (util_of.count(key)) {
      throw InputError(in.counters, k.line, "Kernel Name",
                       fmt::format("two kernels of this file are both called '{}' once their "
                                   "argument lists are dropped; wattcal cannot tell which "
                                   "windows belong to which",
                                   key));
    }
    util_of[key] = ComputeUtilisations(k, r->gpu);
    r->utilisations.emplace_back(k.kernel, util_of[key]);
  }
  r->activity_csv = UtilisationsToTidyCsv(r->utilisations, r->gpu);
  return util_of;
}

// The measured (V-F) table: every measured kernel joined to its utilisations.
void JoinMeasuredTable(const IngestInputs& in,
                       const std::map<std::string, std::vector<double>>& util_of,
                       const std::string& clockless_note, IngestReport* r) {
  // Every measured kernel needs its counters: report the first window of the first one
  // that has none.
  for (const WindowEnergy& w : r->energy.windows) {
    if (util_of.count(KernelKey(w.kernel))) continue;
    std::string known;
    int listed = 0;
    for (const auto& [key, u] : util_of) {
      if (listed++ == 5) {
        known += ", ...";
        break;
      }
      known += (known.empty() ? "" : ", ") + key;
    }
    throw InputError(in.windows, w.line, "kernel",
                     fmt::format("no counters for kernel '{}' in {} (it has {} kernels: {})",
                                 w.kernel, in.counters, util_of.size(), known));
  }
  if (!clockless_note.empty()) {
    throw InputError(in.power_log, 0, "clocks",
                     "the measured (V-F) table needs each window's clocks: " + clockless_note);
  }
  r->tidy_csv = MeasuredTidyCsv(r->energy.kernels, r->gpu, util_of);
  for (const KernelEnergy& k : r->energy.kernels) {
    if (k.launches == 0) {
      r->summary += fmt::format("measured table: {} left out (every launch excluded: {})\n",
                                k.kernel, k.flags);
    }
  }
}

// The microbenchmark configurations' table.
std::string UbenchCsv(const IngestInputs& in) {
  std::string csv = "benchmark,iterations,active_sms,lanes_per_warp\n";
  for (const UbenchConfig& u : ReadUbenchCfg(in.ubench, in.ubench_sm_count, in.ubench_warp_size)) {
    csv += fmt::format("{},{},{},{}\n", CsvField(u.name), u.iterations, u.active_sms,
                       u.lanes_per_warp);
  }
  return csv;
}

// The terminal summary's power-log part: the log, the windows, the first kernels' energies.
std::string EnergySummary(const IngestInputs& in, const IngestOptions& options,
                          const KernelEnergyReport& energy) {
  std::string s;
  int64_t flagged = 0, excluded = 0;
  for (const WindowEnergy& w : energy.windows) flagged += w.flags != 0;
  for (const KernelEnergy& k : energy.kernels) excluded += k.excluded_launches;
  s += fmt::format(
      "power log: {} ({}, field {}): {} samples, {} rows without power, {} repeated headers\n"
      "windows: {} launches of {} kernel x V-F groups; {} flagged{}\n",
      in.power_log, PowerLogFormatName(energy.format), energy.power_field, energy.log_stats.samples,
      energy.log_stats.missing_power_rows, energy.log_stats.repeated_headers, energy.windows.size(),
      energy.kernels.size(), flagged,
      options.energy.exclude_flagged ? fmt::format(", {} excluded", excluded) : "");
  const std::string power_note = EmptyOrNanPowerNote(in.power_log, energy.log_stats);
  if (!power_note.empty()) s += "power log: " + power_note + "\n";
  if (energy.half_settled_windows > 0) {
    s += fmt::format(
        "windows: {} launches shorter than twice the settle time ({} ms) "
        "measured over their second half\n",
        energy.half_settled_windows, options.energy.settle_ms);
  }
  s += fmt::format("  {:<24} {:>9} {:>9} {:>8} {:>11} {:>11} {:>8}\n", "kernel", "f_core", "f_mem",
                   "launches", "energy_j", "mean_pw_w", "samples");
  const size_t shown = std::min<size_t>(energy.kernels.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    const KernelEnergy& k = energy.kernels[i];
    s += fmt::format("  {:<24} {:>9} {:>9} {:>8} {:>11.4f} {:>11.3f} {:>8}{}\n",
                     k.kernel.substr(0, 24), CsvNumber(k.f_core_mhz), CsvNumber(k.f_mem_mhz),
                     k.launches, k.energy_j, k.mean_power_w, k.samples,
                     k.flags.empty() ? "" : "  [" + k.flags + "]");
  }
  if (energy.kernels.size() > shown) {
    s += fmt::format("  ... and {} more\n", energy.kernels.size() - shown);
  }
  return s;
}

}  // namespace

IngestReport Ingest(const IngestInputs& in, const IngestOptions& options) {
  CheckIngestInputs(in, options);
  IngestReport r;
  std::string clockless_note;  // set when repeated launches were aggregated without clocks
  if (!in.power_log.empty()) clockless_note = MeasurePowerLog(in, options, &r);

  std::map<std::string, std::vector<double>> util_of;
  CounterFormat format = CounterFormat::kNcuDetails;
  std::vector<KernelCounters> counters;
  if (!in.counters.empty()) counters = ReadIngestCounters(in, options, &format, &r);
  if (!in.counters.empty() && !in.gpu_description.empty())
    util_of = KernelUtilisations(in, counters, &r);
  if (!in.power_log.empty() && !in.counters.empty() && !in.gpu_description.empty())
    JoinMeasuredTable(in, util_of, clockless_note, &r);
  AccelWattchActivity activity;
  if (!in.description.empty()) {
    activity = AccelWattchActivityTable(in.description, counters, in.counters,
                                        in.power_log.empty() ? nullptr : &r.energy, in.windows);
    r.accelwattch_activity_csv = activity.csv;
  }
  if (!in.instructions.empty()) r.instructions_csv = InstructionEnergiesCsv(in, r.energy.kernels);
  if (!in.kernel_power.empty()) r.kernel_power_csv = KernelPowerTableCsv(in.kernel_power);
  if (!in.ubench.empty()) r.ubench_csv = UbenchCsv(in);
  if (!in.corpus.empty()) {
    const Corpus corpus = ReadCorpus(in.corpus);
    r.corpus_tidy_csv = CorpusToTidyCsv(corpus);
    r.summary += fmt::format("corpus: {} rows ({} benchmarks) from {}\n", corpus.rows(),
                             corpus.Benchmarks().size(), in.corpus);
  }

  // Terminal summary.
  if (!in.power_log.empty()) r.summary += EnergySummary(in, options, r.energy);
  if (!in.counters.empty()) {
    r.summary += fmt::format("counters: {} kernels from {} ({})", counters.size(), in.counters,
                             CounterFormatName(format));
    r.summary += in.gpu_description.empty()
                     ? "\n"
                     : fmt::format(", utilisations by TPDS Eqs. 7-8 for {}\n", r.gpu.name);
  }
  if (!in.description.empty()) {
    r.summary += fmt::format("AccelWattch activity: {} kernels of {} x {} metrics{}\n",
                             activity.kernels, in.description, activity.metrics,
                             activity.ignored_counter_kernels > 0
                                 ? fmt::format(" ({} counter kernels not described, ignored)",
                                               activity.ignored_counter_kernels)
                                 : "");
  }
  if (!r.summary.empty() && r.summary.back() == '\n') r.summary.pop_back();
  return r;
}

}  // namespace wattcal
