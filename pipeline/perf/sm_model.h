// The virtual GPU's streaming multiprocessor: a small discrete-event model that runs warps at
// any core frequency and gives both the event timeline the cycle classifier reads and the true
// run time, so the classifier -> CRISP chain is checked against an independent truth.
//
// What it models (and why it is enough for CRISP's questions):
//   * W warps, each issuing one program in order (a loop body repeated `iterations` times);
//     a loose round-robin scheduler issues up to issue_width instructions per cycle from
//     different warps, at most one of them a memory instruction.
//   * ALU results are usable alu_latency_cycles core cycles after issue: computation scales
//     with the core clock.
//   * A load misses L1 and occupies a memory channel (FIFO, load_service_ns per request: the
//     bandwidth) and returns mem_latency_ns (+ a per-load jitter) after the channel takes it:
//     memory time does not scale with the core clock. At most mshr_entries loads are
//     outstanding.
//   * A store enters a store queue of store_queue_entries and leaves it when the shared memory
//     channel has taken it (store_service_ns per store); a warp whose store finds the queue
//     full waits. So store stalls appear when stores come faster than the channel drains them
//     and fade as the core clock (and the store rate) drops (CRISP §3.3).
//   * A warp that has issued everything still waits for its outstanding loads (kernel exit).
// Time is kept in integer femtoseconds (cycle k starts at k * round(1e9 / f_mhz) fs), and every
// random draw is a hash of (seed, warp, iteration, instruction), the same at every frequency,
// so a run is deterministic and frequencies differ only through the clock.
//
// Per cycle it records the hazards CRISP §3.5 reads: lsu_raw (a warp waits on a load's result),
// arith (a warp waits on an ALU result), lsq_full (a load found the MSHRs full or a store the
// store queue full). Cycles that issued issue_width instructions carry no hazard flags (the
// scheduler stops looking once the issue slots are full, and the classifier calls them busy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/timeline.h"

namespace wattcal {

struct SmConfig {
  // Instructions issued per cycle (from different warps; at most one memory instruction).
  int issue_width = 1;
  // Core cycles from an ALU instruction's issue until its result can be used.
  int alu_latency_cycles = 4;
  // Unloaded latency of an L1 load miss from the memory channel taking it to its data, ns.
  double mem_latency_ns = 300.0;
  // Each load's latency adds a uniform draw in [0, mem_latency_jitter_ns), ns.
  double mem_latency_jitter_ns = 40.0;
  // Memory-channel occupancy per load request, ns (1 / load bandwidth).
  double load_service_ns = 1.0;
  // Memory-channel occupancy per store, ns: the rate the store queue drains at.
  double store_service_ns = 2.0;
  // Load misses outstanding at most (MSHRs).
  int mshr_entries = 64;
  // Stores waiting for the memory channel at most.
  int store_queue_entries = 16;

  bool Check(std::string* error) const;
};

enum class SmOpKind { kAlu, kLoad, kStore };

// One instruction of a warp's loop body.
struct SmOp {
  SmOpKind kind = SmOpKind::kAlu;
  // Earlier instructions of the same iteration whose results this one needs (indices < own).
  std::vector<int> deps;
  // Instructions of the previous iteration whose results this one needs (any index).
  std::vector<int> carried_deps;
  // Loads only: a fixed latency, ns, instead of mem_latency_ns + jitter (> 0; < 0 = default).
  double latency_ns = -1.0;
};

struct SmKernel {
  std::string name;
  // Resident warps, all starting at cycle 0.
  int warps = 1;
  // Times each warp runs `body`.
  int iterations = 1;
  std::vector<SmOp> body;
  // Seed of the latency jitter.
  uint64_t seed = 0;

  // Empty when runnable; otherwise a sentence naming the first problem.
  std::string Problem() const;
};

// One run of a kernel at one core frequency.
struct SmRun {
  double f_mhz = 0.0;
  // Cycles from the first issue to the last load's return: the kernel's run time in cycles.
  int64_t total_cycles = 0;
  // total_cycles / f.
  double time_s = 0.0;
  // Instructions issued, by kind.
  int64_t alu_ops = 0;
  int64_t loads = 0;
  int64_t stores = 0;
  // Time the memory channel was busy within the run, s (its utilisation = mem_busy_s / time_s).
  double mem_busy_s = 0.0;
  // The run as a timeline (only when asked for; store misses merged into busy intervals).
  Timeline timeline;
};

// Runs `kernel` at `f_mhz`. Throws std::invalid_argument when the config fails Check(), the
// kernel has a Problem() or f_mhz is not > 0.
SmRun SimulateSm(const SmConfig& config, const SmKernel& kernel, double f_mhz,
                 bool record_timeline);

}  // namespace wattcal
