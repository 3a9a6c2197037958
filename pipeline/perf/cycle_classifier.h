// The cycle classifier of CRISP (Nath & Tullsen, MICRO'15, §3.5-3.6): from an event timeline
// (timeline.h) it derives the counters every run-time model of perf_models.h reads.
//
// Each cycle is first busy or idle (CRISP §3.5): a cycle that issued issue_width instructions is
// busy, one that issued none is idle, and one that issued fewer than issue_width is busy only
// when an arithmetic RAW or structural hazard held the rest back. Busy cycles are computation.
// Idle cycles follow the rules in order (the order decides between competing causes):
//
//   (A) a control hazard, a bank conflict, or nothing memory-related pending (no load, fetch
//       or store miss outstanding and no fetch stall)                     -> computation
//   (B) else, a load (or fetch) miss outstanding:
//         a RAW hazard on the load/store unit                              -> load stall
//         else an arithmetic RAW or structural hazard                      -> computation
//         else MSHRs / LSQ full                                            -> load stall
//         else a fetch stall                                               -> load stall
//         else                                                             -> computation (D)
//   (C) else (no load outstanding) MSHRs / LSQ full                        -> store stall
//   (D) anything else is due to arithmetic dependencies                    -> computation
//
// Counters (CRISP §3.6), with misses ordered by start cycle (ties in input order):
//   * adjusted LCP: a running T_Memory; a miss copies it when it starts (ts_i); each load
//     stall adds 1; when miss i returns, T_Memory = max(T_Memory, ts_i + latency_i). Within a
//     cycle: returns at the end of the previous cycle, then starts, then the cycle's stall.
//   * CRIT: the same without the stall steps (Miftakhutdinov et al.).
//   * LEAD: a miss that starts when no leading miss is outstanding leads; the sum of the
//     leading misses' latencies (loads and fetches: LEAD counts instruction misses too).
//   * MISS: the leading data-load misses (not fetches: MISS ignores instruction misses) times
//     a fixed latency.
//   * STALL: idle cycles that issued nothing, with a load or fetch miss outstanding and no
//     arithmetic hazard (prior models count a mixed-cause stall as computation, CRISP §2.2).
//   * CRISP-L: the cycles with a load or fetch miss outstanding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/crisp_counters.h"
#include "perf/timeline.h"

namespace wattcal {

struct ClassifierOptions {
  // MISS: fixed memory latency charged per contributor miss, base-clock cycles; 0 = the mean
  // latency of the timeline's data load misses.
  double miss_latency_cycles = 0.0;

  bool Check(std::string* error) const;
};

enum class CycleClass { kComputation, kLoadStall, kStoreStall };
const char* CycleClassName(CycleClass c);  // "computation", "load_stall", "store_stall"

// What the classifier sees in one cycle.
struct CycleState {
  int issued = 0;
  int issue_width = 1;
  uint32_t flags = 0;              // CycleFlag bits
  bool load_outstanding = false;   // a load or fetch miss is outstanding
  bool store_outstanding = false;  // a store miss is outstanding
};

// The busy/idle rule of CRISP §3.5.
bool IsBusyCycle(const CycleState& state);
// The class of one cycle (rules above).
CycleClass ClassifyCycle(const CycleState& state);
// STALL's own test for one cycle.
bool IsStallTimeStall(const CycleState& state);

struct CycleBreakdown {
  // Every column filled (the optional baselines' too).
  CrispCounters counters;
  // Cycles classified as computation (busy or idle), = C - S_l - S_s.
  double computation_cycles = 0.0;
  // Leading data-load misses (MISS's contributors) and the latency MISS charged for each.
  int64_t miss_contributors = 0;
  double miss_latency_cycles = 0.0;
};

// Classifies every cycle of `timeline` and accumulates the counters. Throws
// std::invalid_argument when the timeline is malformed (Timeline::Problem; the readers and the
// SM model only produce well-formed ones) and OptionError when `options` fails Check().
CycleBreakdown ClassifyTimeline(const Timeline& timeline, const ClassifierOptions& options = {});

// The class of each cycle, in order (for inspection and tests; O(total cycles) memory).
std::vector<CycleClass> ClassifyEachCycle(const Timeline& timeline);

}  // namespace wattcal
