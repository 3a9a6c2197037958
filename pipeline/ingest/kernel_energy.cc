#include "ingest/kernel_energy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "util/errors.h"

namespace wattcal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A window may overhang the log's first or last reading by this much (rounding between the
// windows' and the log's time bases); the overhang is integrated at that reading's power.
constexpr double kEdgeToleranceS = 1e-6;

constexpr std::pair<uint32_t, const char*> kFlagNames[] = {
    {kFlagTooFewSamples, "too_few_samples"},
    {kFlagTempDrift, "temp_drift"},
    {kFlagHighCv, "high_cv"},
    {kFlagOverlap, "overlap"},
};

// Distinct values with their counts (clock readings take few values), for medians in memory
// bounded by the number of distinct clocks rather than the number of readings.
class ValueCounts {
 public:
  void Add(double v) {
    if (std::isnan(v)) return;
    auto it =
        std::lower_bound(values_.begin(), values_.end(), v,
                         [](const std::pair<double, int64_t>& a, double b) { return a.first < b; });
    if (it != values_.end() && it->first == v) {
      ++it->second;
    } else {
      values_.insert(it, {v, 1});
    }
    ++total_;
  }
  bool empty() const { return total_ == 0; }
  double Median() const {
    if (total_ == 0) return kNaN;
    // The k-th smallest reading (0-based).
    auto kth = [this](int64_t k) {
      int64_t seen = 0;
      for (const auto& [value, count] : values_) {
        seen += count;
        if (k < seen) return value;
      }
      return values_.back().first;
    };
    if (total_ % 2 == 1) return kth(total_ / 2);
    return 0.5 * (kth(total_ / 2 - 1) + kth(total_ / 2));
  }

 private:
  std::vector<std::pair<double, int64_t>> values_;
  int64_t total_ = 0;
};

// A window being integrated.
struct Active {
  size_t index = 0;       // into the windows vector
  double energy_j = 0.0;  // trapezoids so far
  double power_at_start_w = 0.0;
  int64_t samples = 0;  // readings inside
  double mean_w = 0.0;  // Welford running mean and sum of squared deviations
  double m2 = 0.0;
  double max_w = -std::numeric_limits<double>::infinity();
  double first_temp_c = kNaN;
  double last_temp_c = kNaN;
  double papi_power_w = kNaN;  // last reading at or before the end
  double papi_core_mhz = kNaN;
  double papi_mem_mhz = kNaN;
  ValueCounts core, mem;
  uint32_t flags = 0;
};

double Interpolate(const PowerSample& a, const PowerSample& b, double t) {
  if (b.time_s <= a.time_s) return b.power_w;
  return a.power_w + (b.power_w - a.power_w) * (t - a.time_s) / (b.time_s - a.time_s);
}

std::string Describe(const KernelWindow& w) {
  return fmt::format("'{}' [{:.6f} s, {:.6f} s]", w.kernel, w.start_s, w.end_s);
}

WindowEnergy Finalize(const Active& a, const KernelWindow& w, const KernelEnergyOptions& o) {
  WindowEnergy e;
  e.kernel = w.kernel;
  e.line = w.line;
  e.start_s = w.start_s;
  e.end_s = w.end_s;
  e.duration_s = w.end_s - w.start_s;
  e.energy_j = a.energy_j;
  e.mean_power_w = e.duration_s > 0.0 ? a.energy_j / e.duration_s : a.power_at_start_w;
  e.samples = a.samples;
  e.papi_energy_j = a.papi_power_w * e.duration_s;
  e.sma_max_power_w = a.samples > 0 ? a.max_w : kNaN;
  e.temp_drift_c = a.last_temp_c - a.first_temp_c;  // NaN when unknown
  e.cv = (a.samples >= 2 && a.mean_w != 0.0)
             ? std::sqrt(a.m2 / static_cast<double>(a.samples)) / a.mean_w
             : kNaN;
  e.f_core_mhz = a.core.empty() ? a.papi_core_mhz : a.core.Median();
  e.f_mem_mhz = a.mem.empty() ? a.papi_mem_mhz : a.mem.Median();
  e.flags = a.flags;
  if (e.samples < o.min_samples) e.flags |= kFlagTooFewSamples;
  if (std::fabs(e.temp_drift_c) > o.max_temp_drift_c) e.flags |= kFlagTempDrift;
  if (e.cv > o.max_cv) e.flags |= kFlagHighCv;
  return e;
}

// "%.9g", or "" for NaN.
std::string Number(double v) {
  if (std::isnan(v)) return std::string();
  return fmt::format("{:.9g}", v);
}

std::string Time(double v) {
  if (std::isnan(v)) return std::string();
  return fmt::format("{:.6f}", v);
}

std::string CsvText(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Mean and sample standard deviation of the non-NaN values.
std::pair<double, double> MeanSd(const std::vector<double>& values) {
  double sum = 0.0;
  int64_t n = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    sum += v;
    ++n;
  }
  if (n == 0) return {kNaN, kNaN};
  const double mean = sum / static_cast<double>(n);
  if (n < 2) return {mean, kNaN};
  double ss = 0.0;
  for (double v : values) {
    if (!std::isnan(v)) ss += (v - mean) * (v - mean);
  }
  return {mean, std::sqrt(ss / static_cast<double>(n - 1))};
}

}  // namespace

std::string WindowFlagsToString(uint32_t flags) {
  std::string out;
  for (const auto& [bit, name] : kFlagNames) {
    if (flags & bit) {
      if (!out.empty()) out += ';';
      out += name;
    }
  }
  return out;
}

bool KernelEnergyOptions::Check(std::string* error) const {
  if (min_samples < 0) {
    *error = fmt::format("KernelEnergyOptions.min_samples = {} must be >= 0", min_samples);
    return false;
  }
  if (!(max_temp_drift_c >= 0.0)) {
    *error =
        fmt::format("KernelEnergyOptions.max_temp_drift_c = {} must be >= 0", max_temp_drift_c);
    return false;
  }
  if (!(max_cv >= 0.0)) {
    *error = fmt::format("KernelEnergyOptions.max_cv = {} must be >= 0", max_cv);
    return false;
  }
  if (!(settle_ms >= 0.0) || !std::isfinite(settle_ms)) {
    *error = fmt::format("KernelEnergyOptions.settle_ms = {} must be finite and >= 0", settle_ms);
    return false;
  }
  return true;
}

std::vector<WindowEnergy> MeasureWindows(PowerLogReader* log,
                                         const std::vector<KernelWindow>& windows,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const size_t n = windows.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&windows](size_t a, size_t b) {
    return std::tie(windows[a].start_s, windows[a].end_s, windows[a].line) <
           std::tie(windows[b].start_s, windows[b].end_s, windows[b].line);
  });

  std::vector<WindowEnergy> results(n);
  std::vector<Active> active;
  size_t next = 0;
  PowerSample prev, cur;
  bool have_prev = false;
  double first_time_s = 0.0;
  int64_t first_line = 0;
  auto log_range = [&]() {
    return fmt::format("the power log {} covers [{:.6f} s, {:.6f} s] (lines {}-{})", log->path(),
                       first_time_s, prev.time_s, first_line, prev.line);
  };

  while (log->Next(&cur)) {
    if (!have_prev) {
      first_time_s = cur.time_s;
      first_line = cur.line;
      if (next < n && windows[order[next]].start_s < cur.time_s - kEdgeToleranceS) {
        const KernelWindow& w = windows[order[next]];
        throw InputError(windows_path, w.line, "start",
                         fmt::format("window {} starts before the power log's first reading "
                                     "({:.6f} s, {}:{})",
                                     Describe(w), cur.time_s, log->path(), cur.line));
      }
    }
    // Windows that start by this reading become active; the reading before is at or before
    // their start, so the trapezoid from prev to cur covers the start edge.
    while (next < n && windows[order[next]].start_s <= cur.time_s) {
      const KernelWindow& w = windows[order[next]];
      Active a;
      a.index = order[next];
      a.power_at_start_w = have_prev ? Interpolate(prev, cur, w.start_s) : cur.power_w;
      if (!have_prev && w.start_s < cur.time_s) {  // overhangs the first reading (tolerance)
        a.energy_j += cur.power_w * (std::min(w.end_s, cur.time_s) - w.start_s);
      }
      if (have_prev) {
        a.papi_power_w = prev.power_w;
        a.papi_core_mhz = prev.f_core_mhz;
        a.papi_mem_mhz = prev.f_mem_mhz;
      }
      for (Active& other : active) {
        if (windows[other.index].end_s > w.start_s) {
          other.flags |= kFlagOverlap;
          a.flags |= kFlagOverlap;
        }
      }
      active.push_back(std::move(a));
      ++next;
    }
    for (Active& a : active) {
      const KernelWindow& w = windows[a.index];
      if (have_prev && cur.time_s > prev.time_s) {
        const double lo = std::max(w.start_s, prev.time_s);
        const double hi = std::min(w.end_s, cur.time_s);
        if (hi > lo) {
          a.energy_j += 0.5 * (Interpolate(prev, cur, lo) + Interpolate(prev, cur, hi)) * (hi - lo);
        }
      }
      if (cur.time_s >= w.start_s && cur.time_s <= w.end_s) {
        ++a.samples;
        const double delta = cur.power_w - a.mean_w;
        a.mean_w += delta / static_cast<double>(a.samples);
        a.m2 += delta * (cur.power_w - a.mean_w);
        a.max_w = std::max(a.max_w, cur.power_w);
        if (!std::isnan(cur.temperature_c)) {
          if (std::isnan(a.first_temp_c)) a.first_temp_c = cur.temperature_c;
          a.last_temp_c = cur.temperature_c;
        }
        a.core.Add(cur.f_core_mhz);
        a.mem.Add(cur.f_mem_mhz);
      }
      if (cur.time_s <= w.end_s) {
        a.papi_power_w = cur.power_w;
        a.papi_core_mhz = cur.f_core_mhz;
        a.papi_mem_mhz = cur.f_mem_mhz;
      }
    }
    // A window is complete once a reading lies beyond its end (a later reading at exactly the
    // end time still counts as inside).
    auto done = std::remove_if(active.begin(), active.end(), [&](const Active& a) {
      const KernelWindow& w = windows[a.index];
      if (w.end_s >= cur.time_s) return false;
      results[a.index] = Finalize(a, w, options);
      return true;
    });
    active.erase(done, active.end());
    prev = cur;
    have_prev = true;
  }
  // Windows ending exactly at the last reading are complete; any other is outside the log.
  for (Active& a : active) {
    const KernelWindow& w = windows[a.index];
    if (w.end_s > prev.time_s + kEdgeToleranceS) {
      throw InputError(windows_path, w.line, "end",
                       fmt::format("window {} ends after the power log's last reading: {}",
                                   Describe(w), log_range()));
    }
    if (w.end_s > prev.time_s) {  // overhangs the last reading (tolerance)
      a.energy_j += prev.power_w * (w.end_s - std::max(w.start_s, prev.time_s));
    }
    results[a.index] = Finalize(a, w, options);
  }
  if (next < n) {
    const KernelWindow& w = windows[order[next]];
    throw InputError(windows_path, w.line, "start",
                     fmt::format("window {} starts after the power log's last reading: {}",
                                 Describe(w), log_range()));
  }
  return results;
}

std::vector<KernelEnergy> AggregateKernelEnergies(const std::vector<WindowEnergy>& windows,
                                                  const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  // Key: name, then clocks rounded to 1 MHz (-1 = unknown, sorts first).
  using Key = std::tuple<std::string, int64_t, int64_t>;
  auto rounded = [](double mhz) -> int64_t {
    return std::isnan(mhz) ? -1 : static_cast<int64_t>(std::llround(mhz));
  };
  std::map<Key, std::vector<const WindowEnergy*>> groups;
  for (const WindowEnergy& w : windows) {
    groups[Key(w.kernel, rounded(w.f_core_mhz), rounded(w.f_mem_mhz))].push_back(&w);
  }
  std::vector<KernelEnergy> out;
  out.reserve(groups.size());
  for (const auto& [key, members] : groups) {
    KernelEnergy k;
    k.kernel = std::get<0>(key);
    k.f_core_mhz = std::get<1>(key) < 0 ? kNaN : static_cast<double>(std::get<1>(key));
    k.f_mem_mhz = std::get<2>(key) < 0 ? kNaN : static_cast<double>(std::get<2>(key));
    std::vector<double> duration, energy, power, papi, sma, drift, cv;
    int64_t flag_counts[std::size(kFlagNames)] = {};
    for (const WindowEnergy* w : members) {
      for (size_t f = 0; f < std::size(kFlagNames); ++f) {
        if (w->flags & kFlagNames[f].first) ++flag_counts[f];
      }
      if (options.exclude_flagged && w->flags != 0) {
        ++k.excluded_launches;
        continue;
      }
      ++k.launches;
      k.samples += w->samples;
      duration.push_back(w->duration_s);
      energy.push_back(w->energy_j);
      power.push_back(w->mean_power_w);
      papi.push_back(w->papi_energy_j);
      sma.push_back(w->sma_max_power_w);
      drift.push_back(w->temp_drift_c);
      cv.push_back(w->cv);
    }
    for (size_t f = 0; f < std::size(kFlagNames); ++f) {
      if (flag_counts[f] == 0) continue;
      if (!k.flags.empty()) k.flags += ';';
      k.flags += fmt::format("{}:{}", kFlagNames[f].second, flag_counts[f]);
    }
    k.duration_s = MeanSd(duration).first;
    std::tie(k.energy_j, k.energy_j_sd) = MeanSd(energy);
    std::tie(k.mean_power_w, k.mean_power_w_sd) = MeanSd(power);
    k.papi_energy_j = MeanSd(papi).first;
    k.sma_max_power_w = MeanSd(sma).first;
    k.temp_drift_c = MeanSd(drift).first;
    k.cv = MeanSd(cv).first;
    out.push_back(std::move(k));
  }
  return out;
}

InstructionEnergy PerInstructionEnergy(const KernelEnergy& with, const KernelEnergy& without,
                                       double instructions) {
  if (!(instructions > 0.0) || !std::isfinite(instructions)) {
    throw OptionError(
        fmt::format("instructions = {} must be a finite number > 0 (the "
                    "instructions per launch that the overhead twin lacks)",
                    instructions));
  }
  InstructionEnergy e;
  e.instructions = instructions;
  e.launches_with = with.launches;
  e.launches_without = without.launches;
  e.total_energy_j = with.energy_j;
  e.overhead_energy_j = without.energy_j;
  if (with.launches == 0 || without.launches == 0) {
    e.energy_j = e.energy_j_sd = e.energy_j_se = e.papi_energy_j = kNaN;
    return e;
  }
  e.energy_j = (with.energy_j - without.energy_j) / instructions;
  e.papi_energy_j = (with.papi_energy_j - without.papi_energy_j) / instructions;
  const double vw = with.energy_j_sd * with.energy_j_sd;
  const double vo = without.energy_j_sd * without.energy_j_sd;
  e.energy_j_sd = std::sqrt(vw + vo) / instructions;  // NaN when either sd is unknown
  e.energy_j_se = std::sqrt(vw / static_cast<double>(with.launches) +
                            vo / static_cast<double>(without.launches)) /
                  instructions;
  return e;
}

std::string KernelEnergiesToCsv(const std::vector<KernelEnergy>& kernels) {
  std::string out =
      "kernel,launches,duration_s,energy_j,mean_power_w,samples,f_core_mhz,f_mem_mhz,"
      "energy_j_sd,mean_power_w_sd,papi_energy_j,sma_max_power_w,temp_drift_c,cv,flags,"
      "excluded_launches\n";
  for (const KernelEnergy& k : kernels) {
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvText(k.kernel),
                    k.launches, Number(k.duration_s), Number(k.energy_j), Number(k.mean_power_w),
                    k.samples, Number(k.f_core_mhz), Number(k.f_mem_mhz), Number(k.energy_j_sd),
                    Number(k.mean_power_w_sd), Number(k.papi_energy_j), Number(k.sma_max_power_w),
                    Number(k.temp_drift_c), Number(k.cv), CsvText(k.flags), k.excluded_launches);
  }
  return out;
}

std::string WindowEnergiesToCsv(const std::vector<WindowEnergy>& windows) {
  std::string out =
      "kernel,line,start_s,end_s,duration_s,energy_j,mean_power_w,samples,papi_energy_j,"
      "sma_max_power_w,temp_drift_c,cv,f_core_mhz,f_mem_mhz,flags\n";
  for (const WindowEnergy& w : windows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvText(w.kernel), w.line,
                       Time(w.start_s), Time(w.end_s), Number(w.duration_s), Number(w.energy_j),
                       Number(w.mean_power_w), w.samples, Number(w.papi_energy_j),
                       Number(w.sma_max_power_w), Number(w.temp_drift_c), Number(w.cv),
                       Number(w.f_core_mhz), Number(w.f_mem_mhz), WindowFlagsToString(w.flags));
  }
  return out;
}

KernelEnergyResult MeasureKernelEnergies(const std::string& log_path,
                                         const PowerLogOptions& log_options,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  std::vector<KernelWindow> windows = ReadKernelWindows(windows_path, log_options.utc_offset_h);
  if (options.settle_ms > 0.0) {
    const double settle_s = options.settle_ms * 1e-3;
    for (KernelWindow& w : windows) {
      if (!(w.end_s - w.start_s > settle_s)) {
        throw InputError(windows_path, w.line, "end",
                         fmt::format("the launch of '{}' lasts {} ms, not longer than the settle "
                                     "time of {} ms: nothing is left to measure",
                                     w.kernel, (w.end_s - w.start_s) * 1e3, options.settle_ms));
      }
      w.start_s += settle_s;
    }
  }
  PowerLogReader log(log_path, log_options);
  KernelEnergyResult result;
  result.windows = MeasureWindows(&log, windows, windows_path, options);
  result.kernels = AggregateKernelEnergies(result.windows, options);
  result.format = log.format();
  result.power_field = log.power_field();
  result.log_stats = log.stats();
  return result;
}

}  // namespace wattcal
