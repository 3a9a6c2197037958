// An SM's execution at its base core frequency as an event timeline: what the pipeline did in
// each cycle (instructions issued, hazards) and which memory misses were outstanding when —
// the inputs §3.5 of CRISP (Nath & Tullsen, MICRO'15) assumes the pipeline and the L1 cache
// interface can see. The cycle classifier (cycle_classifier.h) turns it into counters.
//
// CSV form, one row per run of identical cycles or per miss, kernels in contiguous blocks:
//
//   kernel,base_mhz,issue_width,event,start_cycle,end_cycle,issued,flags
//
//   event = run    cycles [start_cycle, end_cycle) each issued `issued` instructions (0 ..
//                  issue_width) with the hazards in `flags`, '|'-separated names of
//                  CycleFlag (empty: none). A kernel's runs tile [0, total) in order.
//   event = load   a data load miss outstanding over [start_cycle, end_cycle)
//   event = fetch  an instruction fetch miss outstanding over [start_cycle, end_cycle)
//   event = store  a store miss outstanding over [start_cycle, end_cycle)
//   (misses leave issued and flags empty; they must end by the kernel's last cycle.)
//
// base_mhz and issue_width repeat on every row of a kernel and must agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

// Per-cycle hazard bits (CRISP §3.5's list of signals). Bit names in the CSV in brackets.
enum CycleFlag : uint32_t {
  // A warp waits on the result of an outstanding load: a RAW hazard on the load/store unit
  // [lsu_raw].
  kFlagLsuRaw = 1u << 0,
  // A warp waits on an arithmetic result (RAW) or a busy arithmetic unit (structural) [arith].
  kFlagArith = 1u << 1,
  // A memory instruction cannot issue because the MSHRs or the load/store queue are full
  // [lsq_full].
  kFlagLsqFull = 1u << 2,
  // The front end is stalled on an instruction fetch miss [fetch_stall].
  kFlagFetchStall = 1u << 3,
  // A control hazard (branch mispredict) is being resolved [control].
  kFlagControl = 1u << 4,
  // An L1 cache or shared-memory bank conflict [bank_conflict].
  kFlagBankConflict = 1u << 5,
};

// "lsu_raw|arith" for kFlagLsuRaw | kFlagArith; "" for 0.
std::string CycleFlagsToText(uint32_t flags);
// Parses the text above; false (with the offending name in *bad) on an unknown name.
bool ParseCycleFlags(const std::string& text, uint32_t* flags, std::string* bad);

// Cycles [first_cycle, first_cycle + cycles) that all issued `issued` instructions with the
// same hazards.
struct TimelineRun {
  int64_t first_cycle = 0;
  int64_t cycles = 0;
  int issued = 0;
  uint32_t flags = 0;
};

enum class MissKind { kLoad, kFetch, kStore };
const char* MissKindName(MissKind kind);  // "load", "fetch", "store"

// A miss outstanding over cycles [start_cycle, end_cycle): issued in start_cycle, its data
// usable from end_cycle on. Its latency is end_cycle - start_cycle >= 1.
struct MemoryMiss {
  MissKind kind = MissKind::kLoad;
  int64_t start_cycle = 0;
  int64_t end_cycle = 0;
  int64_t line = 0;  // line in the timeline file (0 when not read from a file)

  int64_t latency_cycles() const { return end_cycle - start_cycle; }
};

struct Timeline {
  std::string kernel;
  // Core frequency the timeline was recorded at, MHz.
  double base_mhz = 0.0;
  // Instructions the SM can issue per cycle (the busy/idle rule of CRISP §3.5 depends on it).
  int issue_width = 1;
  // Runs in cycle order, tiling [0, total_cycles()).
  std::vector<TimelineRun> runs;
  // Load and fetch misses (both start the load outstanding phase, CRISP §3.1), in any order.
  std::vector<MemoryMiss> loads;
  // Store misses, in any order.
  std::vector<MemoryMiss> stores;
  // Line of the kernel's first row in its file (0 when not read from a file).
  int64_t line = 0;

  int64_t total_cycles() const {
    return runs.empty() ? 0 : runs.back().first_cycle + runs.back().cycles;
  }
  // Appends cycles with the given state, merging with the last run when identical.
  void AppendCycles(int64_t cycles, int issued, uint32_t flags);
  // Empty when well-formed (runs tile [0, total) with issued in [0, issue_width], misses have
  // latency >= 1 and lie inside [0, total)); otherwise a sentence naming the first problem.
  std::string Problem() const;
};

// Reads a timeline CSV (format above). Throws InputError naming the file, line and column for
// bad cells, runs that leave gaps or overlap, misses outside the kernel, a kernel whose rows
// are not contiguous, or base_mhz / issue_width that change within a kernel.
std::vector<Timeline> ReadTimelines(const std::string& path);

// The timelines as CSV: per kernel its runs, then its loads/fetches, then its stores.
std::string TimelinesToCsv(const std::vector<Timeline>& timelines);

}  // namespace wattcal
