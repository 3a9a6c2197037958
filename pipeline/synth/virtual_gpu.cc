#include "synth/virtual_gpu.h"

#include <fmt/format.h>

#include <boost/filesystem.hpp>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ingest/counters.h"
#include "ingest/utilisation.h"
#include "util/json_file.h"
#include "model/model_io.h"
#include "synth/power_sensor.h"
#include "util/errors.h"
#include "util/option_rule.h"
#include "util/logging.h"
#include "util/rng.h"

namespace wattcal {

bool CampaignSpec::Check(std::string* error) const {
  auto positive = [error](double v, const char* name) {
    if (v > 0.0 && std::isfinite(v)) return true;
    *error = fmt::format("campaign.{} = {} must be > 0", name, v);
    return false;
  };
  auto non_negative = [error](double v, const char* name) {
    if (v >= 0.0 && std::isfinite(v)) return true;
    *error = fmt::format("campaign.{} = {} must be >= 0", name, v);
    return false;
  };
  if (!positive(kernel_duration_s, "kernel_duration_s") || !non_negative(gap_s, "gap_s") ||
      !positive(sample_interval_min_ms, "sample_interval_min_ms") ||
      !positive(sensor_refresh_ms, "sensor_refresh_ms") ||
      !non_negative(sensor_lag_ms, "sensor_lag_ms") || !positive(rise_tau_ms, "rise_tau_ms") ||
      !positive(decay_tau_ms, "decay_tau_ms") || !non_negative(sensor_noise_w, "sensor_noise_w") ||
      !non_negative(thermal_resistance_c_per_w, "thermal_resistance_c_per_w") ||
      !positive(thermal_tau_s, "thermal_tau_s") || !non_negative(leakage_per_c, "leakage_per_c")) {
    return false;
  }
  if (!(sample_interval_max_ms >= sample_interval_min_ms))
    return RejectOption(
        error, "campaign.sample_interval_max_ms = {} must be >= sample_interval_min_ms = {}",
        sample_interval_max_ms, sample_interval_min_ms);
  return true;
}

CampaignSpec ReadCampaignSpec(const std::string& spec_path, std::string* gpu_description_path) {
  const nlohmann::json j = ReadJsonFile(spec_path, "spec file");
  CampaignSpec c;
  try {
    const std::string relative = j.at("gpu_description").get<std::string>();
    *gpu_description_path =
        (boost::filesystem::path(spec_path).parent_path() / relative).lexically_normal().string();
    const nlohmann::json cj = j.value("campaign", nlohmann::json::object());
    c.kernel_duration_s = cj.value("kernel_duration_s", c.kernel_duration_s);
    c.gap_s = cj.value("gap_s", c.gap_s);
    c.sample_interval_min_ms = cj.value("sample_interval_min_ms", c.sample_interval_min_ms);
    c.sample_interval_max_ms = cj.value("sample_interval_max_ms", c.sample_interval_max_ms);
    c.sensor_refresh_ms = cj.value("sensor_refresh_ms", c.sensor_refresh_ms);
    c.sensor_lag_ms = cj.value("sensor_lag_ms", c.sensor_lag_ms);
    c.rise_tau_ms = cj.value("rise_tau_ms", c.rise_tau_ms);
    c.decay_tau_ms = cj.value("decay_tau_ms", c.decay_tau_ms);
    c.sensor_noise_w = cj.value("sensor_noise_w", c.sensor_noise_w);
    c.ambient_c = cj.value("ambient_c", c.ambient_c);
    c.thermal_resistance_c_per_w =
        cj.value("thermal_resistance_c_per_w", c.thermal_resistance_c_per_w);
    c.thermal_tau_s = cj.value("thermal_tau_s", c.thermal_tau_s);
    c.leakage_per_c = cj.value("leakage_per_c", c.leakage_per_c);
    c.reference_c = cj.value("reference_c", c.reference_c);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(spec_path, 0, "campaign", std::string("bad campaign spec: ") + e.what());
  }
  std::string error;
  if (!c.Check(&error)) throw InputError(spec_path, 0, "campaign", error);
  return c;
}

namespace {

struct CampaignPart {
  std::string power_log;
  std::string windows;
  std::string counters;
  int kernels = 0;
  int64_t samples = 0;
};

CampaignPart RunPart(const SyntheticSpec& spec, const CampaignSpec& c, const GpuDescription& gpu,
                     const PowerModel& truth, const std::vector<std::string>& names,
                     const std::vector<std::vector<double>>& utils, Rng* rng) {
  const int nd = spec.layout.num_domains();
  const std::vector<double> zero(spec.layout.num_components(), 0.0);
  // V-F pairs, highest first as in gpmTOOL's files.
  std::vector<std::vector<double>> pairs;
  const auto& core = spec.voltage[0].freq_levels_mhz;
  const std::vector<double> mem =
      nd > 1 ? spec.voltage[1].freq_levels_mhz : std::vector<double>{0.0};
  for (auto fm = mem.rbegin(); fm != mem.rend(); ++fm) {
    for (auto fc = core.rbegin(); fc != core.rend(); ++fc) pairs.push_back({*fc, *fm});
  }
  CampaignPart part;
  part.windows = "kernel,start_us,end_us\n";
  PowerSensorSimulator sim(c, rng);
  for (const std::vector<double>& pair : pairs) {
    const double idle_w = truth.Predict(zero.data(), pair.data());
    for (size_t b = 0; b < names.size(); ++b) {
      // Run-to-run variation of the kernel's power (the measurement noise of the spec).
      const double kernel_w =
          truth.Predict(utils[b].data(), pair.data()) * (1.0 + spec.noise_rel * rng->Normal());
      sim.Run(c.gap_s, idle_w, pair[0], pair[1]);
      const double start_s = sim.now_s();
      sim.Run(c.kernel_duration_s, kernel_w, pair[0], pair[1]);
      part.windows +=
          fmt::format("{},{},{}\n", names[b], std::llround((kCampaignEpochStartS + start_s) * 1e6),
                      std::llround((kCampaignEpochStartS + sim.now_s()) * 1e6));
      ++part.kernels;
    }
  }
  sim.Run(c.gap_s, truth.Predict(zero.data(), pairs.back().data()), pairs.back()[0],
          pairs.back()[1]);
  part.power_log = sim.log();
  part.samples = sim.samples();

  // Nsight Compute counters, measured at the default pair (TPDS §4.1).
  std::vector<KernelCounters> counters;
  const double active_cycles_per_sm = c.kernel_duration_s * gpu.default_core_mhz * 1e6;
  for (size_t b = 0; b < names.size(); ++b) {
    KernelCounters k;
    k.kernel = names[b];
    k.launches = 1;
    k.metrics = CountersForUtilisations(utils[b], gpu, c.kernel_duration_s, active_cycles_per_sm);
    k.metrics[gpu.duration_metric] = c.kernel_duration_s;
    k.metrics[gpu.active_cycles_metric] = active_cycles_per_sm;
    counters.push_back(k);
  }
  part.counters = NcuDetailsCsv(counters);
  return part;
}

}  // namespace

CampaignSummary WriteCampaign(const SyntheticSpec& spec, const CampaignSpec& c,
                              const GpuDescription& gpu, unsigned seed, const std::string& out_dir,
                              OutputSet* outputs) {
  std::string error;
  if (!spec.Check(&error)) throw OptionError("synthetic spec: " + error);
  if (!c.Check(&error)) throw OptionError(error);
  const std::string mismatch = spec.layout.Mismatch(gpu.ToLayout());
  if (!mismatch.empty()) {
    throw OptionError("the GPU description " + gpu.name +
                      " does not match the spec's components (here the spec, there the "
                      "description): " +
                      mismatch);
  }
  Rng rng(seed);
  const PowerModel truth = TruthModel(spec);
  const SyntheticSuite suite = GenerateSuite(spec, &rng);
  CampaignSummary summary;
  const std::vector<std::pair<std::string, CampaignPart>> parts = {
      {"train", RunPart(spec, c, gpu, truth, suite.micro_names, suite.micro_util, &rng)},
      {"heldout", RunPart(spec, c, gpu, truth, suite.app_names, suite.app_util, &rng)}};
  for (const auto& [name, part] : parts) {
    outputs->StageText(out_dir + "/" + name + "/power_log.csv", part.power_log);
    outputs->StageText(out_dir + "/" + name + "/windows.csv", part.windows);
    outputs->StageText(out_dir + "/" + name + "/counters_ncu.csv", part.counters);
    summary.kernels += part.kernels;
    summary.samples += part.samples;
  }
  outputs->StageText(out_dir + "/truth_model.json", ModelToJson(truth));
  return summary;
}

}  // namespace wattcal
