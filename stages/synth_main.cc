// wattcal-synth: a measurement corpus generated from a known truth (the embedded default run,
// tests and benchmarks use it; the full virtual GPU writing raw tool dumps grows from here).
//
//   wattcal-synth --spec microbench_specs/virtual_gpu.json --out-dir DIR [--seed N]
//   wattcal-synth --spec microbench_specs/virtual_volta.json --out-dir DIR --accelwattch-sweeps
//                 [--ubench LIST.cfg] [--f-core-levels-mhz 1447,1140,825]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/model_io.h"
#include "stage_common.h"
#include "io/gpu_description.h"
#include "synth/accelwattch_sweeps.h"
#include "synth/synthetic_corpus.h"
#include "synth/virtual_gpu.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

namespace {

// --f-core-levels-mhz: positive, distinct clocks, returned ascending (the spec's order).
std::vector<double> ParseCoreLevelsMhz(const std::string& list) {
  std::vector<double> levels;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    double f = 0.0;
    size_t used = 0;
    try {
      f = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !std::isfinite(f) || !(f > 0.0)) {
      throw OptionError(fmt::format("--f-core-levels-mhz: '{}' is not a clock > 0 MHz", item));
    }
    if (std::find(levels.begin(), levels.end(), f) != levels.end()) {
      throw OptionError(fmt::format("--f-core-levels-mhz: {} MHz appears twice", item));
    }
    levels.push_back(f);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(levels.begin(), levels.end());
  return levels;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Generate microbenchmark and application measurements from a known truth",
               "wattcal-synth"};
  std::string spec_path, out_dir;
  unsigned seed = 1;
  double noise_rel = -1.0;
  int corrupted_rows = -1;
  app.add_option("--spec", spec_path, "Ground-truth GPU spec (JSON, see microbench_specs/)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out-dir", out_dir, "Folder for train_micro_dvfs.csv, train_micro_fixed.csv, "
                                       "heldout_apps_dvfs.csv and truth_model.json")
      ->required();
  app.add_option("--seed", seed, "Random seed (same seed, same bytes)")->capture_default_str();
  app.add_option("--noise-rel", noise_rel, "Override the spec's measurement noise (fraction)");
  app.add_option("--corrupted-rows", corrupted_rows, "Override the spec's corrupted training rows");
  bool campaign = false;
  app.add_flag("--campaign", campaign,
               "Write the raw dumps of a measurement campaign: DIR/{train,heldout}/power_log.csv "
               "(nvidia-smi), windows.csv (kernel launch windows), counters_ncu.csv (Nsight "
               "Compute at the default pair), and DIR/truth_model.json");
  bool accelwattch_sweeps = false;
  std::string ubench_path;
  app.add_flag("--accelwattch-sweeps", accelwattch_sweeps,
               "With a virtual Volta spec (microbench_specs/virtual_volta.json): run its AccelWattch "
               "sweep list at every core clock and write DIR/power_log.csv (nvidia-smi), "
               "windows.csv, counters.csv (Nsight Compute raw page), sweep.csv (kernel -> "
               "benchmark, category, active SMs, lanes, clock), truth_power.csv and "
               "truth_accelwattch.json");
  app.add_option("--ubench", ubench_path,
                 "With --accelwattch-sweeps: the sweep list (ubench.cfg format) instead of the spec's")
      ->check(CLI::ExistingFile);
  std::string f_core_levels;
  app.add_option("--f-core-levels-mhz", f_core_levels,
                 "With --accelwattch-sweeps: the core clocks to run at, MHz, comma-separated "
                 "(instead of the spec's f_core_levels_mhz)");
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    if (!f_core_levels.empty() && !accelwattch_sweeps) {
      throw OptionError("--f-core-levels-mhz needs --accelwattch-sweeps");
    }
    if (accelwattch_sweeps) {
      if (campaign) throw OptionError("--campaign and --accelwattch-sweeps exclude each other");
      CampaignSpec campaign_spec;
      std::string gpu_path, spec_ubench_path;
      VirtualVoltaSpec spec =
          ReadVirtualVoltaSpec(spec_path, &campaign_spec, &gpu_path, &spec_ubench_path);
      if (noise_rel >= 0.0) spec.noise_rel = noise_rel;
      if (!f_core_levels.empty()) spec.f_core_levels_mhz = ParseCoreLevelsMhz(f_core_levels);
      if (ubench_path.empty()) ubench_path = spec_ubench_path;
      if (ubench_path.empty()) throw OptionError("--ubench: the spec names no ubench_cfg; give one");
      const std::vector<UbenchConfig> ubench =
          ReadUbenchCfg(ubench_path, spec.sm_count, spec.warp_size);
      OutputSet outputs;
      const AccelWattchSweepSummary summary =
          WriteAccelWattchSweeps(spec, campaign_spec, ubench, seed, out_dir, &outputs);
      const nlohmann::json options = {{"seed", seed},
                                      {"noise_rel", spec.noise_rel},
                                      {"accelwattch_sweeps", true},
                                      {"f_core_levels_mhz", spec.f_core_levels_mhz}};
      std::vector<std::string> inputs = {spec_path, gpu_path, ubench_path};
      if (!spec.energy_estimates_path.empty()) inputs.push_back(spec.energy_estimates_path);
      for (const std::string& f : AccelWattchSweepFiles()) {
        outputs.StageManifest(out_dir + "/" + f, "synth", inputs, options);
      }
      outputs.Commit();
      LogInfo(fmt::format("{}: {} kernel runs ({} sweep lines x {} core clocks), {} power-log "
                          "samples, in {}", spec.name, summary.kernels, ubench.size(),
                          spec.f_core_levels_mhz.size(), summary.samples, out_dir));
      return static_cast<int>(kExitOk);
    }
    SyntheticSpec spec = ReadSyntheticSpec(spec_path);
    if (noise_rel >= 0.0) spec.noise_rel = noise_rel;
    if (corrupted_rows >= 0) spec.corrupted_rows = corrupted_rows;
    std::string error;
    if (!spec.Check(&error)) throw OptionError(error);
    nlohmann::json options = {{"seed", seed},
                              {"noise_rel", spec.noise_rel},
                              {"corrupted_rows", spec.corrupted_rows},
                              {"campaign", campaign}};
    OutputSet outputs;
    if (campaign) {
      std::string gpu_path;
      const CampaignSpec campaign_spec = ReadCampaignSpec(spec_path, &gpu_path);
      const GpuDescription gpu = ReadGpuDescription(gpu_path);
      const CampaignSummary summary = WriteCampaign(spec, campaign_spec, gpu, seed, out_dir, &outputs);
      const std::vector<std::string> files = {"train/power_log.csv", "train/windows.csv",
                                              "train/counters_ncu.csv", "heldout/power_log.csv",
                                              "heldout/windows.csv", "heldout/counters_ncu.csv",
                                              "truth_model.json"};
      for (const std::string& f : files) {
        outputs.StageManifest(out_dir + "/" + f, "synth", {spec_path, gpu_path}, options);
      }
      outputs.Commit();
      LogInfo(fmt::format("{}: campaign of {} kernel runs, {} power-log samples, in {}", spec.name,
                          summary.kernels, summary.samples, out_dir));
      return static_cast<int>(kExitOk);
    }
    const SyntheticCorpus corpus = GenerateSyntheticCorpus(spec, seed);
    const std::string train = out_dir + "/train_micro_dvfs.csv";
    const std::string fixed = out_dir + "/train_micro_fixed.csv";
    const std::string heldout = out_dir + "/heldout_apps_dvfs.csv";
    const std::string truth = out_dir + "/truth_model.json";
    outputs.StageText(train, CorpusToGpmtoolCsv(corpus.train, false));
    outputs.StageText(fixed, CorpusToGpmtoolCsv(corpus.train.Subset(corpus.train.RowsAtDefault()), false));
    outputs.StageText(heldout, CorpusToGpmtoolCsv(corpus.heldout, true));
    outputs.StageText(truth, ModelToJson(corpus.truth));
    for (const std::string& path : {train, fixed, heldout, truth}) {
      outputs.StageManifest(path, "synth", {spec_path}, options);
    }
    outputs.Commit();
    LogInfo(fmt::format("{}: {} microbenchmark rows ({} benchmarks, {} corrupted), {} held-out rows "
                        "({} applications) in {}",
                        spec.name, corpus.train.rows(), corpus.train.Benchmarks().size(),
                        corpus.corrupted_train_rows.size(), corpus.heldout.rows(),
                        corpus.heldout.Benchmarks().size(), out_dir));
    return static_cast<int>(kExitOk);
  });
}
