// The run-time counters of one kernel measured at a base core frequency: CRISP's three
// counters plus the total (Nath & Tullsen, MICRO'15, §3.5-3.6), and the counters of the
// baselines the seed compares against (STALL, LEAD, CRIT, MISS; CRISP-L of CRISP §5.3). All counts
// are in cycles of the base core clock; they may be fractional (averages over SMs, CRISP §4).
//
// CSV form (one row per kernel; header names are the contract):
//   kernel,base_mhz,total_cycles,lcp_cycles,load_stall_cycles,store_stall_cycles
//   [,crit_cycles][,lead_cycles][,miss_cycles][,stall_cycles][,load_outstanding_cycles]
// base_mhz may also be given as base_ghz or base_khz. A model whose counter column is absent
// is not evaluated (see perf_models.h).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace wattcal {

struct CrispCounters {
  static constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

  std::string kernel;
  // Core frequency the counters were measured at, MHz.
  double base_mhz = 0.0;
  // C: every cycle of the kernel.
  double total_cycles = 0.0;
  // L: the adjusted load critical path (CRISP §3.5: the critical path of load latencies with every
  // load stall added as a one-cycle step), T_LCP of CRISP Eq. 3 and T_Memory of CRISP Eq. 4.
  double lcp_cycles = 0.0;
  // S_l: load stall cycles (CRISP §3.5 rules B), all of them inside L.
  double load_stall_cycles = 0.0;
  // S_s: store stall cycles (CRISP §3.5 rule C), outside L.
  double store_stall_cycles = 0.0;

  // Baselines' counters; kAbsent (NaN) when the input had no such column.
  // CRIT: the unadjusted critical path of load latencies (Miftakhutdinov et al., MICRO'12).
  double crit_cycles = kAbsent;
  // LEAD: cycles during which a leading load is outstanding (Eyerman & Eeckhout; Rountree).
  double lead_cycles = kAbsent;
  // MISS: contributor (leading) misses times a fixed memory latency (Keramidas et al.).
  double miss_cycles = kAbsent;
  // STALL: cycles in which nothing issues, a load is outstanding and no arithmetic hazard
  // could explain the stall (Keramidas et al.'s stall time).
  double stall_cycles = kAbsent;
  // CRISP-L's load critical path: every cycle with at least one load outstanding (CRISP §5.3).
  double load_outstanding_cycles = kAbsent;

  // 1-based line of the row in its file (0 when not read from a file).
  int64_t line = 0;

  // T_LCP^Comp = L - S_l: computation overlapped by the load critical path.
  double overlapped_computation_cycles() const { return lcp_cycles - load_stall_cycles; }
  // T_CSP^Comp = C - L - S_s: computation not overlapped by the load critical path.
  double pure_computation_cycles() const { return total_cycles - lcp_cycles - store_stall_cycles; }
  // C / f_base.
  double total_time_s() const { return total_cycles / (base_mhz * 1e6); }

  // Empty when the counters are mutually consistent; otherwise a sentence naming the first
  // broken rule and the field: every count finite and >= 0, base_mhz > 0, total_cycles > 0,
  // S_l <= L <= C, S_s <= C - L, each baseline count <= C except miss_cycles (an estimate),
  // and for CRISP-L S_l <= load_outstanding_cycles <= C - S_s.
  std::string Inconsistency(std::string* field) const;
};

// The optional counter columns, in file order.
const std::vector<std::string>& OptionalCounterColumns();

// Reads a counters CSV. Throws InputError (FILE:LINE: FIELD: ...) for a missing or unknown
// column, a cell that is not a finite number, inconsistent counters, a duplicate kernel name or
// an empty file.
std::vector<CrispCounters> ReadCrispCounters(const std::string& path);

// The counters as CSV (the reader's format): the required columns, then each optional column
// that every row has. Numbers with PerfCsvNumber.
std::string CrispCountersToCsv(const std::vector<CrispCounters>& rows);

}  // namespace wattcal
