// AccelWattch's microbenchmark list (ubench.cfg): one line per microbenchmark, read by
// wattcal-synth (the virtual GPU's AccelWattch sweeps) and wattcal-ingest (--ubench).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

// One line of an AccelWattch ubench.cfg: `<name> <iterations> [active SMs] [lanes per warp]`.
struct UbenchConfig {
  // Microbenchmark name (the benchmark of the sweep).
  std::string name;
  // Iterations argument (recorded, not used by the virtual GPU).
  int64_t iterations = 0;
  // Active SMs; the GPU's SM count when the line omits it.
  int active_sms = 0;
  // Active lanes per warp; the warp size when the line omits it.
  int lanes_per_warp = 0;
  // 1-based line in the cfg file.
  int64_t line = 0;
};

// Reads a ubench.cfg (whitespace-separated; blank lines and lines starting with '#' skipped).
// Throws InputError naming FILE:LINE and the field for a missing or non-integer field, a
// value out of range (1 <= active SMs <= sm_count, 1 <= lanes <= warp_size) or extra fields.
std::vector<UbenchConfig> ReadUbenchCfg(const std::string& path, int sm_count, int warp_size);

}  // namespace wattcal
