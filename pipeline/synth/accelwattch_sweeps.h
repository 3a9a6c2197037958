// The virtual GPU's AccelWattch sweeps (MICRO'21 §4): a Volta-like GPU with constant power,
// power-gated chip-wide, SM-wide and per-lane structures, half-warp/linear lane behaviour that
// drifts with the instruction mix, idle-SM power and per-operation energies, "run" over a
// microbenchmark list in AccelWattch's ubench.cfg format at every core frequency of a DVFS
// sweep, and written as a real harness would record it: an nvidia-smi power log and kernel
// launch windows (through the shared PowerSensorSimulator), plus a sweep description that
// tells each kernel's benchmark, instruction-mix category, active SMs, lanes and clock.
//
// The truth (every "_w" value is at the reference core clock f_ref = the GPU description's
// default_core_mhz; the supply voltage is taken proportional to the core clock, the §4.2
// assumption V ~ k f, so static power scales with f / f_ref and voltage-scaled dynamic power
// with (f / f_ref)^3). For benchmark b on k >= 1 active SMs with y active lanes per warp:
//
//   P = P_const                                            constant_power_w
//     + chip_static_w * s                                  chip-wide structures (L2, NoC, ...)
//     + (N - k) * idle_sm_w * s                            idle SMs
//     + k * (sm_static_w + L_b * y_eff) * s                active SMs: SM-wide + per-lane leakage
//     + k * issue_w_per_sm * s^3                           SM-wide dynamic (fetch, schedule, RF)
//     + k * sum_op E_op * n_op * f_ref * y_eff / W * s^a   per-operation dynamic energy
//
// with s = f / f_ref, N SMs, W lanes per warp, L_b the summed lane_static_w of the units b's
// operations run on, E_op the energy per lane-operation (pJ), n_op operations per cycle per SM
// at a full warp, a = 3 for voltage-scaled operations and 1 for the others (DRAM: its voltage
// does not follow the core clock), and the effective lane count
//
//   y_eff = 1 + (W - 1) * [ m_c * h(y) / h(W) + (1 - m_c) * (y - 1) / (W - 1) ]
//   h(y)  = y - 1                              for y <= H (H = half_warp_lanes)
//         = (H - 1) / 2 + (y - H - 1) / 2      for y >  H       (the basis of Eq. 5)
//
// where m_c is the half-warp weight of b's category: 1 gives Eq. 5's sawtooth exactly, 0
// Eq. 4's straight line, values between the drift §4.5 describes as more units overlap.
// Between kernels the GPU idles at P_const (§4.3: with no SM active only constant power) for
// gap_s plus a launch jitter drawn uniformly in [0, sensor_refresh_ms).
// Every kernel's power gets a run-to-run factor 1 + noise_rel * N(0, 1).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ingest/gpu_description.h"
#include "synth/virtual_gpu.h"
#include "util/output.h"

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

// The per-lane leakage of a functional unit.
struct VoltaUnit {
  std::string unit;
  // Static power of one more active lane of this unit in one SM at f_ref, W.
  double lane_static_w = 0.0;
};

// An operation kind and its energy.
struct VoltaOp {
  std::string op;
  // The unit it runs on (must be a VoltaUnit).
  std::string unit;
  // Energy per lane-operation at the reference voltage, pJ.
  double energy_pj = 0.0;
  // True: the energy scales with the core voltage squared (core logic); false: it does not
  // (DRAM, whose voltage does not follow the core clock).
  bool voltage_scaled = true;
};

// An instruction-mix category of §4.5 and how strongly it follows the half-warp model.
struct VoltaCategory {
  std::string category;
  // m_c in [0, 1]: 1 = Eq. 5 sawtooth, 0 = Eq. 4 straight line.
  double half_warp_weight = 0.0;
};

// A microbenchmark of the sweep list.
struct VoltaBenchmark {
  std::string benchmark;
  // One of the spec's categories, or "" for none.
  std::string category;
  // SM-wide dynamic power of an active SM at f_ref, W (independent of the lanes).
  double issue_w_per_sm = 0.0;
  // Lane-operations per cycle per SM at a full warp, by operation kind.
  std::map<std::string, double> ops_per_cycle_per_sm;
};

struct VirtualVoltaSpec {
  std::string name;
  // Human-readable description of the truth and where its numbers come from.
  std::string about;
  // SMs, lanes per warp, reference (default) core clock and memory clock: from the GPU
  // description the spec names.
  int sm_count = 80;
  int warp_size = 32;
  double reference_f_core_mhz = 1447.0;
  double f_mem_mhz = 850.0;
  // Lanes per half-warp (H of Eq. 5).
  int half_warp_lanes = 16;
  // Core clocks of the DVFS sweep, MHz: every ubench line runs at each (highest first).
  std::vector<double> f_core_levels_mhz;
  // P_const, W (board fans, regulators, ...: independent of clock and activity).
  double constant_power_w = 32.5;
  // Chip-wide structures powered while at least one SM is active, W at f_ref.
  double chip_static_w = 0.0;
  // SM-wide structures of an active SM, W at f_ref.
  double sm_static_w = 0.0;
  // One idle SM, W at f_ref.
  double idle_sm_w = 0.0;
  std::vector<VoltaUnit> units;
  std::vector<VoltaOp> ops;
  std::vector<VoltaCategory> categories;
  std::vector<VoltaBenchmark> benchmarks;
  // The benchmark whose SM and lane sweeps the truth's gating terms describe.
  std::string gating_benchmark;
  // Run-to-run variation of each kernel's power, relative standard deviation.
  double noise_rel = 0.0;
  // The sweep list, relative to the spec file ("" = none given).
  std::string ubench_cfg;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;

  const VoltaBenchmark* FindBenchmark(const std::string& name) const;
  double HalfWarpWeight(const std::string& category) const;  // 0 for ""
};

// Reads the spec, its GPU description ("gpu_description", relative to the spec) and its
// "campaign" object (as ReadCampaignSpec). `ubench_cfg_path` gets the sweep list's path
// resolved against the spec's folder ("" when the spec names none); `gpu_description_path`
// the description's. Throws InputError for unreadable or invalid specs.
VirtualVoltaSpec ReadVirtualVoltaSpec(const std::string& path, CampaignSpec* campaign,
                                      std::string* gpu_description_path,
                                      std::string* ubench_cfg_path);

// The truth's power split, W.
struct VoltaPower {
  double constant_w = 0.0;
  double static_w = 0.0;   // chip-wide + idle SMs + active SMs
  double dynamic_w = 0.0;
  double total_w() const { return constant_w + static_w + dynamic_w; }
};

// Noise-free power of `benchmark` on `active_sms` SMs with `lanes` lanes per warp at
// `f_core_mhz`. Throws OptionError for an unknown benchmark.
VoltaPower VoltaTruthPower(const VirtualVoltaSpec& spec, const std::string& benchmark,
                           int active_sms, int lanes, double f_core_mhz);

struct AccelWattchSweepSummary {
  int kernels = 0;      // kernel runs written (ubench lines x core clocks)
  int64_t samples = 0;  // power-log rows
};

// Runs every line of `ubench` at every core clock of the spec (highest clock first, lines in
// file order) and stages, under `out_dir`:
//   power_log.csv        nvidia-smi log (timestamp, index, power.draw [W], clocks, temperature)
//   windows.csv          kernel,start_us,end_us (one launch per kernel)
//   sweep.csv            kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,
//                        f_mem_mhz,iterations  (the description a harness keeps)
//   truth_power.csv      kernel,true_power_w,true_constant_w,true_static_w,true_dynamic_w
//   truth_accelwattch.json  the truth and what AccelWattch's methods should recover from it
// Kernel names are <benchmark>_sm<k>_l<y>_f<MHz>. Throws OptionError for an invalid spec or a
// ubench name the spec does not define.
AccelWattchSweepSummary WriteAccelWattchSweeps(const VirtualVoltaSpec& spec,
                                               const CampaignSpec& campaign,
                                               const std::vector<UbenchConfig>& ubench,
                                               unsigned seed, const std::string& out_dir,
                                               OutputSet* outputs);

// The files WriteAccelWattchSweeps stages, relative to out_dir.
const std::vector<std::string>& AccelWattchSweepFiles();

}  // namespace wattcal
