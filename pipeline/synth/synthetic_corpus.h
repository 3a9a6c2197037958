// A corpus generated from a known truth: the model of TPDS Eqs. 4-6 with a flat-then-linear
// voltage curve (the NVML behaviour of TPDS §4.3), microbenchmarks shaped like TPDS Table 2
// (one component stressed at several intensities, mixes, an idle run), held-out
// "applications" with mixed utilisations, seeded measurement noise and a few corrupted rows.
// It feeds the embedded default run, the parameter-recovery tests and the benchmarks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/corpus.h"
#include "model/power_model.h"

namespace wattcal {

// Voltage curve of one domain: v(f) = max(floor, 1 + slope * (f - f_default)), i.e. flat at
// low frequencies and linear above the knee, v = 1 at the default frequency.
struct SyntheticVoltageCurve {
  // Frequencies the GPU can be set to, MHz.
  std::vector<double> freq_levels_mhz;
  // Lowest normalised voltage (the flat part).
  double floor_rel = 1.0;
  // Slope of the linear part, normalised voltage per MHz.
  double slope_per_mhz = 0.0;
};

struct SyntheticSpec {
  // GPU name (informational).
  std::string name = "virtual";
  Layout layout;
  // One curve per domain.
  std::vector<SyntheticVoltageCurve> voltage;
  // The true coefficients, gpmTOOL order [alpha0_k..., alpha1_k..., gamma_i...].
  std::vector<double> coefficients;
  // Microbenchmarks per component (at increasing intensity), mixes, and held-out apps.
  int microbenchmarks_per_component = 6;
  int mix_microbenchmarks = 8;
  int heldout_applications = 20;
  // Multiplicative Gaussian measurement noise (standard deviation, fraction).
  double noise_rel = 0.01;
  // Training rows whose power is corrupted (multiplied by corruption_factor).
  int corrupted_rows = 0;
  double corruption_factor = 1.6;

  bool Check(std::string* error) const;
};

// Reads a spec from JSON (see microbench_specs/virtual_gpu.json); throws InputError.
SyntheticSpec ReadSyntheticSpec(const std::string& path);

// The true model of a spec.
PowerModel TruthModel(const SyntheticSpec& spec);

struct SyntheticCorpus {
  PowerModel truth;
  Corpus train;    // microbenchmarks at every V-F pair (kTraining, names micro_###)
  Corpus heldout;  // applications at every V-F pair (kMeasured)
  std::vector<int> corrupted_train_rows;
};

// Deterministic for a seed on every platform (mt19937 with our own normal draws).
SyntheticCorpus GenerateSyntheticCorpus(const SyntheticSpec& spec, unsigned seed);

class Rng;
// The benchmarks of a spec: microbenchmarks shaped like TPDS Table 2 (each component at
// increasing intensity, mixes, one idle run) and held-out applications (mixed activity).
struct SyntheticSuite {
  std::vector<std::string> micro_names;         // micro_001, ...
  std::vector<std::vector<double>> micro_util;  // per microbenchmark, per component
  std::vector<std::string> app_names;           // app_01, ...
  std::vector<std::vector<double>> app_util;
};
SyntheticSuite GenerateSuite(const SyntheticSpec& spec, Rng* rng);

// gpmTOOL's file formats: training ("P,f...,U...") or measured ("name,P,f...,U...").
std::string CorpusToGpmtoolCsv(const Corpus& corpus, bool with_names);

}  // namespace wattcal
