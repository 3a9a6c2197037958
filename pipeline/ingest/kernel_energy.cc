#include "ingest/kernel_energy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "ingest/internal/energy_counter.h"
#include "util/errors.h"
#include "util/csv_field.h"
#include "util/logging.h"
#include "util/nan.h"
#include "util/option_rule.h"
#include "util/stats.h"

namespace wattcal {
namespace {

// A window may overhang the log's first or last reading by this much (rounding between the
// windows' and the log's time bases); the overhang is integrated at that reading's power.
constexpr double kEdgeToleranceS = 1e-6;

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
  std::optional<double> limit_w;  // lowest power limit held over the window
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
  // A sample without a limit (NaN: the log has none) leaves the window's as it is.
  if (!std::isnan(s.power_limit_w) && !(a->limit_w && *a->limit_w <= s.power_limit_w))
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
  std::optional<double> limit_w = a.limit_w;
  if (a.have_held && core.empty() && mem.empty() && !has_reasons && !limit_w) {
    core.Add(a.held.f_core_mhz, 1.0);
    mem.Add(a.held.f_mem_mhz, 1.0);
    reasons = a.held.clock_reasons;
    has_reasons = a.held.has_clock_reasons;
    if (!std::isnan(a.held.power_limit_w)) limit_w = a.held.power_limit_w;
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

}  // namespace

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

}  // namespace wattcal
