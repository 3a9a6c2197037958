#include "ingest/internal/energy_counter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "util/errors.h"
#include "util/nan.h"

namespace wattcal {
namespace kernel_energy_internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The typical hold is the median of the log's first kTypicalHolds holds; with fewer than
// kMinTypicalHolds, kCounterFrozenMinS alone is the limit.
constexpr size_t kTypicalHolds = 64;
constexpr size_t kMinTypicalHolds = 8;

// One change point of the energy counter: the counter reads `energy_j` from `time_s` on.
struct Knot {
  double time_s = 0.0;
  double energy_j = 0.0;
};

double CounterAt(const Knot& a, const Knot& b, double t) {
  return a.energy_j + (b.energy_j - a.energy_j) * (t - a.time_s) / (b.time_s - a.time_s);
}

// One value of the counter: the readings that showed it (counter_freeze) and the stretch
// [from_s, to_s] its interpolation rests on, from the change point that began it to the one
// that ended it (infinite before the first and after the last: extrapolated).
struct Hold {
  double from_s = -kInf;
  double to_s = kInf;
  CounterFreeze freeze;
};

// The holds of the counter as the log is read: each value's first and last reading and the
// power read meanwhile; keeps the first holds' lengths (the typical one) and the long ones.
class HoldTracker {
 public:
  void Open(double from_s, const PowerSample& first) {
    hold_ = Hold();
    hold_.from_s = from_s;
    hold_.freeze.from_line = first.line;
    first_time_s_ = first.time_s;
    power_sum_w_ = 0.0;
    power_readings_ = 0;
  }
  // A reading that shows the held value.
  void Add(const PowerSample& s) {
    last_time_s_ = s.time_s;
    hold_.freeze.to_line = s.line;
    if (std::isnan(s.power_w)) return;
    power_sum_w_ += s.power_w;
    ++power_readings_;
  }
  void Close(double to_s) {
    hold_.to_s = to_s;
    hold_.freeze.held_s = last_time_s_ - first_time_s_;
    hold_.freeze.power_w =
        power_readings_ > 0 ? power_sum_w_ / static_cast<double>(power_readings_) : kNaN;
    if (typical_.size() < kTypicalHolds) typical_.push_back(hold_.freeze.held_s);
    if (hold_.freeze.held_s > kCounterFrozenMinS) long_.push_back(hold_);
  }
  // The holds that are freezes: longer than the limit while power was read.
  std::vector<Hold> Frozen() {
    double limit_s = kCounterFrozenMinS;
    if (typical_.size() >= kMinTypicalHolds) {
      std::nth_element(typical_.begin(), typical_.begin() + typical_.size() / 2, typical_.end());
      limit_s = std::max(limit_s, kCounterFrozenPeriods * typical_[typical_.size() / 2]);
    }
    std::vector<Hold> out;
    for (const Hold& h : long_) {
      if (h.freeze.held_s > limit_s && h.freeze.power_w > kCounterFrozenMinPowerW) out.push_back(h);
    }
    return out;
  }

 private:
  Hold hold_;
  double first_time_s_ = 0.0, last_time_s_ = 0.0;
  double power_sum_w_ = 0.0;
  int64_t power_readings_ = 0;
  std::vector<double> typical_;
  std::vector<Hold> long_;
};

// Energy of every window from the log's cumulative energy counter, in one streaming pass (see
// UseEnergyCounter), and the holds in which it was frozen. Returns false when the counter
// changes fewer than twice.
bool CounterEnergies(PowerLogReader* log, const std::vector<KernelWindow>& windows,
                     std::vector<double>* energy_j, std::vector<Hold>* frozen) {
  // Edges: 2i = start of window i, 2i + 1 = its end, in time order.
  const size_t n = windows.size();
  std::vector<double> edge_time(2 * n);
  for (size_t i = 0; i < n; ++i) {
    edge_time[2 * i] = windows[i].start_s;
    edge_time[2 * i + 1] = windows[i].end_s;
  }
  std::vector<size_t> order(2 * n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&edge_time](size_t a, size_t b) { return edge_time[a] < edge_time[b]; });
  std::vector<double> edge_energy(2 * n, kNaN);
  size_t next = 0;

  PowerSample cur;
  bool have_value = false;
  double value_j = 0.0;  // the counter's current value
  int64_t value_line = 0;
  double value_time_s = 0.0;  // time of the last reading showing it
  HoldTracker holds;
  Knot last, before_last;
  int knots = 0;
  while (log->Next(&cur)) {
    if (std::isnan(cur.energy_j)) continue;
    if (!have_value) {
      have_value = true;
      holds.Open(-kInf, cur);
    } else if (cur.energy_j != value_j) {
      if (cur.energy_j < value_j) {
        throw InputError(log->path(), cur.line, "energy",
                         fmt::format("the energy counter goes backwards: {} J here, {} J on "
                                     "line {} (the driver was reloaded? split the log there)",
                                     cur.energy_j, value_j, value_line));
      }
      const Knot knot{0.5 * (value_time_s + cur.time_s), cur.energy_j};
      holds.Close(knot.time_s);
      holds.Open(knot.time_s, cur);
      if (knots > 0 && !(knot.time_s > last.time_s)) {
        last.energy_j = knot.energy_j;  // same instant: keep the later value
      } else {
        before_last = last;
        last = knot;
        ++knots;
      }
      if (knots >= 2) {
        while (next < order.size() && edge_time[order[next]] <= last.time_s) {
          edge_energy[order[next]] = CounterAt(before_last, last, edge_time[order[next]]);
          ++next;
        }
      }
    }
    holds.Add(cur);
    value_j = cur.energy_j;
    value_time_s = cur.time_s;
    value_line = cur.line;
  }
  if (have_value) holds.Close(kInf);
  if (knots < 2) return false;
  for (; next < order.size(); ++next) {
    edge_energy[order[next]] = CounterAt(before_last, last, edge_time[order[next]]);
  }
  energy_j->resize(n);
  for (size_t i = 0; i < n; ++i) (*energy_j)[i] = edge_energy[2 * i + 1] - edge_energy[2 * i];
  *frozen = holds.Frozen();
  return true;
}

// The first frozen hold that window w overlaps, or nullptr.
const Hold* FreezeOver(const std::vector<Hold>& frozen, const KernelWindow& w) {
  for (const Hold& h : frozen) {
    if (h.from_s < w.end_s && h.to_s > w.start_s) return &h;
  }
  return nullptr;
}

}  // namespace

bool UseEnergyCounter(PowerLogReader* log, bool check_mismatch,
                      const std::vector<KernelWindow>& windows,
                      std::vector<WindowEnergy>* measured) {
  std::vector<double> energy_j;
  std::vector<Hold> frozen;
  if (!CounterEnergies(log, windows, &energy_j, &frozen)) return false;
  for (size_t i = 0; i < windows.size(); ++i) {
    WindowEnergy& w = (*measured)[i];
    const double trapezoid_j = w.energy_j;
    // As in MeasureWindows: the counter was read at the double edges; mean power over their
    // (quantised) length, energy over the exact integer-nanosecond duration.
    const double integrated_s = windows[i].end_s - windows[i].start_s;
    w.energy_j = energy_j[i];
    if (integrated_s > 0.0) {
      w.mean_power_w = energy_j[i] / integrated_s;
      w.energy_j = w.mean_power_w * w.duration_s;
    }
    const Hold* freeze = FreezeOver(frozen, windows[i]);
    const bool mismatch = check_mismatch && trapezoid_j > 0.0 && w.samples >= 2 &&
                          std::fabs(w.energy_j - trapezoid_j) > kCounterMismatchFrac * trapezoid_j;
    if (freeze == nullptr && !mismatch) continue;
    w.flags |= kFlagCounterMismatch;
    w.counter_energy_j = w.energy_j;
    w.energy_j = trapezoid_j;
    w.mean_power_w = w.duration_s > 0.0 ? trapezoid_j / w.duration_s : w.mean_power_w;
    if (freeze != nullptr) w.counter_freeze = freeze->freeze;
  }
  return true;
}

}  // namespace kernel_energy_internal
}  // namespace wattcal
