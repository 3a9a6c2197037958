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
#include "util/json_file.h"
#include "util/logging.h"

namespace wattcal {

namespace fs = std::filesystem;

bool CaptureOptions::Check(std::string* error) const {
  if (!(std::isfinite(settle_ms) && settle_ms >= 0.0)) {
    *error = fmt::format("--settle-ms: {} is not a time >= 0 ms", settle_ms);
    return false;
  }
  if (power_log != "auto" && power_log != "nvml" && power_log != "nvidia-smi") {
    *error = fmt::format("--capture-power: '{}' is not auto, nvml or nvidia-smi", power_log);
    return false;
  }
  return energy.Check(error);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

// The metrics the description reads (its optional components' when `optional`, else the
// others' and the two time bases).
std::vector<std::string> NeededMetrics(const GpuDescription& gpu, bool optional = false) {
  std::vector<std::string> m;
  if (!optional) m = {gpu.active_cycles_metric, gpu.duration_metric};
  for (const ComponentCounters& c : gpu.components) {
    if (c.optional != optional) continue;
    for (const auto* list :
         {&c.thread_metrics, &c.warp_metrics, &c.byte_metrics, &c.access_metrics}) {
      m.insert(m.end(), list->begin(), list->end());
    }
  }
  return m;
}

// What each metric the description reads is used as, and so which units it may carry.
enum class MetricRole { kTime, kCount, kBytes };

std::map<std::string, MetricRole> MetricRoles(const GpuDescription& gpu) {
  std::map<std::string, MetricRole> roles;
  for (const ComponentCounters& c : gpu.components) {
    for (const auto* list : {&c.thread_metrics, &c.warp_metrics, &c.access_metrics}) {
      for (const std::string& m : *list) roles[m] = MetricRole::kCount;
    }
    for (const std::string& m : c.byte_metrics) roles[m] = MetricRole::kBytes;
  }
  roles[gpu.active_cycles_metric] = MetricRole::kCount;
  roles[gpu.duration_metric] = MetricRole::kTime;
  return roles;
}

// Optional metrics absent from every launch of a workload: metric -> the first export lacking it.
using AbsentMetrics = std::map<std::string, std::string>;

// A workload's launches, read one at a time (an export of a whole training step has 10^5):
// every used metric's unit against its role (a duration must be a time, a byte count bytes, a
// count a count: a duration in cycles read as seconds once made every bandwidth utilisation 1e-9
// of itself); a metric with an unknown unit is an error; a required metric absent ("n/a") from
// some launches counts 0 there, with a warning, and absent from every launch, or a time base
// absent from any, is an error; an optional one absent from every launch is recorded (its
// component will be left out). The launches are summed (SumCounterLaunches) as they come.
class WorkloadLaunches {
 public:
  WorkloadLaunches(const std::string& name, const std::vector<std::string>& needed,
                   const std::vector<std::string>& optional,
                   const std::map<std::string, MetricRole>& roles, const GpuDescription& gpu)
      : sum_(name), needed_(needed), optional_(optional), roles_(roles), gpu_(gpu) {}

  void Add(const CounterLaunch& l) {
    CheckUnits(l);
    if (count_ == 0) first_ = Brief(l);
    ++count_;
    for (const std::vector<std::string>* list : {&needed_, &optional_}) {
      for (const std::string& m : *list) {
        if (l.unknown_units.count(m)) LaunchMetric(l, m);  // throws: unknown unit
        if (l.metrics.count(m)) continue;
        Lack& lack = lacking_[m];
        if (lack.count++ == 0) lack.first = Brief(l);
      }
    }
    const auto t = l.metrics.find(gpu_.duration_metric);
    if (t != l.metrics.end())
      time_s_ += t->second * static_cast<double>(std::max<int64_t>(1, l.launches));
    sum_.Add(l);
  }

  // The checks that need every launch; fills `absent` with optional metrics no launch has.
  void Finish(AbsentMetrics* absent, std::vector<std::string>* warnings) const {
    for (const std::string& m : needed_) {
      const auto it = lacking_.find(m);
      if (it == lacking_.end()) continue;
      const bool time_base = m == gpu_.active_cycles_metric || m == gpu_.duration_metric;
      const Lack& lack = it->second;
      if (lack.count == count_ || time_base) {
        throw InputError(
            lack.first.path, lack.first.line, m,
            fmt::format(
                "no value in this launch (launch ID {}, {}): the export has no such column, "
                "or its cell is n/a",
                lack.first.id, lack.first.kernel));
      }
      Warn(m, lack, warnings);
    }
    for (const std::string& m : optional_) {
      const auto it = lacking_.find(m);
      if (it == lacking_.end()) continue;
      if (it->second.count == count_) {
        absent->emplace(m, it->second.first.path);
      } else {
        Warn(m, it->second, warnings);
      }
    }
  }

  int64_t launches() const { return count_; }
  double kernel_time_s() const { return time_s_; }
  int64_t first_line() const { return first_.line; }
  const std::string& first_kernel() const { return first_.kernel; }
  KernelCounters Sum() const { return sum_.Result(); }

 private:
  struct Brief {
    std::string path, kernel;
    int64_t line = 0, id = -1;
    Brief() = default;
    explicit Brief(const CounterLaunch& l)
        : path(l.path), kernel(l.kernel), line(l.line), id(l.id) {}
  };
  struct Lack {
    int64_t count = 0;
    Brief first;
  };

  void Warn(const std::string& m, const Lack& lack, std::vector<std::string>* warnings) const {
    warnings->push_back(fmt::format(
        "{}:{}: {}: {} of {} launches of this workload have no value (n/a), first {}: counted as 0",
        lack.first.path, lack.first.line, m, lack.count, count_, lack.first.kernel));
  }

  void CheckUnits(const CounterLaunch& l) const {
    for (const auto& [metric, role] : roles_) {
      const auto it = l.metric_base.find(metric);
      if (it == l.metric_base.end()) continue;
      const std::string& base = it->second;
      const bool is_count =
          base != "byte" && base != "second" && base != "%" && base.find('/') == std::string::npos;
      const bool ok = role == MetricRole::kTime    ? base == "second"
                      : role == MetricRole::kBytes ? base == "byte"
                                                   : is_count;
      if (ok) continue;
      const char* wanted = role == MetricRole::kTime ? "a time (nsecond, usecond, msecond, second)"
                           : role == MetricRole::kBytes
                               ? "bytes (byte, Kbyte, ...)"
                               : "a count (inst, cycle, warp, thread, ..., or no unit)";
      throw InputError(
          l.path, l.line, metric,
          fmt::format("its unit is {} ('{}'), but the GPU description uses it as {}: TPDS Eqs. 7-8 "
                      "would read it wrongly (is the column the right metric?)",
                      base.empty() ? "a plain count" : base, base, wanted));
    }
  }

  CounterLaunchSum sum_;
  const std::vector<std::string>& needed_;
  const std::vector<std::string>& optional_;
  const std::map<std::string, MetricRole>& roles_;
  const GpuDescription& gpu_;
  std::map<std::string, Lack> lacking_;
  Brief first_;
  int64_t count_ = 0;
  double time_s_ = 0.0;
};

// Utilisations of summed counters; an absent optional metric gives NaN (its component is
// left out later), an absent required one was refused before.
std::vector<double> Utilisations(const KernelCounters& k, const GpuDescription& gpu) {
  std::vector<std::string> missing;
  return ComputeUtilisations(k, gpu, &missing);
}

// Leaves out the optional components whose metrics some export lacks: their columns go from
// every window, the description loses them, and a warning names each with the metric and file.
void LeaveOutAbsentComponents(const AbsentMetrics& absent, CaptureReport* r) {
  if (absent.empty()) return;
  std::vector<std::string> left_out;
  std::vector<size_t> keep;
  for (size_t j = 0; j < r->gpu.components.size(); ++j) {
    const ComponentCounters& c = r->gpu.components[j];
    std::string reason;
    for (const auto* list :
         {&c.thread_metrics, &c.warp_metrics, &c.byte_metrics, &c.access_metrics}) {
      for (const std::string& m : *list) {
        const auto it = absent.find(m);
        if (c.optional && it != absent.end() && reason.empty())
          reason = fmt::format("{} (first absent from {})", m, it->second);
      }
    }
    if (reason.empty()) {
      keep.push_back(j);
      continue;
    }
    left_out.push_back(c.component);
    r->warnings.push_back(
        fmt::format("component {} left out: its metric {} was not collected (an export made before "
                    "the component was "
                    "added, or a metric this GPU or ncu lacks); the model will have no {} term",
                    c.component, reason, c.component));
  }
  for (CaptureWindow& w : r->windows) {
    if (w.utilisations.empty()) continue;
    std::vector<double> kept;
    for (size_t j : keep) kept.push_back(w.utilisations[j]);
    w.utilisations = kept;
  }
  r->gpu = r->gpu.Without(left_out);
}

// The time range [first, last] of a power log, seconds (one pass).
std::pair<double, double> LogRange(const std::string& path, const PowerLogOptions& options) {
  PowerLogReader reader(path, options);
  PowerSample s;
  while (reader.Next(&s)) {
  }
  return {reader.stats().first_time_s, reader.stats().last_time_s};
}

// Whether every window lies inside [range.first, range.second].
bool Covers(const std::pair<double, double>& range, const std::vector<KernelWindow>& windows) {
  for (const KernelWindow& w : windows) {
    if (w.start_s < range.first || w.end_s > range.second) return false;
  }
  return true;
}

struct CaptureFiles {
  std::string dir, windows, idle_windows, nvml, smi, ncu_raw, ncu_dir;
};

CaptureFiles FindFiles(const std::string& dir_in, bool require_power_log) {
  CaptureFiles f;
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  f.dir = dir;
  if (!fs::is_directory(dir))
    throw InputError(dir, 0, "", "not a directory (give a capture directory)");
  auto has = [&](const char* name) { return fs::is_regular_file(fs::path(dir) / name); };
  if (!has("windows.csv")) {
    throw InputError(dir, 0, "",
                     "no windows.csv: not a capture directory (it needs windows.csv, "
                     "nvml_power.csv or nvidia_smi_power.csv, and ncu_raw.csv or ncu/)");
  }
  f.windows = dir + "/windows.csv";
  if (has("idle_windows.csv")) f.idle_windows = dir + "/idle_windows.csv";
  if (has("nvml_power.csv")) f.nvml = dir + "/nvml_power.csv";
  if (has("nvidia_smi_power.csv")) f.smi = dir + "/nvidia_smi_power.csv";
  if (f.nvml.empty() && f.smi.empty() && require_power_log) {
    throw InputError(dir, 0, "",
                     "no power log: a capture needs nvml_power.csv or nvidia_smi_power.csv "
                     "(wattcal-predict --capture predicts a capture without one)");
  }
  if (has("ncu_raw.csv")) f.ncu_raw = dir + "/ncu_raw.csv";
  if (fs::is_directory(fs::path(dir) / "ncu")) f.ncu_dir = dir + "/ncu";
  if (f.ncu_raw.empty() && f.ncu_dir.empty()) {
    throw InputError(dir, 0, "",
                     "no counters: a capture needs ncu_raw.csv (one profiled launch per window) "
                     "or ncu/<workload>.csv (one export per workload)");
  }
  return f;
}

// The exports of ncu/: relative path without ".csv" (a workload "suite/app" may live in
// ncu/suite/app.csv) -> path, in name order.
std::map<std::string, std::string> ListExports(const std::string& ncu_dir) {
  std::map<std::string, std::string> exports;
  for (const auto& entry : fs::recursive_directory_iterator(ncu_dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".csv") continue;
    std::string key = fs::relative(entry.path(), ncu_dir).generic_string();
    key.resize(key.size() - 4);
    exports[key] = entry.path().string();
  }
  return exports;
}

// True when `suffix` is an explicit run number: "_run2", "-run10", ".run3" (a separator, "run",
// digits).
bool IsRunSuffix(const std::string& suffix) {
  if (suffix.size() < 5 || std::string("_-.").find(suffix[0]) == std::string::npos) return false;
  if (suffix.compare(1, 3, "run") != 0) return false;
  return std::all_of(suffix.begin() + 4, suffix.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The export of a workload: its own name, else, for an explicit run of a workload ("gemm_run2"),
// the export of that workload (ncu/gemm.csv), which is named in `warnings`. A workload whose name
// merely starts with another's ("dram_ld_l2_half" and ncu/dram_ld.csv) shares nothing. Empty
// when none.
std::string ExportOf(const std::map<std::string, std::string>& exports, const std::string& workload,
                     const std::string& where, std::vector<std::string>* warnings) {
  auto it = exports.find(workload);
  if (it != exports.end()) return it->second;
  std::string best_key, best_path;
  for (const auto& [key, path] : exports) {
    if (key.size() < workload.size() && workload.compare(0, key.size(), key) == 0 &&
        IsRunSuffix(workload.substr(key.size())) && key.size() > best_key.size()) {
      best_key = key, best_path = path;
    }
  }
  if (!best_path.empty() && warnings != nullptr) {
    warnings->push_back(
        fmt::format("{}: workload '{}' has no export of its own name: its "
                    "counters are {}",
                    where, workload, best_path));
  }
  return best_path;
}

// Warnings naming the windows whose power log had a gap or whose energy counter disagreed
// with the instant power.
void NameUnreliableWindows(const KernelEnergyReport& measured, const std::string& windows_path,
                           const std::string& log, std::vector<std::string>* warnings) {
  for (const WindowEnergy& w : measured.windows) {
    if (w.flags & kFlagSampleGap) {
      warnings->push_back(fmt::format(
          "{}:{}: {}: no power reading for {:.3f} s ({}, lines {}-{}) inside the window or across "
          "its edges: "
          "flagged sample_gap (left out of training; its energy rests on interpolation across the "
          "gap)",
          windows_path, w.line, w.kernel, w.max_gap_s, log, w.gap_from_line, w.gap_to_line));
    }
    if (w.flags & kFlagCounterMismatch) {
      warnings->push_back(
          fmt::format("{}:{}: {}: the energy counter gives {:.1f} W but the instant power {:.1f} W "
                      "({:+.1f}%; {}): the "
                      "counter is not believed (frozen or stepped?) and the window is measured "
                      "from the instant power "
                      "(flagged counter_mismatch)",
                      windows_path, w.line, w.kernel, w.counter_energy_j / w.duration_s,
                      w.mean_power_w, 100.0 * (w.counter_energy_j - w.energy_j) / w.energy_j, log));
    }
  }
}

// The windows of a capture without a power log: their times, no energy.
KernelEnergyReport Unmeasured(const std::vector<KernelWindow>& windows) {
  KernelEnergyReport r;
  r.power_source_name = "none";
  for (const KernelWindow& w : windows) {
    WindowEnergy e;
    e.kernel = w.kernel;
    e.line = w.line;
    e.start_s = w.start_s;
    e.end_s = w.end_s;
    e.duration_s = DurationS(w);
    for (double* v :
         {&e.energy_j, &e.mean_power_w, &e.papi_energy_j, &e.sma_max_power_w, &e.temp_drift_c,
          &e.cv, &e.f_core_mhz, &e.f_mem_mhz, &e.f_core_min_mhz, &e.f_core_max_mhz,
          &e.f_mem_min_mhz, &e.f_mem_max_mhz, &e.power_limit_w, &e.trapezoid_energy_j}) {
      *v = kNaN;
    }
    e.power_source = "none";
    r.windows.push_back(e);
  }
  return r;
}

// Windows shorter than twice the settle time are measured over their second half.
std::vector<KernelWindow> Settle(std::vector<KernelWindow> windows, double settle_ms,
                                 const std::string& path, std::vector<std::string>* warnings) {
  const double settle_s = settle_ms * 1e-3;
  for (KernelWindow& w : windows) {
    const double d = w.end_s - w.start_s;
    if (d >= 2.0 * settle_s) {
      DelayWindowStart(&w, settle_s);
    } else {
      DelayWindowStart(&w, 0.5 * d);
      if (settle_s > 0.0) {
        warnings->push_back(fmt::format(
            "{}:{}: {}: the window lasts {:.1f} ms, shorter than twice the settle time ({} ms): "
            "measured over its second half",
            path, w.line, w.kernel, d * 1e3, settle_ms));
      }
    }
  }
  return windows;
}

// The share of bits the suite's data toggle, %: 50 for random data, 0 for zeros, when `dir` holds
// a wattcal-capture suite run (capture.json: format wattcal-capture, no "kind" of recording);
// -1 for any other capture.
int SuiteDataTogglePct(const std::string& dir) {
  const nlohmann::json j = ReadJsonFileOrDiscarded((fs::path(dir) / "capture.json").string());
  if (!j.is_object() || j.value("format", "") != "wattcal-capture" || j.contains("kind")) return -1;
  const nlohmann::json options = j.value("options", nlohmann::json::object());
  return options.is_object() && options.value("data", "random") == "zeros" ? 0 : 50;
}

// The toggle sweep's windows (microbench/suite_plan.cc names them toggle_<unit>_<pct, 3 digits>
// with an optional _b<blocks per SM>) whose share differs from the suite's data: flagged
// data_toggle, with one warning naming them.
void FlagToggleSweep(int suite_pct, const std::string& windows_path,
                     std::vector<CaptureWindow>* windows, size_t first,
                     std::vector<std::string>* warnings) {
  if (suite_pct < 0) return;
  static const std::regex kToggle("toggle_.+_([0-9]{3})(_b[0-9]+)?");
  std::vector<std::string> names;
  for (size_t i = first; i < windows->size(); ++i) {
    CaptureWindow& w = (*windows)[i];
    std::smatch m;
    if (!std::regex_match(w.workload, m, kToggle) || std::stoi(m[1].str()) == suite_pct) continue;
    w.energy.flags |= kFlagDataToggle;
    names.push_back(w.workload);
  }
  if (names.empty()) return;
  warnings->push_back(
      fmt::format("{}: {} windows of the toggle sweep run data that toggle another share of bits "
                  "than the suite's "
                  "other benchmarks ({}%): flagged data_toggle (left out of training; no counter "
                  "sees data toggling, so "
                  "the same utilisations come with different power): {}",
                  windows_path, names.size(), suite_pct, fmt::join(names, ", ")));
}

}  // namespace

// The GPU a capture was measured on, by name: capture.json's gpu.name, else the name column of
// nvidia_smi_power.csv's first row, else nvidia_smi_q.txt's Product Name; "" when none says.
std::string CaptureGpuName(const CaptureFiles& f) {
  const fs::path dir(f.dir);
  if (fs::is_regular_file(dir / "capture.json")) {
    const nlohmann::json j = ReadJsonFileOrDiscarded((dir / "capture.json").string());
    if (j.is_object() && j.contains("gpu") && j["gpu"].is_object() &&
        j["gpu"].value("name", "") != "") {
      return j["gpu"]["name"].get<std::string>();
    }
  }
  auto trim = [](std::string s) {
    const size_t a = s.find_first_not_of(" \t\r\"");
    const size_t b = s.find_last_not_of(" \t\r\"");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  if (!f.smi.empty()) {
    std::ifstream in(f.smi);
    std::string header, row;
    if (std::getline(in, header) && std::getline(in, row)) {
      std::vector<std::string> h, v;
      std::stringstream hs(header), rs(row);
      for (std::string c; std::getline(hs, c, ',');) h.push_back(trim(c));
      for (std::string c; std::getline(rs, c, ',');) v.push_back(trim(c));
      for (size_t i = 0; i < h.size() && i < v.size(); ++i) {
        if (h[i] == "name") return v[i];
      }
    }
  }
  if (fs::is_regular_file(dir / "nvidia_smi_q.txt")) {
    std::ifstream in(dir / "nvidia_smi_q.txt");
    for (std::string line; std::getline(in, line);) {
      const size_t at = line.find("Product Name");
      const size_t colon = line.find(':');
      if (at != std::string::npos && colon != std::string::npos)
        return trim(line.substr(colon + 1));
    }
  }
  return "";
}

CaptureReport IngestCaptures(const std::vector<std::string>& dirs, const GpuDescription& gpu,
                             const CaptureOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (dirs.empty()) throw OptionError("give at least one capture directory");
  if (!gpu.Check(&error)) throw OptionError(error);

  CaptureReport r;
  r.gpu = gpu;
  r.power_limit_w = kNaN;
  const std::vector<std::string> needed = NeededMetrics(gpu);
  const std::vector<std::string> optional = NeededMetrics(gpu, /*optional=*/true);
  const std::map<std::string, MetricRole> roles = MetricRoles(gpu);
  std::set<std::string> keep(needed.begin(), needed.end());
  keep.insert(optional.begin(), optional.end());
  keep.insert("gpu__time_duration.sum");  // the summed launches' duration weights
  keep.insert("Duration");
  AbsentMetrics absent;
  std::set<std::string> seen_dirs;
  std::string first_gpu, first_gpu_dir;

  for (const std::string& dir_in : dirs) {
    const CaptureFiles f = FindFiles(dir_in, options.require_power_log);
    if (!seen_dirs.insert(fs::weakly_canonical(f.dir).string()).second) {
      throw OptionError(fmt::format("--capture {} is given twice", f.dir));
    }
    const std::string gpu_name = CaptureGpuName(f);
    if (!gpu_name.empty()) {
      if (first_gpu.empty()) {
        first_gpu = gpu_name, first_gpu_dir = f.dir;
      } else if (gpu_name != first_gpu && !options.allow_mixed_gpus) {
        throw InputError(
            f.dir, 0, "",
            fmt::format(
                "measured on {}, but {} was measured on {}: captures of different GPUs share "
                "one description's peaks and counts, which fit one GPU only (give each GPU "
                "its own run, or --mixed-gpus to combine them anyway)",
                gpu_name, first_gpu_dir, first_gpu));
      }
    }
    // The power logs: primary = the power source, secondary = throttle reasons and limit.
    std::string primary, secondary;
    if (options.power_log == "nvml") {
      if (f.nvml.empty()) throw InputError(f.dir, 0, "", "--capture-power nvml: no nvml_power.csv");
      primary = f.nvml, secondary = f.smi;
    } else if (options.power_log == "nvidia-smi") {
      if (f.smi.empty()) {
        throw InputError(f.dir, 0, "", "--capture-power nvidia-smi: no nvidia_smi_power.csv");
      }
      primary = f.smi;
    } else {
      primary = f.nvml.empty() ? f.smi : f.nvml;
      secondary = f.nvml.empty() ? std::string() : f.smi;
    }

    const std::vector<KernelWindow> windows = ReadKernelWindows(f.windows);
    if (windows.empty()) throw InputError(f.windows, 1, "", "no windows after the header");
    KernelEnergyOptions energy_options = options.energy;
    energy_options.settle_ms = 0.0;  // applied here, per window
    // The two logs' options: the GPU, noheader columns and clock offset are nvidia-smi's; the
    // power column is the one of the log that gives the power.
    PowerLogOptions nvml_options, smi_options;
    smi_options.gpu = options.gpu_select;
    smi_options.columns = options.smi_columns;
    smi_options.utc_offset_h = options.utc_offset_h;
    (primary == f.nvml ? nvml_options : smi_options).power_field = options.power_field;
    auto options_of = [&](const std::string& log) -> const PowerLogOptions& {
      return log == f.nvml ? nvml_options : smi_options;
    };
    const PowerLogOptions& log_options = options_of(primary);
    // The secondary log only adds throttle reasons and the limit: when it does not cover every
    // window (started late, stopped early), it is left out with a warning rather than failing.
    // Its range is read once, for the windows and the idle windows.
    std::pair<double, double> secondary_range;
    if (!secondary.empty() && !primary.empty()) {
      secondary_range = LogRange(secondary, options_of(secondary));
      for (const KernelWindow& w : windows) {
        if (Covers(secondary_range, {w})) continue;
        r.warnings.push_back(fmt::format(
            "{}: it covers [{:.3f}, {:.3f}] s but the window {}:{} ({}) runs [{:.3f}, {:.3f}] s: "
            "its throttle reasons and power limit are not used (windows are flagged by their "
            "clocks only; give the limit to predict/validate with --power-limit-w)",
            secondary, secondary_range.first, secondary_range.second, f.windows, w.line, w.kernel,
            w.start_s, w.end_s));
        secondary.clear();
        break;
      }
    }
    const KernelEnergyReport measured =
        primary.empty() ? Unmeasured(windows)
                        : MeasureKernelEnergiesWithReasons(
                              primary, log_options, secondary, options_of(secondary),
                              Settle(windows, options.settle_ms, f.windows, &r.warnings), f.windows,
                              energy_options);
    NameUnreliableWindows(measured, f.windows, primary, &r.warnings);
    r.power_sources.push_back(measured.power_source_name);
    r.power_logs.push_back(primary);
    for (const std::string& p : {f.windows, primary, secondary, f.idle_windows}) {
      if (!p.empty()) r.inputs.push_back(p);
    }

    // Counters per window. With both ncu_raw.csv and ncu/, the exports are used when every
    // window has one, else the raw page; the other is named.
    std::vector<CaptureWindow> out(windows.size());
    bool use_raw = !f.ncu_raw.empty();
    if (!f.ncu_raw.empty() && !f.ncu_dir.empty()) {
      const std::map<std::string, std::string> exports = ListExports(f.ncu_dir);
      bool all = true;
      for (const KernelWindow& w : windows)
        all = all && !ExportOf(exports, w.kernel, "", nullptr).empty();
      use_raw = !all;
      r.warnings.push_back(fmt::format(
          "{}: both ncu_raw.csv and ncu/ are present: {} is used ({}), {} is not", f.dir,
          use_raw ? f.ncu_raw : f.ncu_dir,
          use_raw ? "not every window has an export in ncu/" : "every window has an export",
          use_raw ? f.ncu_dir : f.ncu_raw));
    }
    if (use_raw) {
      // The raw page is joined by launch order: the windows must be in time order.
      for (size_t i = 1; i < windows.size(); ++i) {
        if (windows[i].start_s < windows[i - 1].start_s) {
          throw InputError(
              f.windows, windows[i].line, "start_us",
              fmt::format("{} starts at {:.6f} s, before {} on line {} ({:.6f} s): the windows "
                          "are not in time order, and {} is joined to them in launch order (sort "
                          "the windows by their start, as the profiled launches ran)",
                          windows[i].kernel, windows[i].start_s, windows[i - 1].kernel,
                          windows[i - 1].line, windows[i - 1].start_s, f.ncu_raw));
        }
      }
      r.inputs.push_back(f.ncu_raw);
      std::vector<CounterLaunch> launches;  // with the metrics the description reads only
      ForEachCounterLaunch(f.ncu_raw, &keep,
                           [&](CounterLaunch&& l) { launches.push_back(std::move(l)); });
      // Set-up launches: the leading ones whose configuration is not the first window's, while
      // at least one launch per window but one (a missing launch is named below) remains.
      size_t first = 0;
      if (WindowHasConfig(windows[0])) {
        while (first < launches.size() && launches.size() - first >= windows.size() &&
               !ConfigMatches(launches[first], windows[0])) {
          ++first;
        }
      }
      for (size_t i = 0; i < first; ++i) {
        const CounterLaunch& l = launches[i];
        r.dropped_launches.push_back(fmt::format(
            "{}:{}: {} (grid {} x block {}): a set-up launch before the first window ({}:{} {})",
            l.path, l.line, l.kernel, Triple(l.grid), Triple(l.block), f.windows, windows[0].line,
            windows[0].kernel));
      }
      const size_t n = launches.size() - first;
      RefuseShiftedJoin(launches, first, windows, f.windows, f.ncu_raw);
      if (n + 1 == windows.size()) {
        // One launch short: the window it belongs to is the first whose configuration the next
        // launch does not match while the following window's does (named, not the launch after).
        for (size_t i = 0, j = first; i < windows.size(); ++i, ++j) {
          const bool last = j >= launches.size();
          if (!last && ConfigMatches(launches[j], windows[i])) continue;
          if (!last && !(i + 1 < windows.size() && ConfigMatches(launches[j], windows[i + 1])))
            break;
          throw InputError(
              f.windows, windows[i].line, "kernel",
              fmt::format("window {} ({} blocks of {} threads) has no profiled launch in {}: {} "
                          "launches for {} windows, and {} is the first the launches' order and "
                          "configurations leave out (profile it, or remove the window)",
                          windows[i].kernel, windows[i].blocks, windows[i].threads, f.ncu_raw, n,
                          windows.size(), windows[i].kernel));
        }
      }
      if (n != windows.size()) {
        throw InputError(
            f.ncu_raw, 0, "",
            fmt::format("{} profiled launches{} but {} has {} windows: counters are joined to "
                        "windows one launch per window, in order (profile each window's kernel "
                        "once, e.g. ncu --launch-count 1 per benchmark, or remove the extra rows)",
                        n, first > 0 ? fmt::format(" (after {} set-up launches)", first) : "",
                        f.windows, windows.size()));
      }
      for (size_t i = 0; i < n; ++i) {
        const CounterLaunch& l = launches[first + i];
        const KernelWindow& w = windows[i];
        if (!ConfigMatches(l, w)) {
          throw InputError(
              l.path, l.line, "Grid Size",
              fmt::format("launch {} of {} has grid {} x block {} ({} blocks of {} threads), but "
                          "its window {}:{} ({}) says {} blocks of {} threads: the rows and the "
                          "windows are not in the same order, or a launch is missing",
                          i + 1, l.kernel, Triple(l.grid), Triple(l.block), Product(l.grid),
                          Product(l.block), f.windows, w.line, w.kernel, w.blocks, w.threads));
        }
        WorkloadLaunches one(w.kernel, needed, optional, roles, gpu);
        one.Add(l);
        one.Finish(&absent, &r.warnings);
        CaptureWindow& c = out[i];
        c.counters_path = l.path;
        c.counters_line = l.line;
        c.counters_kernel = l.kernel;
        c.counters_launches = 1;
        c.counters_time_s = one.kernel_time_s();
        c.utilisations = Utilisations(one.Sum(), gpu);
      }
    } else {
      // One export per workload.
      const std::map<std::string, std::string> exports = ListExports(f.ncu_dir);
      std::map<std::string, CaptureWindow> done;  // export path -> its counters, read once
      std::set<std::string> used;
      for (size_t i = 0; i < windows.size(); ++i) {
        const KernelWindow& w = windows[i];
        const std::string export_path =
            ExportOf(exports, w.kernel, fmt::format("{}:{}", f.windows, w.line), &r.warnings);
        if (export_path.empty()) {
          throw InputError(f.windows, w.line, "kernel",
                           fmt::format("no counters for workload '{}': expected {}/{}.csv ({} has "
                                       "{} exports)",
                                       w.kernel, f.ncu_dir, w.kernel, f.ncu_dir, exports.size()));
        }
        used.insert(export_path);
        auto cached = done.find(export_path);
        if (cached == done.end()) {
          // Launch by launch, only the metrics the description reads: memory bounded by them,
          // not by the launches.
          WorkloadLaunches all(w.kernel, needed, optional, roles, gpu);
          ForEachCounterLaunch(export_path, &keep, [&](CounterLaunch&& l) { all.Add(l); });
          if (all.launches() == 0) throw InputError(export_path, 0, "", "no profiled launches");
          all.Finish(&absent, &r.warnings);
          CaptureWindow c;
          c.counters_path = export_path;
          c.counters_line = all.first_line();
          c.counters_kernel =
              all.launches() == 1 ? all.first_kernel() : fmt::format("{} kernels", all.launches());
          c.counters_launches = static_cast<int>(all.launches());
          c.counters_time_s = all.kernel_time_s();
          c.utilisations = Utilisations(all.Sum(), gpu);
          cached = done.emplace(export_path, c).first;
          r.inputs.push_back(export_path);
        }
        out[i] = cached->second;
      }
      for (const auto& [name, path] : exports) {
        if (!used.count(path)) r.unused_exports.push_back(path);
      }
    }
    const size_t first_window = r.windows.size();
    for (size_t i = 0; i < windows.size(); ++i) {
      CaptureWindow& c = out[i];
      c.capture = f.dir;
      c.workload = windows[i].kernel;
      c.kind = "benchmark";
      c.energy = measured.windows[i];
      c.launches = windows[i].launches;
      c.blocks = windows[i].blocks;
      c.threads = windows[i].threads;
      if (std::isfinite(c.energy.power_limit_w)) {
        r.power_limit_w = std::isfinite(r.power_limit_w)
                              ? std::max(r.power_limit_w, c.energy.power_limit_w)
                              : c.energy.power_limit_w;
      }
      r.windows.push_back(std::move(c));
    }
    FlagToggleSweep(SuiteDataTogglePct(f.dir), f.windows, &r.windows, first_window, &r.warnings);

    // Idle windows: measured the same way; those outside the log are skipped and named.
    if (!f.idle_windows.empty() && primary.empty()) {
      r.skipped_idle.push_back(
          fmt::format("{}: not measured: the capture has no power log", f.idle_windows));
    } else if (!f.idle_windows.empty()) {
      const std::vector<KernelWindow> idle_all = ReadKernelWindows(f.idle_windows);
      // The primary log's range, as the measurement of the windows read it.
      const double first_s = measured.log_stats.first_time_s;
      const double last_s = measured.log_stats.last_time_s;
      std::vector<KernelWindow> idle;
      for (const KernelWindow& w : idle_all) {
        if (!Covers({first_s, last_s}, {w})) {
          r.skipped_idle.push_back(fmt::format(
              "{}:{}: {}: [{:.6f}, {:.6f}] s is not inside the power log's [{:.6f}, {:.6f}] s",
              f.idle_windows, w.line, w.kernel, w.start_s, w.end_s, first_s, last_s));
          continue;
        }
        idle.push_back(w);
      }
      if (!idle.empty()) {
        const std::string idle_secondary =
            !secondary.empty() && Covers(secondary_range, idle) ? secondary : std::string();
        const KernelEnergyReport idle_measured = MeasureKernelEnergiesWithReasons(
            primary, log_options, idle_secondary, options_of(idle_secondary),
            Settle(idle, options.settle_ms, f.idle_windows, &r.warnings), f.idle_windows,
            energy_options);
        for (size_t i = 0; i < idle.size(); ++i) {
          CaptureWindow c;
          c.capture = f.dir;
          c.workload = idle[i].kernel;
          c.kind = "idle";
          c.energy = idle_measured.windows[i];
          r.windows.push_back(std::move(c));
        }
      }
    }
  }
  LeaveOutAbsentComponents(absent, &r);
  return r;
}

}  // namespace wattcal
