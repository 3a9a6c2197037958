// The virtual GPU: a measurement campaign written in the real tools' formats from a known
// truth, so that the whole journey (dumps -> ingest -> calibrate -> validate) runs and is
// tested where no GPU is attached.
//
// For every benchmark at every V-F pair it "runs" a kernel and writes what a harness would
// record: an nvidia-smi --query-gpu CSV power log sampled at irregular 10-30 ms intervals,
// with the sensor's refresh period (readings repeat between refreshes), its lag and
// first-order ramp at kernel start and decay after it, sensor noise, run-to-run variation,
// and slow thermal drift through temperature-dependent leakage; the kernel launch windows
// (MTSM-style, Arafa et al.); and Nsight Compute counters at the default pair.
#pragma once

#include <string>

#include "io/gpu_description.h"
#include "synth/synthetic_corpus.h"
#include "util/output.h"

namespace wattcal {

struct CampaignSpec {
  // Length of each kernel run, s (MTSM harnesses repeat short kernels to last ~1 s or more).
  double kernel_duration_s = 2.0;
  // Idle time before each kernel, s.
  double gap_s = 0.25;
  // nvidia-smi polling interval, drawn uniformly in [min, max], ms.
  double sample_interval_min_ms = 10.0;
  double sample_interval_max_ms = 30.0;
  // The power sensor refreshes this often, ms; polls in between repeat the last reading.
  double sensor_refresh_ms = 20.0;
  // Delay between a power change and its first effect on the sensor, ms.
  double sensor_lag_ms = 20.0;
  // First-order time constants of the sensor's rise and decay, ms.
  double rise_tau_ms = 15.0;
  double decay_tau_ms = 40.0;
  // Gaussian noise of each fresh reading, W.
  double sensor_noise_w = 0.5;
  // Thermal model: T' = (ambient + R * P - T) / tau; leakage scales power by
  // 1 + leakage_per_c * (T - reference).
  double ambient_c = 30.0;
  double thermal_resistance_c_per_w = 0.12;
  double thermal_tau_s = 30.0;
  double leakage_per_c = 0.001;
  double reference_c = 45.0;

  bool Check(std::string* error) const;
};

// Reads the "campaign" object of a spec file (all fields optional; defaults above) and the
// GPU description it names ("gpu_description", relative to the spec file).
CampaignSpec ReadCampaignSpec(const std::string& spec_path, std::string* gpu_description_path);

struct CampaignSummary {
  int kernels = 0;      // kernel runs written (benchmarks x V-F pairs)
  int64_t samples = 0;  // power-log rows written
};

// Writes, under `out_dir`, train/{power_log.csv,windows.csv,counters_ncu.csv} for the
// microbenchmarks, heldout/{...} for the applications, and truth_model.json, all staged in
// `outputs`. The GPU description's components must match the spec's layout.
CampaignSummary WriteCampaign(const SyntheticSpec& spec, const CampaignSpec& campaign,
                              const GpuDescription& gpu, unsigned seed, const std::string& out_dir,
                              OutputSet* outputs);

}  // namespace wattcal
