#include "ingest/kernel_energy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "ingest/energy_counter.h"
#include "util/errors.h"
#include "util/csv_field.h"
#include "util/logging.h"
#include "util/option_rule.h"
#include "util/stats.h"

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
    {kFlagClockMoved, "clock_moved"},
    {kFlagPowerCap, "power_cap"},
    {kFlagThermal, "thermal"},
    {kFlagHwSlowdown, "hw_slowdown"},
    {kFlagSampleGap, "sample_gap"},
    {kFlagCounterMismatch, "counter_mismatch"},
    {kFlagDataToggle, "data_toggle"},
    {kFlagMetricAbsent, "metric_absent"},
};

// A step function's value over a window: time-weighted mean, smallest and largest value held
// for a positive time. NaN values (missing readings) are left out.
class StepStats {
 public:
  void Add(double value, double duration_s) {
    if (std::isnan(value) || !(duration_s > 0.0)) return;
    if (duration_s_ == 0.0) reference_ = value;
    integral_ += (value - reference_) * duration_s;  // exact for a constant clock
    duration_s_ += duration_s;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  bool empty() const { return duration_s_ == 0.0; }
  double Mean() const { return empty() ? kNaN : reference_ + integral_ / duration_s_; }
  double Min() const { return empty() ? kNaN : min_; }
  double Max() const { return empty() ? kNaN : max_; }

 private:
  double reference_ = 0.0;  // the first value; the integral is taken relative to it
  double integral_ = 0.0;
  double duration_s_ = 0.0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
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
  PowerSample held;            // the last reading at or before the end (its clocks, reasons)
  bool have_held = false;
  StepStats core, mem;   // clocks held over the window
  uint64_t reasons = 0;  // OR of the reasons held over the window
  bool has_reasons = false;
  double limit_w = kNaN;  // lowest power limit held over the window
  uint32_t flags = 0;
  double max_gap_s = 0.0;  // longest interval between readings that touches the window
  int64_t gap_from_line = 0, gap_to_line = 0;
};

// The typical sampling period: the median of the first kPeriodGaps gaps of the log.
constexpr size_t kPeriodGaps = 64;

// `s`'s clocks, reasons and limit held for `duration_s` inside a window.
void AddHeld(const PowerSample& s, double duration_s, Active* a) {
  if (!(duration_s > 0.0)) return;
  a->core.Add(s.f_core_mhz, duration_s);
  a->mem.Add(s.f_mem_mhz, duration_s);
  if (s.has_clock_reasons) {
    a->reasons |= s.clock_reasons;
    a->has_reasons = true;
  }
  if (!std::isnan(s.power_limit_w) && !(s.power_limit_w >= a->limit_w))
    a->limit_w = s.power_limit_w;
}

void SetHeld(const PowerSample& s, Active* a) {
  a->papi_power_w = s.power_w;
  a->held = s;
  a->have_held = true;
}

double Interpolate(const PowerSample& a, const PowerSample& b, double t) {
  if (b.time_s <= a.time_s) return b.power_w;
  return a.power_w + (b.power_w - a.power_w) * (t - a.time_s) / (b.time_s - a.time_s);
}

std::string Describe(const KernelWindow& w) {
  return fmt::format("'{}' [{:.6f} s, {:.6f} s]", w.kernel, w.start_s, w.end_s);
}

// Sets the clock_moved, power_cap, thermal and hw_slowdown flags from the window's clocks and
// reasons (clearing any set before).
void ApplyClockFlags(const KernelEnergyOptions& o, WindowEnergy* e) {
  e->flags &= ~(kFlagClockMoved | kFlagPowerCap | kFlagThermal | kFlagHwSlowdown);
  auto moved = [&o](double lo, double hi) {
    return hi > 0.0 && (hi - lo) / hi > o.max_clock_range_frac;  // false for NaN
  };
  if (moved(e->f_core_min_mhz, e->f_core_max_mhz) || moved(e->f_mem_min_mhz, e->f_mem_max_mhz)) {
    e->flags |= kFlagClockMoved;
  }
  if (e->has_clock_reasons) {
    if (e->clock_reasons & kClockReasonSwPowerCap) e->flags |= kFlagPowerCap;
    if (e->clock_reasons & (kClockReasonSwThermalSlowdown | kClockReasonHwThermalSlowdown)) {
      e->flags |= kFlagThermal;
    }
    if (e->clock_reasons & (kClockReasonHwSlowdown | kClockReasonHwPowerBrakeSlowdown)) {
      e->flags |= kFlagHwSlowdown;
    }
  }
}

WindowEnergy Finalize(const Active& a, const KernelWindow& w, const KernelEnergyOptions& o,
                      const char* power_source) {
  WindowEnergy e;
  e.kernel = w.kernel;
  e.line = w.line;
  e.start_s = w.start_s;
  e.end_s = w.end_s;
  // The duration from integer nanoseconds: exact for a 1 us window at epoch 1.8e9 s. The power
  // was integrated over [start_s, end_s] in doubles, whose length is quantised at such epochs
  // (~0.24 us): the mean power is the integral over that length, and the energy that mean
  // over the exact duration.
  e.duration_s = DurationS(w);
  const double integrated_s = w.end_s - w.start_s;
  e.mean_power_w = integrated_s > 0.0 ? a.energy_j / integrated_s : a.power_at_start_w;
  e.energy_j = integrated_s > 0.0 ? e.mean_power_w * e.duration_s : a.energy_j;
  e.samples = a.samples;
  e.papi_energy_j = a.papi_power_w * e.duration_s;
  e.sma_max_power_w = a.samples > 0 ? a.max_w : kNaN;
  e.temp_drift_c = a.last_temp_c - a.first_temp_c;  // NaN when unknown
  e.cv = (a.samples >= 2 && a.mean_w != 0.0)
             ? std::sqrt(a.m2 / static_cast<double>(a.samples)) / a.mean_w
             : kNaN;
  // A window of zero length: the values in force at its start.
  StepStats core = a.core, mem = a.mem;
  uint64_t reasons = a.reasons;
  bool has_reasons = a.has_reasons;
  double limit_w = a.limit_w;
  if (a.have_held && core.empty() && mem.empty() && !has_reasons && std::isnan(limit_w)) {
    core.Add(a.held.f_core_mhz, 1.0);
    mem.Add(a.held.f_mem_mhz, 1.0);
    reasons = a.held.clock_reasons;
    has_reasons = a.held.has_clock_reasons;
    limit_w = a.held.power_limit_w;
  }
  e.f_core_mhz = core.Mean();
  e.f_core_min_mhz = core.Min();
  e.f_core_max_mhz = core.Max();
  e.f_mem_mhz = mem.Mean();
  e.f_mem_min_mhz = mem.Min();
  e.f_mem_max_mhz = mem.Max();
  e.clock_reasons = reasons;
  e.has_clock_reasons = has_reasons;
  e.power_limit_w = limit_w;
  e.power_source = power_source;
  e.trapezoid_energy_j = e.energy_j;
  e.max_gap_s = a.max_gap_s;
  e.gap_from_line = a.gap_from_line;
  e.gap_to_line = a.gap_to_line;
  e.flags = a.flags;
  if (e.samples < o.min_samples) e.flags |= kFlagTooFewSamples;
  if (std::fabs(e.temp_drift_c) > o.max_temp_drift_c) e.flags |= kFlagTempDrift;
  if (e.cv > o.max_cv) e.flags |= kFlagHighCv;
  ApplyClockFlags(o, &e);
  return e;
}

// Mean and sample standard deviation of the non-NaN values.
std::pair<double, double> MeanSd(const std::vector<double>& values) {
  std::vector<double> known;
  std::copy_if(values.begin(), values.end(), std::back_inserter(known),
               [](double v) { return !std::isnan(v); });
  const double mean = Mean(known);
  return {mean, known.size() < 2 ? kNaN : SampleStdDev(known, mean)};
}

}  // namespace

const char* PowerSourceName(PowerSource source) {
  switch (source) {
    case PowerSource::kEnergyCounter: return "energy_counter";
    case PowerSource::kInstantPower: return "instant_power";
    case PowerSource::kAveragedPower: return "averaged_power";
  }
  return "unknown";
}

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
  if (min_samples < 0) return RejectOption(error, "--min-samples = {} must be >= 0", min_samples);
  if (!(max_temp_drift_c >= 0.0))
    return RejectOption(error, "--max-temp-drift-c = {} must be >= 0", max_temp_drift_c);
  if (!(max_cv >= 0.0)) return RejectOption(error, "--max-cv = {} must be >= 0", max_cv);
  if (!(settle_ms >= 0.0) || !std::isfinite(settle_ms))
    return RejectOption(error, "--settle-ms = {} must be finite and >= 0", settle_ms);
  if (!(max_clock_range_frac >= 0.0) || !std::isfinite(max_clock_range_frac))
    return RejectOption(
        error, "the clock_moved threshold, max_clock_range_frac = {} must be finite and >= 0",
        max_clock_range_frac);
  return true;
}

namespace {

// The windows' indices in start order (then end, then line).
std::vector<size_t> StartOrder(const std::vector<KernelWindow>& windows) {
  std::vector<size_t> order(windows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&windows](size_t a, size_t b) {
    return std::tie(windows[a].start_s, windows[a].end_s, windows[a].line) <
           std::tie(windows[b].start_s, windows[b].end_s, windows[b].line);
  });
  return order;
}

// Window `index` (w) starts by reading `cur`, the reading `prev` before it when `have_prev`: its
// power at the start, the part of it before the first reading (within the tolerance), and the
// overlap flags it shares with the active windows it overlaps.
Active OpenWindow(size_t index, const std::vector<KernelWindow>& windows, const PowerSample& prev,
                  const PowerSample& cur, bool have_prev, std::vector<Active>* active) {
  const KernelWindow& w = windows[index];
  Active a;
  a.index = index;
  a.power_at_start_w = have_prev ? Interpolate(prev, cur, w.start_s) : cur.power_w;
  if (!have_prev && w.start_s < cur.time_s) {  // overhangs the first reading (tolerance)
    a.energy_j += cur.power_w * (std::min(w.end_s, cur.time_s) - w.start_s);
    AddHeld(cur, std::min(w.end_s, cur.time_s) - w.start_s, &a);
  }
  if (have_prev) SetHeld(prev, &a);
  for (Active& other : *active) {
    if (windows[other.index].end_s > w.start_s) {
      other.flags |= kFlagOverlap;
      a.flags |= kFlagOverlap;
    }
  }
  return a;
}

// Adds reading `cur` (`prev` before it when `have_prev`, `gap_s` apart) to active window w: the
// largest gap, the trapezoid from prev to cur inside the window, the sample statistics and the
// clocks held.
void AddReading(const KernelWindow& w, const PowerSample& prev, const PowerSample& cur,
                bool have_prev, double gap_s, Active* a) {
  if (have_prev && gap_s > a->max_gap_s && prev.time_s < w.end_s && cur.time_s > w.start_s) {
    a->max_gap_s = gap_s;  // a gap inside the window or across one of its edges
    a->gap_from_line = prev.line;
    a->gap_to_line = cur.line;
  }
  if (have_prev && cur.time_s > prev.time_s) {
    const double lo = std::max(w.start_s, prev.time_s);
    const double hi = std::min(w.end_s, cur.time_s);
    if (hi > lo) {
      a->energy_j += 0.5 * (Interpolate(prev, cur, lo) + Interpolate(prev, cur, hi)) * (hi - lo);
      AddHeld(prev, hi - lo, a);  // prev's clocks hold until cur
    }
  }
  if (cur.time_s >= w.start_s && cur.time_s <= w.end_s) {
    ++a->samples;
    const double delta = cur.power_w - a->mean_w;
    a->mean_w += delta / static_cast<double>(a->samples);
    a->m2 += delta * (cur.power_w - a->mean_w);
    a->max_w = std::max(a->max_w, cur.power_w);
    if (!std::isnan(cur.temperature_c)) {
      if (std::isnan(a->first_temp_c)) a->first_temp_c = cur.temperature_c;
      a->last_temp_c = cur.temperature_c;
    }
  }
  if (cur.time_s <= w.end_s) SetHeld(cur, a);
}

// Flags the windows with a gap of more than a few sampling periods, the period being the
// median of the log's first gaps.
void FlagSampleGaps(std::vector<double> first_gaps, std::vector<WindowEnergy>* results) {
  if (first_gaps.empty()) return;
  std::nth_element(first_gaps.begin(), first_gaps.begin() + first_gaps.size() / 2,
                   first_gaps.end());
  const double period_s = first_gaps[first_gaps.size() / 2];
  const double limit_s = std::max(kSampleGapPeriods * period_s, kSampleGapMinS);
  for (WindowEnergy& e : *results) {
    if (e.max_gap_s > limit_s) e.flags |= kFlagSampleGap;
  }
}

}  // namespace

std::vector<WindowEnergy> MeasureWindows(PowerLogReader* log,
                                         const std::vector<KernelWindow>& windows,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const size_t n = windows.size();
  const std::vector<size_t> order = StartOrder(windows);
  std::vector<WindowEnergy> results(n);
  std::vector<Active> active;
  // Set once the first reading has been read (the kind is known from the header).
  const char* source = PowerSourceName(PowerSource::kAveragedPower);
  size_t next = 0;
  PowerSample prev, cur;
  bool have_prev = false;
  std::vector<double> first_gaps;
  double first_time_s = 0.0;
  int64_t first_line = 0;
  auto log_range = [&]() {
    return fmt::format("the power log {} covers [{:.6f} s, {:.6f} s] (lines {}-{})", log->path(),
                       first_time_s, prev.time_s, first_line, prev.line);
  };

  while (log->Next(&cur)) {
    if (!have_prev) {
      source =
          PowerSourceName(log->power_kind() == PowerKind::kInstant ? PowerSource::kInstantPower
                                                                   : PowerSource::kAveragedPower);
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
      Active a = OpenWindow(order[next], windows, prev, cur, have_prev, &active);
      active.push_back(std::move(a));
      ++next;
    }
    const double gap_s = have_prev ? cur.time_s - prev.time_s : 0.0;
    if (have_prev && first_gaps.size() < kPeriodGaps && gap_s > 0.0) first_gaps.push_back(gap_s);
    for (Active& a : active) AddReading(windows[a.index], prev, cur, have_prev, gap_s, &a);
    // A window is complete once a reading lies beyond its end (a later reading at exactly the
    // end time still counts as inside).
    auto done = std::remove_if(active.begin(), active.end(), [&](const Active& a) {
      const KernelWindow& w = windows[a.index];
      if (w.end_s >= cur.time_s) return false;
      results[a.index] = Finalize(a, w, options, source);
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
      throw InputError(
          windows_path, w.line, "end",
          fmt::format("window {} ends after the power log's last reading, by {:.0f} us (a "
                      "window may overhang the log by at most {:.0f} us; measure only windows "
                      "inside the log): {}",
                      Describe(w), (w.end_s - prev.time_s) * 1e6, kEdgeToleranceS * 1e6,
                      log_range()));
    }
    if (w.end_s > prev.time_s) {  // overhangs the last reading (tolerance)
      const double overhang_s = w.end_s - std::max(w.start_s, prev.time_s);
      a.energy_j += prev.power_w * overhang_s;
      AddHeld(prev, overhang_s, &a);
    }
    results[a.index] = Finalize(a, w, options, source);
  }
  if (next < n) {
    const KernelWindow& w = windows[order[next]];
    throw InputError(windows_path, w.line, "start",
                     fmt::format("window {} starts after the power log's last reading: {}",
                                 Describe(w), log_range()));
  }
  // Gaps of more than a few sampling periods.
  FlagSampleGaps(std::move(first_gaps), &results);
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
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(k.kernel), k.launches,
        CsvNumber(k.duration_s), CsvNumber(k.energy_j), CsvNumber(k.mean_power_w), k.samples,
        CsvNumber(k.f_core_mhz), CsvNumber(k.f_mem_mhz), CsvNumber(k.energy_j_sd),
        CsvNumber(k.mean_power_w_sd), CsvNumber(k.papi_energy_j), CsvNumber(k.sma_max_power_w),
        CsvNumber(k.temp_drift_c), CsvNumber(k.cv), CsvField(k.flags), k.excluded_launches);
  }
  return out;
}

std::string WindowEnergiesToCsv(const std::vector<WindowEnergy>& windows) {
  std::string out =
      "kernel,line,start_s,end_s,duration_s,energy_j,mean_power_w,samples,papi_energy_j,"
      "sma_max_power_w,temp_drift_c,cv,f_core_mhz,f_mem_mhz,flags,f_core_min_mhz,"
      "f_core_max_mhz,f_mem_min_mhz,f_mem_max_mhz,clock_reasons,power_limit_w,power_source,"
      "trapezoid_energy_j\n";
  for (const WindowEnergy& w : windows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},", CsvField(w.kernel), w.line,
                       CsvFixed(w.start_s, 6), CsvFixed(w.end_s, 6), CsvNumber(w.duration_s),
                       CsvNumber(w.energy_j), CsvNumber(w.mean_power_w), w.samples,
                       CsvNumber(w.papi_energy_j), CsvNumber(w.sma_max_power_w),
                       CsvNumber(w.temp_drift_c), CsvNumber(w.cv), CsvNumber(w.f_core_mhz),
                       CsvNumber(w.f_mem_mhz), WindowFlagsToString(w.flags));
    out += fmt::format(
        "{},{},{},{},{},{},{},{}\n", CsvNumber(w.f_core_min_mhz), CsvNumber(w.f_core_max_mhz),
        CsvNumber(w.f_mem_min_mhz), CsvNumber(w.f_mem_max_mhz),
        w.has_clock_reasons ? fmt::format("{:#x}", w.clock_reasons) : std::string(),
        CsvNumber(w.power_limit_w), CsvField(w.power_source), CsvNumber(w.trapezoid_energy_j));
  }
  return out;
}

namespace {

// `windows` with each start moved settle_ms later (with settle_short_windows_by_half, a window
// shorter than twice that by half its length; counted in *half_settled).
std::vector<KernelWindow> SettleWindows(std::vector<KernelWindow> windows,
                                        const std::string& windows_path,
                                        const KernelEnergyOptions& options,
                                        int64_t* half_settled = nullptr) {
  if (options.settle_ms > 0.0) {
    const double settle_s = options.settle_ms * 1e-3;
    for (KernelWindow& w : windows) {
      const double d = w.end_s - w.start_s;
      if (options.settle_short_windows_by_half && !(d >= 2.0 * settle_s)) {
        DelayWindowStart(&w, 0.5 * d);
        if (half_settled != nullptr) ++*half_settled;
        continue;
      }
      if (!(w.end_s - w.start_s > settle_s)) {
        throw InputError(windows_path, w.line, "end",
                         fmt::format("the launch of '{}' lasts {} ms, not longer than the settle "
                                     "time of {} ms: nothing is left to measure",
                                     w.kernel, (w.end_s - w.start_s) * 1e3, options.settle_ms));
      }
      DelayWindowStart(&w, settle_s);
    }
  }
  return windows;
}

// A launch as MeasureKernelEnergies reports it: `w`, its settled part, keeps the steady-state
// mean power (what training reads), its readings, CV, temperature drift, clocks and their flags;
// the whole launch gives the start, duration and energies (MTSM, PAPI-style, trapezoid), and a
// sample gap or an overlap anywhere in it.
void ReportWholeLaunch(const WindowEnergy& whole, WindowEnergy* w) {
  w->start_s = whole.start_s;
  w->duration_s = whole.duration_s;
  w->energy_j = whole.energy_j;
  w->papi_energy_j = whole.papi_energy_j;
  w->trapezoid_energy_j = whole.trapezoid_energy_j;
  w->flags |= whole.flags & (kFlagSampleGap | kFlagOverlap);
  if (whole.max_gap_s > w->max_gap_s) {
    w->max_gap_s = whole.max_gap_s;
    w->gap_from_line = whole.gap_from_line;
    w->gap_to_line = whole.gap_to_line;
  }
}

}  // namespace

KernelEnergyReport MeasureKernelEnergies(const std::string& log_path,
                                         const PowerLogOptions& log_options,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const std::vector<KernelWindow> launches =
      ReadKernelWindows(windows_path, log_options.utc_offset_h);
  KernelEnergyReport result;
  const std::vector<KernelWindow> windows =
      SettleWindows(launches, windows_path, options, &result.half_settled_windows);
  PowerLogReader log(log_path, log_options);
  result.windows = MeasureWindows(&log, windows, windows_path, options);
  if (options.settle_ms > 0.0) {
    // The steady state gives the power; a launch's energy and duration are the whole launch's.
    PowerLogReader again(log_path, log_options);
    const std::vector<WindowEnergy> whole = MeasureWindows(&again, launches, windows_path, options);
    for (size_t i = 0; i < whole.size(); ++i) ReportWholeLaunch(whole[i], &result.windows[i]);
  }
  result.kernels = AggregateKernelEnergies(result.windows, options);
  result.format = log.format();
  result.power_field = log.power_field();
  result.log_stats = log.stats();
  result.power_source = log.power_kind() == PowerKind::kInstant ? PowerSource::kInstantPower
                                                                : PowerSource::kAveragedPower;
  result.power_source_name = PowerSourceName(result.power_source);
  return result;
}

KernelEnergyReport MeasureKernelEnergiesWithReasons(const std::string& primary_log,
                                                    const PowerLogOptions& primary_options,
                                                    const std::string& secondary_log,
                                                    const PowerLogOptions& secondary_options,
                                                    const std::string& windows_path,
                                                    const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const PowerLogOptions& power_options = primary_log.empty() ? secondary_options : primary_options;
  int64_t half_settled = 0;
  const std::vector<KernelWindow> windows =
      SettleWindows(ReadKernelWindows(windows_path, power_options.utc_offset_h), windows_path,
                    options, &half_settled);
  KernelEnergyReport result =
      MeasureKernelEnergiesWithReasons(primary_log, primary_options, secondary_log,
                                       secondary_options, windows, windows_path, options);
  result.half_settled_windows = half_settled;
  return result;
}

KernelEnergyReport MeasureKernelEnergiesWithReasons(const std::string& primary_log,
                                                    const PowerLogOptions& primary_options,
                                                    const std::string& secondary_log,
                                                    const PowerLogOptions& secondary_options,
                                                    const std::vector<KernelWindow>& windows,
                                                    const std::string& windows_path,
                                                    const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (primary_log.empty() && secondary_log.empty()) {
    throw OptionError(
        "no power log: give the primary (NVML raw) log, the secondary (nvidia-smi) log or both");
  }
  const bool primary = !primary_log.empty();
  const std::string& power_path = primary ? primary_log : secondary_log;
  const PowerLogOptions& power_options = primary ? primary_options : secondary_options;

  PowerLogReader log(power_path, power_options);
  KernelEnergyReport result;
  result.windows = MeasureWindows(&log, windows, windows_path, options);
  result.format = log.format();
  result.power_field = log.power_field();
  result.log_stats = log.stats();

  // The energy: the counter, else the power column.
  bool counter = false;
  if (log.has_energy_counter()) {
    // The counter is cross-checked against an instantaneous power column, and against any
    // power column for a freeze: a frozen or stepped counter must not give a window a wrong
    // power silently.
    PowerLogReader again(power_path, power_options);
    counter = kernel_energy_internal::UseEnergyCounter(
        &again, log.power_kind() == PowerKind::kInstant, windows, &result.windows);
    if (!counter) {
      LogWarning(
          fmt::format("{}: the energy counter changes fewer than twice in the log: the "
                      "window energies come from the power column '{}' instead",
                      power_path, log.power_field()));
    }
  }
  if (counter) {
    result.power_source = PowerSource::kEnergyCounter;
  } else if (log.power_kind() == PowerKind::kInstant) {
    result.power_source = PowerSource::kInstantPower;
  } else {
    result.power_source = PowerSource::kAveragedPower;
    LogWarning(fmt::format(
        "{}: the window energies come from the power column '{}', {}: it lags the load and "
        "reads low on short windows (8% low on average over 1.5 s windows on an H100). Log "
        "the instantaneous power (nvidia-smi power.draw.instant, NVML "
        "NVML_FI_DEV_POWER_INSTANT) or the energy counter "
        "(nvmlDeviceGetTotalEnergyConsumption) instead",
        power_path, log.power_field(),
        log.power_kind() == PowerKind::kAveraged
            ? "a 1-s average"
            : "which may be a 1-s average (it is on Ampere (except GA100) and newer GPUs)"));
  }
  result.power_source_name = PowerSourceName(result.power_source);
  // A window whose counter is not believed is measured from the power column.
  const char* column_source =
      PowerSourceName(log.power_kind() == PowerKind::kInstant ? PowerSource::kInstantPower
                                                              : PowerSource::kAveragedPower);
  for (WindowEnergy& w : result.windows) {
    w.power_source =
        (w.flags & kFlagCounterMismatch) ? column_source : result.power_source_name.c_str();
  }

  // Reasons, the power limit and missing clocks from the other log.
  if (primary && !secondary_log.empty()) {
    PowerLogReader other(secondary_log, secondary_options);
    const std::vector<WindowEnergy> o = MeasureWindows(&other, windows, windows_path, options);
    for (size_t i = 0; i < windows.size(); ++i) {
      WindowEnergy& w = result.windows[i];
      if (other.has_clock_reasons()) {
        w.clock_reasons = o[i].clock_reasons;
        w.has_clock_reasons = o[i].has_clock_reasons;
      }
      if (other.has_power_limit()) w.power_limit_w = o[i].power_limit_w;
      if (!log.has_core_clock() && other.has_core_clock()) {
        w.f_core_mhz = o[i].f_core_mhz;
        w.f_core_min_mhz = o[i].f_core_min_mhz;
        w.f_core_max_mhz = o[i].f_core_max_mhz;
      }
      if (!log.has_memory_clock() && other.has_memory_clock()) {
        w.f_mem_mhz = o[i].f_mem_mhz;
        w.f_mem_min_mhz = o[i].f_mem_min_mhz;
        w.f_mem_max_mhz = o[i].f_mem_max_mhz;
      }
      ApplyClockFlags(options, &w);
    }
  }
  result.kernels = AggregateKernelEnergies(result.windows, options);
  return result;
}

}  // namespace wattcal
