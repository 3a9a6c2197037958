// wattcal-synth as one library call: a measurement corpus generated from a known truth (the
// embedded default run, tests and benchmarks use it), the raw dumps of a measurement campaign
// (--campaign), or a virtual Volta's AccelWattch sweeps (--accelwattch-sweeps).
#pragma once

#include <string>
#include <vector>

#include "usecases/stage_summary.h"

namespace wattcal {

struct SynthStageOptions {
  // --spec: ground-truth GPU spec (JSON, microbench_specs/); required.
  std::string spec_path;
  // --out-dir: folder of the files written; required.
  std::string out_dir;
  // --seed: random seed (same seed, same bytes).
  unsigned seed = 1;
  // --noise-rel: the spec's measurement noise replaced (fraction); negative = the spec's.
  double noise_rel = -1.0;
  // --corrupted-rows: the spec's corrupted training rows replaced; negative = the spec's.
  int corrupted_rows = -1;
  // --campaign: raw dumps of a measurement campaign instead of the corpora.
  bool campaign = false;
  // --accelwattch-sweeps: a virtual Volta's AccelWattch sweep list at every core clock.
  bool accelwattch_sweeps = false;
  // --ubench: with accelwattch_sweeps, the sweep list (ubench.cfg) instead of the spec's.
  std::string ubench_path;
  // --f-core-levels-mhz: with accelwattch_sweeps, the core clocks, comma-separated, MHz
  // (positive and distinct); empty = the spec's f_core_levels_mhz.
  std::string f_core_levels_mhz;

  // OptionError naming the flag: --spec or --out-dir missing, --f-core-levels-mhz without
  // --accelwattch-sweeps or not a list of distinct clocks > 0, --campaign with
  // --accelwattch-sweeps.
  void Check() const;
};

struct SynthStageReport : StageSummary {};

SynthStageReport RunSynthStage(const SynthStageOptions& options);

// --f-core-levels-mhz: positive, distinct clocks, returned ascending (the spec's order).
// OptionError naming the flag and the item.
std::vector<double> ParseCoreLevelsMhz(const std::string& list);

}  // namespace wattcal
