#include "perf/cycle_classifier.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "util/errors.h"
#include "util/option_rule.h"

namespace wattcal {

bool ClassifierOptions::Check(std::string* error) const {
  if (!(std::isfinite(miss_latency_cycles) && miss_latency_cycles >= 0.0))
    return RejectOption(error,
                        "miss_latency_cycles = {} must be finite and >= 0 (0: the mean load "
                        "latency)",
                        miss_latency_cycles);
  return true;
}

const char* CycleClassName(CycleClass c) {
  switch (c) {
    case CycleClass::kComputation: return "computation";
    case CycleClass::kLoadStall: return "load_stall";
    case CycleClass::kStoreStall: return "store_stall";
  }
  return "?";
}

bool IsBusyCycle(const CycleState& s) {
  if (s.issued >= s.issue_width) return true;
  if (s.issued == 0) return false;
  return (s.flags & kFlagArith) != 0;
}

CycleClass ClassifyCycle(const CycleState& s) {
  if (IsBusyCycle(s)) return CycleClass::kComputation;
  const bool fetch_stall = (s.flags & kFlagFetchStall) != 0;
  // (A)
  if ((s.flags & (kFlagControl | kFlagBankConflict)) != 0 ||
      !(s.load_outstanding || s.store_outstanding || fetch_stall)) {
    return CycleClass::kComputation;
  }
  // (B)
  if (s.load_outstanding) {
    if ((s.flags & kFlagLsuRaw) != 0) return CycleClass::kLoadStall;
    if ((s.flags & kFlagArith) != 0) return CycleClass::kComputation;
    if ((s.flags & kFlagLsqFull) != 0) return CycleClass::kLoadStall;
    if (fetch_stall) return CycleClass::kLoadStall;
    return CycleClass::kComputation;  // (D)
  }
  // (C)
  if ((s.flags & kFlagLsqFull) != 0) return CycleClass::kStoreStall;
  // (D)
  return CycleClass::kComputation;
}

bool IsStallTimeStall(const CycleState& s) {
  return s.issued == 0 && s.load_outstanding && (s.flags & kFlagArith) == 0;
}

namespace {

// Walks the timeline in segments of identical cycles (no run boundary and no miss starting or
// ending inside) and calls on_segment(state, class, first_cycle, cycles) for each; keeps the
// critical-path counters of CRISP §3.6 on the way.
struct PathSweep {
  double adjusted_lcp = 0.0;
  double crit = 0.0;
  double lead = 0.0;
  int64_t miss_contributors = 0;
  double load_outstanding = 0.0;
};

template <typename OnSegment>
PathSweep Walk(const Timeline& t, OnSegment on_segment) {
  const std::string problem = t.Problem();
  if (!problem.empty()) {
    throw std::invalid_argument("malformed timeline of kernel '" + t.kernel + "': " + problem);
  }
  const int64_t total = t.total_cycles();
  const size_t n = t.loads.size();
  std::vector<size_t> by_start(n), by_end(n);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::iota(by_end.begin(), by_end.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    return t.loads[a].start_cycle < t.loads[b].start_cycle;
  });
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](size_t a, size_t b) { return t.loads[a].end_cycle < t.loads[b].end_cycle; });
  std::vector<int64_t> store_starts, store_ends;
  for (const MemoryMiss& m : t.stores) {
    store_starts.push_back(m.start_cycle);
    store_ends.push_back(m.end_cycle);
  }
  std::sort(store_starts.begin(), store_starts.end());
  std::sort(store_ends.begin(), store_ends.end());

  std::vector<double> ts_adjusted(n, 0.0), ts_crit(n, 0.0);
  PathSweep sweep;
  int64_t lead_end = -1, miss_lead_end = -1;
  size_t next_start = 0, next_end = 0, next_store_start = 0, next_store_end = 0, run = 0;
  int64_t active_loads = 0, active_stores = 0;
  constexpr int64_t kNever = INT64_MAX;
  int64_t pos = 0;
  while (pos < total) {
    // Stores leaving and entering at this cycle.
    while (next_store_end < store_ends.size() && store_ends[next_store_end] <= pos) {
      --active_stores;
      ++next_store_end;
    }
    while (next_store_start < store_starts.size() && store_starts[next_store_start] <= pos) {
      ++active_stores;
      ++next_store_start;
    }
    // Misses starting in this cycle copy the running counters (CRISP §3.6).
    while (next_start < n && t.loads[by_start[next_start]].start_cycle == pos) {
      const size_t i = by_start[next_start++];
      const MemoryMiss& m = t.loads[i];
      ts_adjusted[i] = sweep.adjusted_lcp;
      ts_crit[i] = sweep.crit;
      ++active_loads;
      if (lead_end <= pos) {
        sweep.lead += static_cast<double>(m.latency_cycles());
        lead_end = m.end_cycle;
      }
      if (m.kind == MissKind::kLoad && miss_lead_end <= pos) {
        ++sweep.miss_contributors;
        miss_lead_end = m.end_cycle;
      }
    }
    while (t.runs[run].first_cycle + t.runs[run].cycles <= pos) ++run;
    const TimelineRun& r = t.runs[run];
    int64_t next = r.first_cycle + r.cycles;
    if (next_start < n) next = std::min(next, t.loads[by_start[next_start]].start_cycle);
    if (next_end < n) next = std::min(next, t.loads[by_end[next_end]].end_cycle);
    next = std::min(
        next, next_store_start < store_starts.size() ? store_starts[next_store_start] : kNever);
    next = std::min(next, next_store_end < store_ends.size() ? store_ends[next_store_end] : kNever);
    const int64_t cycles = next - pos;

    CycleState state;
    state.issued = r.issued;
    state.issue_width = t.issue_width;
    state.flags = r.flags;
    state.load_outstanding = active_loads > 0;
    state.store_outstanding = active_stores > 0;
    const CycleClass c = ClassifyCycle(state);
    if (c == CycleClass::kLoadStall) sweep.adjusted_lcp += static_cast<double>(cycles);
    if (state.load_outstanding) sweep.load_outstanding += static_cast<double>(cycles);
    on_segment(state, c, pos, cycles);

    pos = next;
    // Misses whose last outstanding cycle was pos - 1 return now.
    while (next_end < n && t.loads[by_end[next_end]].end_cycle == pos) {
      const size_t i = by_end[next_end++];
      const double latency = static_cast<double>(t.loads[i].latency_cycles());
      sweep.adjusted_lcp = std::max(sweep.adjusted_lcp, ts_adjusted[i] + latency);
      sweep.crit = std::max(sweep.crit, ts_crit[i] + latency);
      --active_loads;
    }
  }
  return sweep;
}

}  // namespace

CycleBreakdown ClassifyTimeline(const Timeline& t, const ClassifierOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid classifier options: " + error);
  double load_stalls = 0.0, store_stalls = 0.0, stall_time = 0.0;
  const PathSweep sweep =
      Walk(t, [&](const CycleState& state, CycleClass c, int64_t, int64_t cycles) {
        const double k = static_cast<double>(cycles);
        if (c == CycleClass::kLoadStall) load_stalls += k;
        if (c == CycleClass::kStoreStall) store_stalls += k;
        if (IsStallTimeStall(state)) stall_time += k;
      });
  CycleBreakdown b;
  CrispCounters& c = b.counters;
  c.kernel = t.kernel;
  c.base_mhz = t.base_mhz;
  c.total_cycles = static_cast<double>(t.total_cycles());
  c.lcp_cycles = sweep.adjusted_lcp;
  c.load_stall_cycles = load_stalls;
  c.store_stall_cycles = store_stalls;
  c.crit_cycles = sweep.crit;
  c.lead_cycles = sweep.lead;
  c.stall_cycles = stall_time;
  c.load_outstanding_cycles = sweep.load_outstanding;
  b.computation_cycles = c.total_cycles - load_stalls - store_stalls;
  b.miss_contributors = sweep.miss_contributors;
  b.miss_latency_cycles = options.miss_latency_cycles;
  if (b.miss_latency_cycles == 0.0) {
    double sum = 0.0;
    int64_t count = 0;
    for (const MemoryMiss& m : t.loads) {
      if (m.kind != MissKind::kLoad) continue;
      sum += static_cast<double>(m.latency_cycles());
      ++count;
    }
    b.miss_latency_cycles = count > 0 ? sum / static_cast<double>(count) : 0.0;
  }
  c.miss_cycles = static_cast<double>(b.miss_contributors) * b.miss_latency_cycles;
  return b;
}

std::vector<CycleClass> ClassifyEachCycle(const Timeline& t) {
  std::vector<CycleClass> classes;
  Walk(t, [&](const CycleState&, CycleClass c, int64_t, int64_t cycles) {
    classes.insert(classes.end(), static_cast<size_t>(cycles), c);
  });
  return classes;
}

}  // namespace wattcal
