// The virtual GPU's run-time campaign: a suite of kernels (shapes like the Rodinia kernels of
// CRISP's Fig. 2: compute bound, bandwidth bound, latency bound with overlap, store bound,
// pointer chasing) run on the SM model (sm_model.h) at a base frequency and at every target.
// It gives what a real campaign would: the base run's timeline and counters, the true run time
// at every frequency, and each kernel's component activity for the power model.
//
// Spec file (JSON, see microbench_specs/perf_kernels.json); every key optional except kernels:
//   {"name", "about", "seed", "base_mhz", "targets_mhz": [...],
//    "sm": {SmConfig fields by name},
//    "kernels": [{"name", "warps", "iterations", "loads", "pointer_chase", "independent_alu",
//                 "dependent_alu", "alu_ilp", "stores", "alu_component"}, ...]}
// Unknown keys are errors (a misspelt key would otherwise be ignored silently).
#pragma once

#include <string>
#include <vector>

#include "io/corpus.h"
#include "perf/cycle_classifier.h"
#include "perf/crisp_counters.h"
#include "perf/perf_models.h"
#include "perf/sm_model.h"
#include "perf/timeline.h"

namespace wattcal {

// One kernel of the suite: each warp repeats the loop body
//   loads x LOAD; independent_alu x ALU; dependent_alu x ALU (the first needs every load);
//   stores x STORE (each needs the last ALU result)
// `iterations` times. ALU instruction j needs ALU instruction j - alu_ilp (alu_ilp = 1: a serial
// chain), so a warp alone cannot hide the ALU latency. With pointer_chase, load j needs load
// j - 1 and the first load needs the previous iteration's last load (a dependent chain, like
// graph traversal).
struct PerfKernelSpec {
  // Kernel name (the `kernel` column of every output).
  std::string name = "kernel";
  // Resident warps.
  int warps = 32;
  // Loop iterations per warp.
  int iterations = 40;
  // Loads at the top of each iteration.
  int loads = 1;
  // Each load needs the previous one (see above).
  bool pointer_chase = false;
  // ALU instructions that do not need this iteration's loads (overlap them within the warp).
  int independent_alu = 4;
  // ALU instructions after the loads; the first needs all of them.
  int dependent_alu = 4;
  // Distance of the ALU dependency chain, >= 1.
  int alu_ilp = 2;
  // Stores at the end of each iteration.
  int stores = 0;
  // Activity: the power-model component the ALU instructions exercise.
  std::string alu_component = "SP FMA";

  bool Check(std::string* error) const;
};

// A suite read from a spec file (its kernels have no sensible default: the shipped
// microbench_specs/perf_kernels.json is what passes Check()).
struct PerfSuiteSpec {
  // Suite name (informational).
  std::string name = "virtual-sm";
  // Seed of the memory-latency jitter (each kernel hashes it with its own name).
  unsigned seed = 1;
  // Core frequency of the counter (timeline) run, MHz.
  double base_mhz = 700.0;
  // Target core frequencies the true run time is measured at, MHz, strictly ascending.
  std::vector<double> targets_mhz = {100, 200, 300, 400, 500, 600, 700};
  SmConfig sm;
  std::vector<PerfKernelSpec> kernels;

  bool Check(std::string* error) const;
};

// Reads a spec file; throws InputError (file, field) for a bad key or value, a spec that fails
// Check(), or duplicate kernel names.
PerfSuiteSpec ReadPerfSuiteSpec(const std::string& path);

// The SM model's program of one kernel spec.
SmKernel BuildSmKernel(const PerfKernelSpec& spec, unsigned suite_seed);

struct PerfCampaignReport {
  // Per kernel (spec order): the base run's timeline, its classification and counters.
  std::vector<Timeline> timelines;
  std::vector<CycleBreakdown> breakdowns;
  std::vector<CrispCounters> counters;
  // Per kernel, the base run (activity counts; its timeline is in `timelines`).
  std::vector<SmRun> base_runs;
  // True run times: every kernel at every target and at the base frequency, ascending.
  std::vector<ActualTime> actual;
};

// Runs the campaign (independent runs in parallel on `threads` threads; the result does not
// depend on the thread count). Throws OptionError when the spec or the classifier options fail
// Check().
PerfCampaignReport RunPerfCampaign(const PerfSuiteSpec& spec, const ClassifierOptions& classifier,
                                   int threads = 1);

// Each kernel's activity at the base frequency as a tidy activity CSV in `layout` (the power
// model's GPU), headed by "# wattcal-tidy default_f_core_mhz=... default_f_mem_mhz=...":
//   benchmark,f_core_mhz,f_mem_mhz,core:<component>...,mem:<component>...
// with f_core_mhz = the base frequency, f_mem_mhz = the layout's default memory frequency, and
// utilisations (fractions): alu_component = ALU instructions / (issue_width x cycles),
// "L2" = memory instructions / cycles (one per cycle at most), "DRAM" = memory-channel busy time
// / run time, every other component 0 ("L2" and "DRAM" are skipped when the layout has none).
// Throws InputError naming `spec_path` and the kernel's alu_component when the layout has no
// such component.
std::string CampaignActivityToTidyCsv(const PerfSuiteSpec& spec, const PerfCampaignReport& campaign,
                                      const Layout& layout, const std::string& spec_path);

}  // namespace wattcal
