// What an ingested capture gives its readers (ingest/capture.h CaptureReport): the measured
// corpus per window or per workload, the windows table, the workloads' activity, the summary.
#include "ingest/capture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <fstream>

#include "ingest/counters.h"
#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"
#include "ingest/utilisation.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

Corpus CaptureReport::ToCorpus() const {
  Corpus c;
  c.path = "";
  c.kind = CorpusKind::kMeasured;
  c.layout = gpu.ToLayout();
  for (const ComponentCounters& component : gpu.components) {
    if (component.optional) c.optional_components.push_back(component.component);
  }
  c.components_line = 1;
  c.defaults_line = 0;
  std::vector<const CaptureWindow*> rows;
  for (const CaptureWindow& w : windows) {
    if (w.kind == "benchmark") rows.push_back(&w);
  }
  const int n = static_cast<int>(rows.size());
  const int domains = c.layout.num_domains();
  c.power_w.resize(n);
  c.freq_mhz.resize(n, domains);
  c.util_frac.resize(n, static_cast<int>(gpu.components.size()));
  // A workload measured in several windows (two runs, or several captures) keeps one row per
  // window under its own name: validation and cross-validation group them as one benchmark.
  for (int i = 0; i < n; ++i) {
    const CaptureWindow& w = *rows[i];
    c.benchmark.push_back(w.workload);
    c.power_w(i) = w.energy.mean_power_w;
    const double f_core =
        std::isfinite(w.energy.f_core_mhz) ? std::round(w.energy.f_core_mhz) : gpu.default_core_mhz;
    c.freq_mhz(i, 0) = f_core;
    if (domains > 1) {
      c.freq_mhz(i, 1) =
          std::isfinite(w.energy.f_mem_mhz) ? std::round(w.energy.f_mem_mhz) : gpu.default_mem_mhz;
    }
    for (size_t j = 0; j < w.utilisations.size(); ++j)
      c.util_frac(i, static_cast<int>(j)) = w.utilisations[j];
    c.line.push_back(w.energy.line);
    c.flags.push_back(WindowFlagsToString(w.energy.flags));
  }
  c.power_limit_w = power_limit_w;
  c.gpu = recorded_on.name;
  return c;
}

Corpus CaptureReport::ToWorkloadCorpus() const {
  const Corpus windows_corpus = ToCorpus();
  const std::vector<AppActivity> apps = Workloads();
  struct Sums {
    double energy_j = 0.0, duration_s = 0.0, core_s = 0.0, mem_s = 0.0;
    uint32_t flags = 0;
    int64_t line = 0;
  };
  // The energy as it ran (whole windows) comes from Workloads(), as wattcal-predict reads it.
  std::map<std::string, Sums> sums;
  for (const CaptureWindow& w : windows) {
    if (w.kind != "benchmark") continue;
    Sums& s = sums[w.workload];
    if (s.line == 0) s.line = w.energy.line;
    s.energy_j += w.energy.energy_j;
    s.duration_s += w.energy.duration_s;
    s.core_s += (std::isfinite(w.energy.f_core_mhz) ? w.energy.f_core_mhz : gpu.default_core_mhz) *
                w.energy.duration_s;
    s.mem_s += (std::isfinite(w.energy.f_mem_mhz) ? w.energy.f_mem_mhz : gpu.default_mem_mhz) *
               w.energy.duration_s;
    s.flags |= w.energy.flags;
  }
  Corpus c = windows_corpus;
  const int n = static_cast<int>(apps.size());
  const int domains = c.layout.num_domains();
  c.benchmark.clear();
  c.line.clear();
  c.flags.clear();
  c.duration_s.clear();
  c.energy_j.clear();
  c.power_w.resize(n);
  c.freq_mhz.resize(n, domains);
  c.util_frac.resize(n, static_cast<int>(gpu.components.size()));
  for (int i = 0; i < n; ++i) {
    const Sums& s = sums[apps[i].workload];
    c.benchmark.push_back(apps[i].workload);
    c.power_w(i) = s.energy_j / s.duration_s;
    c.freq_mhz(i, 0) = std::round(s.core_s / s.duration_s);
    if (domains > 1) c.freq_mhz(i, 1) = std::round(s.mem_s / s.duration_s);
    for (size_t j = 0; j < apps[i].util_frac.size(); ++j)
      c.util_frac(i, static_cast<int>(j)) = apps[i].util_frac[j];
    c.line.push_back(s.line);
    c.flags.push_back(WindowFlagsToString(s.flags));
    c.duration_s.push_back(apps[i].duration_s);
    c.energy_j.push_back(apps[i].measured_energy_j);
  }
  return c;
}

std::string CaptureReport::WindowsCsv() const {
  std::string s =
      "capture,workload,kind,start_s,end_s,duration_s,energy_j,mean_power_w,power_source,samples,"
      "f_core_mhz,f_core_min_mhz,f_core_max_mhz,f_mem_mhz,clock_reasons,power_limit_w,flags,"
      "launches,blocks,threads,counters,counters_line,counters_kernel,counters_launches";
  for (const ComponentCounters& c : gpu.components) s += "," + CsvField("util:" + c.component);
  s += "\n";
  for (const CaptureWindow& w : windows) {
    const WindowEnergy& e = w.energy;
    s += fmt::format(
        "{},{},{},{:.6f},{:.6f},{:.6f},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        CsvField(w.capture), CsvField(w.workload), w.kind, e.start_s, e.end_s, e.duration_s,
        CsvNumber(e.energy_j), CsvNumber(e.mean_power_w), e.power_source, e.samples,
        CsvNumber(e.f_core_mhz), CsvNumber(e.f_core_min_mhz), CsvNumber(e.f_core_max_mhz),
        CsvNumber(e.f_mem_mhz),
        e.has_clock_reasons ? fmt::format("0x{:x}", e.clock_reasons) : std::string(),
        CsvNumber(e.power_limit_w), WindowFlagsToString(e.flags), w.launches, w.blocks, w.threads,
        CsvField(w.counters_path), w.counters_line, CsvField(w.counters_kernel),
        w.counters_launches);
    for (size_t j = 0; j < gpu.components.size(); ++j) {
      s += "," +
           (j < w.utilisations.size() ? fmt::format("{:.6g}", w.utilisations[j]) : std::string());
    }
    s += "\n";
  }
  return s;
}

std::vector<AppActivity> CaptureReport::Workloads() const {
  std::vector<AppActivity> apps;
  std::map<std::string, size_t> index;
  struct Sums {
    std::set<std::pair<std::string, int64_t>> exports;  // (file, line) of each counted export
    std::vector<double> util_time;                      // sum of U x kernel time
    double time_s = 0.0, energy_j = 0.0, measured_s = 0.0, core_mhz_s = 0.0;
    bool measured = true;
    uint32_t flags = 0;
    // The windows as they ran (no settle trim): length, energy, steps.
    double whole_s = 0.0, whole_j = 0.0;
    int64_t steps = 0;
    bool all_steps = true;
  };
  std::vector<Sums> sums;
  for (const CaptureWindow& w : windows) {
    if (w.kind != "benchmark") continue;
    const auto [it, inserted] = index.emplace(w.workload, apps.size());
    if (inserted) {
      apps.emplace_back();
      apps.back().workload = w.workload;
      sums.emplace_back();
      sums.back().util_time.assign(w.utilisations.size(), 0.0);
    }
    AppActivity& a = apps[it->second];
    Sums& s = sums[it->second];
    ++a.windows;
    if (s.exports.insert({w.counters_path, w.counters_line}).second) {
      s.time_s += w.counters_time_s;
      for (size_t j = 0; j < w.utilisations.size(); ++j)
        s.util_time[j] += w.utilisations[j] * w.counters_time_s;
      if (s.exports.size() == 1) a.util_frac = w.utilisations;
    }
    if (std::isfinite(w.energy.energy_j) && w.energy.duration_s > 0.0) {
      s.energy_j += w.energy.energy_j;
      s.measured_s += w.energy.duration_s;
      s.core_mhz_s += w.energy.f_core_mhz * w.energy.duration_s;
    } else {
      s.measured = false;
    }
    s.flags |= w.energy.flags;
    s.whole_s += w.whole_duration_s;
    s.whole_j += w.whole_energy_j;  // NaN (unknown) when any window's is
    s.steps += w.steps;
    s.all_steps = s.all_steps && w.steps > 0;
  }
  for (size_t i = 0; i < apps.size(); ++i) {
    AppActivity& a = apps[i];
    const Sums& s = sums[i];
    a.kernel_time_s = s.time_s;
    a.duration_s = s.whole_s;
    a.measured_energy_j = s.whole_j;
    a.steps = s.all_steps ? s.steps : 0;
    if (s.exports.size() > 1 && s.time_s > 0.0) {
      for (size_t j = 0; j < a.util_frac.size(); ++j) a.util_frac[j] = s.util_time[j] / s.time_s;
    }
    if (s.measured && s.measured_s > 0.0) {
      a.measured_w = s.energy_j / s.measured_s;
      a.measured_f_core_mhz = s.core_mhz_s / s.measured_s;
    }
    a.measured_flags = WindowFlagsToString(s.flags);
  }
  return apps;
}

std::string CaptureReport::Summary() const {
  std::string s;
  for (size_t i = 0; i < power_sources.size(); ++i) {
    s += fmt::format("power: {} from {}\n", power_sources[i], power_logs[i]);
  }
  int benchmarks = 0, idle = 0, flagged = 0;
  std::string flagged_names;
  for (const CaptureWindow& w : windows) {
    if (w.kind == "idle") {
      ++idle;
      s += fmt::format("idle: {} {:.1f} W ({})\n", w.workload, w.energy.mean_power_w, w.capture);
      continue;
    }
    ++benchmarks;
    // The windows calibrate leaves out (its IsThrottledRow rule on the measured table).
    if (w.energy.flags & (kFlagPowerCap | kFlagClockMoved)) {
      ++flagged;
      flagged_names += fmt::format("  {} {:.1f} W, core {:.0f}-{:.0f} MHz [{}]\n", w.workload,
                                   w.energy.mean_power_w, w.energy.f_core_min_mhz,
                                   w.energy.f_core_max_mhz, WindowFlagsToString(w.energy.flags));
    }
  }
  s += fmt::format("windows: {} measured, {} idle; board limit {}\n", benchmarks, idle,
                   power_limit_w ? fmt::format("{:.0f} W", *power_limit_w) : "unknown");
  if (flagged > 0) {
    s += fmt::format(
        "{} windows hit the power cap or moved their clock (left out of training "
        "by default; calibrate --keep-flagged keeps them):\n{}",
        flagged, flagged_names);
  }
  for (const std::string& d : dropped_launches) s += "dropped " + d + "\n";
  for (const std::string& u : unused_exports)
    s += "unused export (no window names it): " + u + "\n";
  for (const std::string& k : skipped_idle) s += "skipped idle window: " + k + "\n";
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace wattcal
