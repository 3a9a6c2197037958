#include "ingest/counters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <utility>

#include "ingest/internal/counter_cells.h"
#include "ingest/internal/counter_csv.h"
#include "ingest/internal/counter_readers.h"
#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {

using namespace counters_internal;  // NOLINT: the readers' dispatcher

namespace {

// ReadCounters for Nsight Compute: the launches of each kernel name averaged, provided they
// share one launch configuration; with MixedLaunchConfigs::kSum a kernel launched with several
// is summed (SumCounterLaunches) and its summed counters divided by its launches.
class KernelAverager {
 public:
  explicit KernelAverager(MixedLaunchConfigs mixed) : mixed_(mixed) {}

  void Add(const CounterLaunch& launch) {
    const auto [it, inserted] = index_.emplace(launch.kernel, kernels_.size());
    if (inserted) {
      kernels_.emplace_back(launch.kernel);
      kernels_.back().record.kernel = launch.kernel;
      kernels_.back().record.path = launch.path;
      kernels_.back().record.line = launch.line;
    }
    Kernel& k = kernels_[it->second];
    if (launch.has_launch_config) {
      const auto config = std::make_pair(launch.grid, launch.block);
      if (k.configs.empty()) {
        k.first_config_line = launch.line;
      } else if (k.configs.count(config) == 0 && mixed_ == MixedLaunchConfigs::kError) {
        const auto& first = *k.configs.begin();
        throw InputError(
            launch.path, launch.line, first.first != launch.grid ? "Grid Size" : "Block Size",
            fmt::format("kernel '{}' runs with grid {} and block {} here but with grid {} and "
                        "block {} on line {}: these are different workloads, and averaging "
                        "them by kernel name would mix their counters: give each workload its "
                        "own window and export (wattcal-ingest --capture, one ncu/<workload>.csv "
                        "per workload), or ingest the counters alone (--activity), which sums a "
                        "kernel's launches",
                        launch.kernel, Dim3Text(launch.grid), Dim3Text(launch.block),
                        Dim3Text(first.first), Dim3Text(first.second), k.first_config_line));
      }
      k.configs.insert(config);
    }
    ++k.record.launches;
    k.sum.Add(launch);
    for (const auto& [name, value] : launch.metrics) {
      Mean& m = k.metrics[name];
      m.weight += 1.0;
      m.mean += (value - m.mean) / m.weight;  // exact for identical values
      if (m.base.empty()) {
        const auto b = launch.metric_base.find(name);
        if (b != launch.metric_base.end()) m.base = b->second;
      }
    }
    for (const auto& entry : launch.unknown_units) k.record.unknown_units.insert(entry);
  }

  std::vector<KernelCounters> Finish() {
    std::vector<KernelCounters> out;
    out.reserve(kernels_.size());
    for (Kernel& k : kernels_) {
      if (k.configs.size() > 1) {  // kSum: the kernel's launches summed, counts per launch
        KernelCounters summed = k.sum.Result();
        const double n = static_cast<double>(summed.launches);
        for (auto& [name, value] : summed.metrics) {
          if (IsSummedCounter(name, k.metrics[name].base))
            value /= n;  // per launch, as the averaged kernels
        }
        summed.launch_configs = static_cast<int>(k.configs.size());
        out.push_back(std::move(summed));
        continue;
      }
      for (const auto& [name, m] : k.metrics) k.record.metrics[name] = m.mean;
      out.push_back(std::move(k.record));
    }
    return out;
  }

 private:
  struct Mean {
    double mean = 0.0;
    double weight = 0.0;
    std::string base;
  };
  struct Kernel {
    explicit Kernel(const std::string& name) : sum(name) {}
    KernelCounters record;
    std::map<std::string, Mean> metrics;
    std::set<std::pair<std::array<int64_t, 3>, std::array<int64_t, 3>>> configs;
    int64_t first_config_line = 0;
    CounterLaunchSum sum;
  };
  MixedLaunchConfigs mixed_;
  std::vector<Kernel> kernels_;
  std::map<std::string, size_t> index_;
};

// ----------------------------------------------------------------------------------------
// Writing.

std::string Quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// Shortest "%.{15,16,17}g" text that reads back as exactly `value`.
std::string ExactText(double value) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0.0;
    if (ParseFiniteDouble(buffer, &back) && back == value) break;
  }
  return buffer;
}

// A value y in `unit` with y * multiply / divide == value exactly, when one exists near
// value * divide / multiply.
bool ExactInUnit(double value, const CounterUnit& unit, double* y) {
  double candidate = value * unit.divide / unit.multiply;
  double down = candidate, up = candidate;
  for (int step = 0; step < 16; ++step) {
    for (double c : {down, up}) {
      if (c * unit.multiply / unit.divide == value) {
        *y = c;
        return true;
      }
    }
    down = std::nextafter(down, -HUGE_VAL);
    up = std::nextafter(up, HUGE_VAL);
  }
  return false;
}

}  // namespace

const char* CounterFormatName(CounterFormat format) {
  switch (format) {
    case CounterFormat::kNcuDetails: return "ncu-details";
    case CounterFormat::kNcuRaw: return "ncu-raw";
    case CounterFormat::kNvprofMetrics: return "nvprof";
    case CounterFormat::kAccelWattchHwPerf: return "accelwattch-hw-perf";
  }
  return "unknown";
}

bool ParseCounterUnit(const std::string& unit, CounterUnit* parsed) {
  const std::string text = Trim(unit);
  const size_t slash = text.find('/');
  UnitPart numerator, denominator;
  if (slash == std::string::npos) {
    if (!ParseUnitPart(text, &numerator)) return false;
    parsed->multiply = numerator.multiply;
    parsed->divide = numerator.divide;
    parsed->base = numerator.base;
    return true;
  }
  if (text.find('/', slash + 1) != std::string::npos) return false;
  const std::string top = Trim(text.substr(0, slash)), bottom = Trim(text.substr(slash + 1));
  if (top.empty() || bottom.empty() || !ParseUnitPart(top, &numerator) ||
      !ParseUnitPart(bottom, &denominator)) {
    return false;
  }
  // Plain counts, percentages and frequencies are never denominators; a frequency is never
  // a numerator.
  if (denominator.base.empty() || denominator.base == "%" || numerator.base == "%" ||
      denominator.base.find('/') != std::string::npos ||
      numerator.base.find('/') != std::string::npos) {
    return false;
  }
  parsed->multiply = numerator.multiply * denominator.divide;
  parsed->divide = numerator.divide * denominator.multiply;
  parsed->base = (numerator.base.empty() ? "1" : numerator.base) + "/" + denominator.base;
  return true;
}

namespace {

// The launches of a file and its format.
std::vector<CounterLaunch> ReadLaunches(const std::string& path, CounterFormat* format) {
  const CsvStart start = FindCsvStart(path);
  if (start.kind == HeaderKind::kNcu) {
    const bool details = CounterCsv(path, start).Column("Metric Name") >= 0;
    *format = details ? CounterFormat::kNcuDetails : CounterFormat::kNcuRaw;
    return details ? ReadNcuDetailsLaunches(path, start) : ReadNcuRawLaunches(path, start);
  }
  // nvprof and hw_perf.csv: one record per kernel (nvprof) or per (benchmark, kernel).
  std::vector<std::map<std::string, std::string>> bases;
  const bool nvprof = start.kind == HeaderKind::kNvprof;
  *format = nvprof ? CounterFormat::kNvprofMetrics : CounterFormat::kAccelWattchHwPerf;
  std::vector<KernelCounters> records =
      nvprof ? ReadNvprof(path, start, &bases) : ReadHwPerf(path, start, &bases);
  // hw_perf.csv's columns without a unit that are not amounts of work (FORMATS.md §2.4).
  static const std::set<std::string> kHwPerfRatios = {"Pipeline_Duty", "Num_Idle_SMs",
                                                      "Chip Voltage"};
  std::vector<CounterLaunch> launches(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    KernelCounters& r = records[i];
    CounterLaunch& launch = launches[i];
    launch.kernel = std::move(r.kernel);
    launch.benchmark = std::move(r.benchmark);
    launch.path = std::move(r.path);
    launch.line = r.line;
    launch.launches = nvprof ? std::max(1, r.launches) : 1;
    launch.metrics = std::move(r.metrics);
    launch.metric_base = std::move(bases[i]);
    if (!nvprof) {
      for (auto& [name, base] : launch.metric_base) {
        if (kHwPerfRatios.count(name) > 0) base = "ratio";
      }
    }
  }
  return launches;
}

}  // namespace

std::vector<KernelCounters> ReadCounters(const std::string& path, CounterFormat* detected,
                                         MixedLaunchConfigs mixed,
                                         const std::set<std::string>* keep) {
  const CsvStart start = FindCsvStart(path);
  CounterFormat format = CounterFormat::kNcuDetails;
  std::vector<KernelCounters> kernels;
  switch (start.kind) {
    case HeaderKind::kNcu:
      kernels = [&] {
        // Launch by launch: memory bounded by the kernel names, not the launches.
        KernelAverager averager(mixed);
        ForEachCounterLaunch(
            path, keep, [&](CounterLaunch&& l) { averager.Add(l); }, &format);
        return averager.Finish();
      }();
      break;
    case HeaderKind::kNvprof:
      format = CounterFormat::kNvprofMetrics;
      kernels = ReadNvprof(path, start, nullptr);
      break;
    case HeaderKind::kHwPerf:
      format = CounterFormat::kAccelWattchHwPerf;
      kernels = ReadHwPerf(path, start, nullptr);
      break;
  }
  if (detected != nullptr) *detected = format;
  return kernels;
}

void ForEachCounterLaunch(const std::string& path, const std::set<std::string>* keep,
                          const std::function<void(CounterLaunch&&)>& sink,
                          CounterFormat* detected) {
  const CsvStart start = FindCsvStart(path);
  if (start.kind == HeaderKind::kNcu && CounterCsv(path, start).Column("Metric Name") < 0) {
    if (detected != nullptr) *detected = CounterFormat::kNcuRaw;
    StreamNcuRawLaunches(path, start, keep, sink);
    return;
  }
  CounterFormat format = CounterFormat::kNcuDetails;
  for (CounterLaunch& launch : ReadLaunches(path, &format)) {
    if (keep != nullptr) {
      for (auto it = launch.metrics.begin(); it != launch.metrics.end();) {
        if (keep->count(it->first) == 0) {
          launch.metric_base.erase(it->first);
          it = launch.metrics.erase(it);
        } else {
          ++it;
        }
      }
    }
    sink(std::move(launch));
  }
  if (detected != nullptr) *detected = format;
}

std::vector<CounterLaunch> ReadCounterLaunches(const std::string& path, CounterFormat* detected) {
  CounterFormat format = CounterFormat::kNcuDetails;
  std::vector<CounterLaunch> launches = ReadLaunches(path, &format);
  if (detected != nullptr) *detected = format;
  return launches;
}

double LaunchMetric(const CounterLaunch& launch, const std::string& metric) {
  const auto it = launch.metrics.find(metric);
  if (it != launch.metrics.end()) return it->second;
  const auto unknown = launch.unknown_units.find(metric);
  if (unknown != launch.unknown_units.end()) {
    throw InputError(launch.path, launch.line, metric,
                     fmt::format("unknown unit '{}' of launch ID {} ({}), so its value cannot "
                                 "be converted; known units: {}",
                                 unknown->second, launch.id, launch.kernel, KnownUnitsText()));
  }
  throw InputError(launch.path, launch.line, metric,
                   fmt::format("no value in this launch (launch ID {}, {}): the export has no such "
                               "column, or its cell is n/a",
                               launch.id, launch.kernel));
}

bool IsSummedCounter(const std::string& metric, const std::string& base) {
  if (base.find('/') != std::string::npos || base == "%" || base == "level" || base == "ratio") {
    return false;
  }
  const std::string lower = ToLower(metric);
  if (StartsWith(lower, "device__attribute_") || StartsWith(lower, "launch__")) return false;
  return !(EndsWith(lower, ".ratio") || lower.find(".pct") != std::string::npos ||
           lower.find("per_second") != std::string::npos ||
           lower.find("per_cycle") != std::string::npos ||
           lower.find(" per ") != std::string::npos);
}

CounterLaunchSum::CounterLaunchSum(std::string name) : name_(std::move(name)) {}

void CounterLaunchSum::Add(const CounterLaunch& launch) {
  if (count_ == 0) {
    path_ = launch.path;
    line_ = launch.line;
  }
  // Duration weights: every launch's own, or equal weights when one lacks it (both are kept
  // until the end decides).
  auto it = launch.metrics.find("gpu__time_duration.sum");
  if (it == launch.metrics.end()) it = launch.metrics.find("Duration");
  const bool has_time = it != launch.metrics.end() && it->second > 0.0;
  timed_ = timed_ && has_time;
  const int64_t times = std::max<int64_t>(1, launch.launches);
  count_ += times;
  for (const auto& [metric, value] : launch.metrics) {
    const auto base_it = launch.metric_base.find(metric);
    const std::string base = base_it == launch.metric_base.end() ? "" : base_it->second;
    Total& t = totals_[metric];
    if (!t.seen) {
      t.seen = true;
      t.base = base;
      t.first_line = launch.line;
      t.summed = IsSummedCounter(metric, base);
    } else if (t.base != base) {
      throw InputError(launch.path, launch.line, metric,
                       fmt::format("metric '{}' is {} in this launch but {} in the launch on "
                                   "line {}; launches summed into '{}' must agree",
                                   metric, base.empty() ? "a plain count" : base,
                                   t.base.empty() ? "a plain count" : t.base, t.first_line, name_));
    }
    if (t.summed) {
      // A count, byte count or time below zero in one launch (a corrupt export) would be summed
      // into the others' without a trace: only a negative total was refused before.
      if (value < 0.0) {
        throw InputError(
            launch.path, launch.line, metric,
            fmt::format("negative value {} in this launch (launch ID {}, {}): a count, byte count "
                        "or time is never negative, and summed into '{}' it would hide in the "
                        "total (a corrupt export?)",
                        value, launch.id, launch.kernel, name_));
      }
      t.sum += value * static_cast<double>(times);
      continue;
    }
    const double equal_w = static_cast<double>(times);
    t.equal_weight += equal_w;
    t.equal_mean +=
        (equal_w / t.equal_weight) * (value - t.equal_mean);  // exact for identical values
    if (timed_) {
      const double w = it->second * static_cast<double>(times);
      t.timed_weight += w;
      t.timed_mean += (w / t.timed_weight) * (value - t.timed_mean);
    }
  }
  for (const auto& entry : launch.unknown_units) unknown_units_.insert(entry);
}

KernelCounters CounterLaunchSum::Result() const {
  if (count_ == 0)
    throw std::invalid_argument("SumCounterLaunches: no launches for '" + name_ + "'");
  KernelCounters out;
  out.kernel = name_;
  out.path = path_;
  out.line = line_;
  out.launches = static_cast<int>(count_);
  out.unknown_units = unknown_units_;
  for (const auto& [metric, t] : totals_) {
    if (out.unknown_units.count(metric) > 0) continue;  // some launches could not be read
    out.metrics[metric] = t.summed ? t.sum : timed_ ? t.timed_mean : t.equal_mean;
  }
  return out;
}

KernelCounters SumCounterLaunches(const std::string& name,
                                  const std::vector<CounterLaunch>& launches) {
  CounterLaunchSum sum(name);
  for (const CounterLaunch& launch : launches) sum.Add(launch);
  return sum.Result();
}

std::string NcuBaseUnitForMetric(const std::string& metric) {
  const std::string lower = ToLower(metric);
  if (StartsWith(lower, "gpu__time") || lower == "duration") return "nsecond";
  if (lower.find("pct") != std::string::npos) return "%";
  const bool per_second = EndsWith(lower, ".per_second");
  if (lower.find("bytes") != std::string::npos) return per_second ? "byte/second" : "byte";
  if (lower.find("cycles") != std::string::npos) return per_second ? "cycle/second" : "cycle";
  if (per_second) return "1/second";
  if (lower.find("inst") != std::string::npos) return "inst";
  return "";
}

std::string NcuDetailsCsv(const std::vector<KernelCounters>& kernels) {
  std::string out =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
      "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\","
      "\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  int64_t id = 0;
  for (const KernelCounters& k : kernels) {
    if (k.kernel.empty()) throw std::invalid_argument("NcuDetailsCsv: a kernel without a name");
    if (k.metrics.empty()) {
      throw std::invalid_argument("NcuDetailsCsv: kernel '" + k.kernel + "' has no metrics");
    }
    // Each metric's text once, then the same rows for every launch.
    std::vector<std::pair<std::string, std::string>> rows;  // (unit, value text)
    for (const auto& [metric, value] : k.metrics) {
      if (!std::isfinite(value)) {
        throw std::invalid_argument(fmt::format(
            "NcuDetailsCsv: metric '{}' of kernel '{}' is not finite", metric, k.kernel));
      }
      std::string unit_text = NcuBaseUnitForMetric(metric);
      CounterUnit unit;
      ParseCounterUnit(unit_text, &unit);
      double y = value;
      if (!ExactInUnit(value, unit, &y)) {
        // No exact representation in the tool's unit: write the base unit (factor 1).
        unit_text = unit.base == "second" ? "second" : "";
        y = value;
      }
      rows.emplace_back(unit_text, ExactText(y));
    }
    const int launches = std::max(1, k.launches);
    for (int launch = 0; launch < launches; ++launch, ++id) {
      size_t r = 0;
      for (const auto& entry : k.metrics) {
        const auto& [unit_text, value_text] = rows[r++];
        out += fmt::format(
            "\"{}\",\"1\",\"wattcal\",\"localhost\",{},\"1\",\"7\",\"\",\"\",\"0\",\"\","
            "\"Command line profiler metrics\",{},{},{}\n",
            id, Quote(k.kernel), Quote(entry.first), Quote(unit_text), Quote(value_text));
      }
    }
  }
  return out;
}

}  // namespace wattcal