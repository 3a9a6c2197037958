#include "usecases/synth_stage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "io/gpu_description.h"
#include <nlohmann/json.hpp>

#include "model/model_io.h"
#include "synth/accelwattch_sweeps.h"
#include "synth/synthetic_corpus.h"
#include "synth/virtual_gpu.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

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

void SynthStageOptions::Check() const {
  if (spec_path.empty()) throw OptionError("--spec is required");
  if (out_dir.empty()) throw OptionError("--out-dir is required");
  if (!f_core_levels_mhz.empty() && !accelwattch_sweeps) {
    throw OptionError("--f-core-levels-mhz needs --accelwattch-sweeps");
  }
  if (accelwattch_sweeps && campaign) {
    throw OptionError("--campaign and --accelwattch-sweeps exclude each other");
  }
  if (!f_core_levels_mhz.empty()) ParseCoreLevelsMhz(f_core_levels_mhz);
}

namespace {

SynthStageReport RunAccelWattchSweeps(const SynthStageOptions& o) {
  CampaignSpec campaign_spec;
  std::string gpu_path, spec_ubench_path;
  VirtualVoltaSpec spec =
      ReadVirtualVoltaSpec(o.spec_path, &campaign_spec, &gpu_path, &spec_ubench_path);
  if (o.noise_rel >= 0.0) spec.noise_rel = o.noise_rel;
  if (!o.f_core_levels_mhz.empty()) {
    spec.f_core_levels_mhz = ParseCoreLevelsMhz(o.f_core_levels_mhz);
  }
  const std::string ubench_path = o.ubench_path.empty() ? spec_ubench_path : o.ubench_path;
  if (ubench_path.empty()) throw OptionError("--ubench: the spec names no ubench_cfg; give one");
  const std::vector<UbenchConfig> ubench =
      ReadUbenchCfg(ubench_path, spec.sm_count, spec.warp_size);
  OutputSet outputs;
  const AccelWattchSweepSummary summary =
      WriteAccelWattchSweeps(spec, campaign_spec, ubench, o.seed, o.out_dir, &outputs);
  const nlohmann::json options = {{"seed", o.seed},
                                  {"noise_rel", spec.noise_rel},
                                  {"accelwattch_sweeps", true},
                                  {"f_core_levels_mhz", spec.f_core_levels_mhz}};
  std::vector<std::string> inputs = {o.spec_path, gpu_path, ubench_path};
  if (!spec.energy_estimates_path.empty()) inputs.push_back(spec.energy_estimates_path);
  SynthStageReport report;
  for (const std::string& f : AccelWattchSweepFiles()) {
    outputs.StageProvenance(o.out_dir + "/" + f, "synth", inputs, options);
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  report.brief = fmt::format(
      "{}: {} kernel runs ({} sweep lines x {} core clocks), {} power-log "
      "samples, in {}",
      spec.name, summary.kernels, ubench.size(), spec.f_core_levels_mhz.size(), summary.samples,
      o.out_dir);
  return report;
}

}  // namespace

SynthStageReport RunSynthStage(const SynthStageOptions& o) {
  o.Check();
  if (o.accelwattch_sweeps) {
    SynthStageReport report = RunAccelWattchSweeps(o);
    LogInfo(report.brief);
    report.exit_code = static_cast<int>(kExitOk);
    return report;
  }
  SyntheticSpec spec = ReadSyntheticSpec(o.spec_path);
  if (o.noise_rel >= 0.0) spec.noise_rel = o.noise_rel;
  if (o.corrupted_rows >= 0) spec.corrupted_rows = o.corrupted_rows;
  std::string error;
  if (!spec.Check(&error)) throw OptionError(error);
  const nlohmann::json options = {{"seed", o.seed},
                                  {"noise_rel", spec.noise_rel},
                                  {"corrupted_rows", spec.corrupted_rows},
                                  {"campaign", o.campaign}};
  SynthStageReport report;
  OutputSet outputs;
  if (o.campaign) {
    std::string gpu_path;
    const CampaignSpec campaign_spec = ReadCampaignSpec(o.spec_path, &gpu_path);
    const GpuDescription gpu = ReadGpuDescription(gpu_path);
    const CampaignSummary summary =
        WriteCampaign(spec, campaign_spec, gpu, o.seed, o.out_dir, &outputs);
    for (const char* f : {"train/power_log.csv", "train/windows.csv", "train/counters_ncu.csv",
                          "heldout/power_log.csv", "heldout/windows.csv",
                          "heldout/counters_ncu.csv", "truth_model.json"}) {
      outputs.StageProvenance(o.out_dir + "/" + f, "synth", {o.spec_path, gpu_path}, options);
    }
    outputs.Commit();
    report.written = outputs.Outputs();
    report.brief = fmt::format("{}: campaign of {} kernel runs, {} power-log samples, in {}",
                               spec.name, summary.kernels, summary.samples, o.out_dir);
    LogInfo(report.brief);
    report.exit_code = static_cast<int>(kExitOk);
    return report;
  }
  const SyntheticCorpus corpus = GenerateSyntheticCorpus(spec, o.seed);
  const std::string train = o.out_dir + "/train_micro_dvfs.csv";
  const std::string fixed = o.out_dir + "/train_micro_fixed.csv";
  const std::string heldout = o.out_dir + "/heldout_apps_dvfs.csv";
  const std::string truth = o.out_dir + "/truth_model.json";
  outputs.StageText(train, CorpusToGpmtoolCsv(corpus.train, false));
  outputs.StageText(fixed,
                    CorpusToGpmtoolCsv(corpus.train.Subset(corpus.train.RowsAtDefault()), false));
  outputs.StageText(heldout, CorpusToGpmtoolCsv(corpus.heldout, true));
  outputs.StageText(truth, ModelToJson(corpus.truth));
  for (const std::string& path : {train, fixed, heldout, truth}) {
    outputs.StageProvenance(path, "synth", {o.spec_path}, options);
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  report.brief = fmt::format(
      "{}: {} microbenchmark rows ({} benchmarks, {} corrupted), {} "
      "held-out rows ({} applications) in {}",
      spec.name, corpus.train.rows(), corpus.train.Benchmarks().size(),
      corpus.corrupted_train_rows.size(), corpus.heldout.rows(), corpus.heldout.Benchmarks().size(),
      o.out_dir);
  LogInfo(report.brief);
  report.exit_code = static_cast<int>(kExitOk);
  return report;
}

}  // namespace wattcal
