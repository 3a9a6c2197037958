#include "synth/virtual_gpu.h"

#include <fmt/format.h>

#include <boost/filesystem.hpp>
#include <cmath>
#include <ctime>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ingest/counters.h"
#include "ingest/utilisation.h"
#include "io/model_io.h"
#include "synth/rng.h"
#include "util/errors.h"
#include "util/logging.h"

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
  if (!(sample_interval_max_ms >= sample_interval_min_ms)) {
    *error = fmt::format("campaign.sample_interval_max_ms = {} must be >= sample_interval_min_ms = {}",
                         sample_interval_max_ms, sample_interval_min_ms);
    return false;
  }
  return true;
}

CampaignSpec ReadCampaignSpec(const std::string& spec_path, std::string* gpu_description_path) {
  std::ifstream in(spec_path);
  if (!in) throw InputError(spec_path, 0, "", "cannot open spec file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(spec_path, 0, "", std::string("not valid JSON: ") + e.what());
  }
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
    c.thermal_resistance_c_per_w = cj.value("thermal_resistance_c_per_w", c.thermal_resistance_c_per_w);
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

// 2026-01-01 00:00:00 UTC: the campaign's clock starts here.
constexpr double kEpochStartS = 1767225600.0;

// nvidia-smi's timestamp format, "YYYY/MM/DD HH:MM:SS.mmm" (printed as UTC).
std::string NvidiaSmiTimestamp(double epoch_s) {
  const int64_t ms_total = static_cast<int64_t>(std::llround(epoch_s * 1000.0));
  const std::time_t seconds = static_cast<std::time_t>(ms_total / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     static_cast<int>(ms_total % 1000));
}

// The GPU as its power sensor sees it: a piecewise-constant power target, lagged and
// filtered, read every sensor_refresh_ms, polled by nvidia-smi at irregular intervals.
class Simulator {
 public:
  Simulator(const CampaignSpec& c, Rng* rng) : c_(c), rng_(rng), temperature_c_(c.ambient_c) {}

  // Runs `duration_s` seconds with the power target `target_w` at clocks (f_core, f_mem).
  void Run(double duration_s, double target_w, double f_core_mhz, double f_mem_mhz) {
    segments_.push_back({now_s_, now_s_ + duration_s, target_w});
    if (!initialised_) Refresh(now_s_);
    const double end_s = now_s_ + duration_s;
    while (true) {
      const double next_refresh_s = last_refresh_s_ + c_.sensor_refresh_ms * 1e-3;
      const double next_poll_s = next_poll_s_;
      if (std::min(next_refresh_s, next_poll_s) >= end_s) break;
      if (next_refresh_s <= next_poll_s) {
        Refresh(next_refresh_s);
      } else {
        Poll(next_poll_s, f_core_mhz, f_mem_mhz);
        next_poll_s_ += rng_->Uniform(c_.sample_interval_min_ms, c_.sample_interval_max_ms) * 1e-3;
      }
    }
    now_s_ = end_s;
    // Segments older than the lag are no longer needed.
    while (segments_.size() > 2 && segments_[1].end_s < now_s_ - 1.0) segments_.erase(segments_.begin());
  }

  double now_s() const { return now_s_; }
  const std::string& log() const { return log_; }
  int64_t samples() const { return samples_; }

 private:
  struct Segment {
    double start_s, end_s, target_w;
  };

  double TargetAt(double t) const {
    for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
      if (t >= it->start_s) return it->target_w;
    }
    return segments_.empty() ? 0.0 : segments_.front().target_w;
  }

  void Refresh(double t) {
    const double dt = t - last_refresh_s_;
    const double target = TargetAt(t - c_.sensor_lag_ms * 1e-3);
    if (!initialised_) {
      filtered_w_ = target;
      initialised_ = true;
    }
    const double tau_s = (target > filtered_w_ ? c_.rise_tau_ms : c_.decay_tau_ms) * 1e-3;
    filtered_w_ += (target - filtered_w_) * (1.0 - std::exp(-dt / tau_s));
    temperature_c_ += (c_.ambient_c + c_.thermal_resistance_c_per_w * filtered_w_ - temperature_c_) *
                      (1.0 - std::exp(-dt / c_.thermal_tau_s));
    const double leakage = 1.0 + c_.leakage_per_c * (temperature_c_ - c_.reference_c);
    reading_w_ = filtered_w_ * leakage + c_.sensor_noise_w * rng_->Normal();
    last_refresh_s_ = t;
  }

  void Poll(double t, double f_core_mhz, double f_mem_mhz) {
    // nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,clocks.mem,temperature.gpu
    log_ += fmt::format("{}, 0, {:.2f} W, {} MHz, {} MHz, {}\n", NvidiaSmiTimestamp(kEpochStartS + t),
                        reading_w_, f_core_mhz, f_mem_mhz, static_cast<int>(std::lround(temperature_c_)));
    ++samples_;
  }

  const CampaignSpec& c_;
  Rng* rng_;
  std::vector<Segment> segments_;
  double now_s_ = 0.0;
  double last_refresh_s_ = 0.0;
  double next_poll_s_ = 0.0;
  bool initialised_ = false;
  double filtered_w_ = 0.0;
  double reading_w_ = 0.0;
  double temperature_c_;
  std::string log_ =
      "timestamp, index, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], "
      "temperature.gpu\n";
  int64_t samples_ = 0;
};

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
  const std::vector<double> mem = nd > 1 ? spec.voltage[1].freq_levels_mhz : std::vector<double>{0.0};
  for (auto fm = mem.rbegin(); fm != mem.rend(); ++fm) {
    for (auto fc = core.rbegin(); fc != core.rend(); ++fc) pairs.push_back({*fc, *fm});
  }
  CampaignPart part;
  part.windows = "kernel,start_us,end_us\n";
  Simulator sim(c, rng);
  for (const std::vector<double>& pair : pairs) {
    const double idle_w = truth.Predict(zero.data(), pair.data());
    for (size_t b = 0; b < names.size(); ++b) {
      // Run-to-run variation of the kernel's power (the measurement noise of the spec).
      const double kernel_w = truth.Predict(utils[b].data(), pair.data()) * (1.0 + spec.noise_rel * rng->Normal());
      sim.Run(c.gap_s, idle_w, pair[0], pair[1]);
      const double start_s = sim.now_s();
      sim.Run(c.kernel_duration_s, kernel_w, pair[0], pair[1]);
      part.windows += fmt::format("{},{},{}\n", names[b],
                                  std::llround((kEpochStartS + start_s) * 1e6),
                                  std::llround((kEpochStartS + sim.now_s()) * 1e6));
      ++part.kernels;
    }
  }
  sim.Run(c.gap_s, truth.Predict(zero.data(), pairs.back().data()), pairs.back()[0], pairs.back()[1]);
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
                      "description): " + mismatch);
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
