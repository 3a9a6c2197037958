// The virtual GPU's AccelWattch sweeps (MICRO'21 §4): a Volta-like GPU with constant power,
// power-gated chip-wide, SM-wide and per-lane structures, half-warp/linear lane behaviour that
// drifts with the instruction mix, idle-SM power and per-operation energies, "run" over a
// microbenchmark list in AccelWattch's ubench.cfg format at every core frequency of a DVFS
// sweep, and written as a real harness would record it: an nvidia-smi power log and kernel
// launch windows (through the shared PowerSensorSimulator), plus a sweep description that
// tells each kernel's benchmark, instruction-mix category, active SMs, lanes and clock.
//
// The truth (every "_w" value is at the reference core clock f_ref = the GPU description's
// default_core_mhz; the supply voltage is taken proportional to the core clock, the
// AccelWattch §4.2 assumption V ~ k f, so static power scales with f / f_ref and voltage-scaled
// dynamic power with (f / f_ref)^3). For benchmark b on k >= 1 active SMs with y active lanes per
// warp:
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
//         = (H - 1) / 2 + (y - H - 1) / 2      for y >  H       (the basis of AccelWattch Eq. 5)
//
// where m_c is the half-warp weight of b's category: 1 gives AccelWattch Eq. 5's sawtooth exactly,
// 0 AccelWattch Eq. 4's straight line, values between the drift AccelWattch §4.5 describes as more
// units overlap. Between kernels the GPU idles at P_const (AccelWattch §4.3: with no SM active only
// constant power) for gap_s plus a launch jitter drawn uniformly in [0, sensor_refresh_ms).
// Every kernel's power gets a run-to-run factor 1 + noise_rel * N(0, 1).
//
// Hardware counters (counters.csv, an Nsight Compute raw page). The SM-wide dynamic power is
// explained as issued warp instructions: per active SM and cycle benchmark b issues
//   r_b = issue_w_per_sm / (issue_energy_pj * 1e-12 * f_ref)
// warp instructions, each costing issue_energy_pj at the reference voltage, so that
// k * issue_w_per_sm * s^3 = issue_energy_pj * (V / V_ref)^2 * r_b * f * k (the power above is
// unchanged; this only defines the counter). A kernel of length T (its window) reports exactly
//   gpu__time_duration.sum  = T;  sm__cycles_elapsed.avg = f * T;
//   issue_metric            = r_b * f * T * k                      (smsp__inst_executed.sum)
//   metric of op            = n_op * (y / W) * f * T * k           (thread-level lane-operations)
// rounded to whole counts. The counters count the y lanes that execute, while the truth's
// power follows y_eff: for a divergent kernel of a category with m_c > 0 the counters do not
// describe the half-warp sawtooth, a real model error that a counter-driven model (AccelWattch
// AccelWattch Eq. 11) keeps. With these counters AccelWattch Eq. 11 is exact for full warps: the
// dynamic power is sum_i E_i * (V / V_ref)^2 * a_i / T over the events a_i (E_i = energy_pj; (V /
// V_ref)^2 = 1 for DRAM), which is what the spec's energy-estimate file (AccelWattch's E-hat_i,
// AccelWattch Eq. 12) must be scaled to.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/gpu_description.h"
#include "io/ubench_cfg.h"
#include "synth/virtual_gpu.h"
#include "util/output.h"

namespace wattcal {

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
  // The counter (Nsight Compute metric) that counts its lane-operations; unique among the
  // ops and different from the spec's issue_metric. "" = not counted.
  std::string metric;
};

// An instruction-mix category of AccelWattch §4.5 and how strongly it follows the half-warp model.
struct VoltaCategory {
  std::string category;
  // m_c in [0, 1]: 1 = AccelWattch Eq. 5 sawtooth, 0 = AccelWattch Eq. 4 straight line.
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
  // Lanes per half-warp (H of AccelWattch Eq. 5).
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
  // Energy of one issued warp instruction at the reference voltage, pJ (0 = no issue
  // counter), and the counter of issued warp instructions.
  double issue_energy_pj = 0.0;
  std::string issue_metric;
  // The model's initial per-event energy estimates (AccelWattch's E-hat_i), as the spec
  // names it, relative to the spec file ("" = none), and that path resolved against the
  // spec's folder by ReadVirtualVoltaSpec.
  std::string energy_estimates;
  std::string energy_estimates_path;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;

  const VoltaBenchmark* FindBenchmark(const std::string& name) const;
  double HalfWarpWeight(const std::string& category) const;  // 0 for ""
  // r_b: warp instructions issued per cycle per active SM by `b` (0 without issue_energy_pj).
  double IssuedPerCycle(const VoltaBenchmark& b) const;
  // The true energy of one event of each counter, pJ at the reference voltage: every op's
  // metric -> energy_pj, issue_metric -> issue_energy_pj.
  std::map<std::string, double> TrueEnergyPerEventPj() const;
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
  double static_w = 0.0;  // chip-wide + idle SMs + active SMs
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

// The true scaling factors of an energy-estimate file (format "wattcal-accelwattch-energies",
// microbench_specs/virtual_volta_energies.json): per component, x = E / E-hat with E the true
// energy of its events (TrueEnergyPerEventPj). Throws InputError naming the file and the
// component when an event is not one of the spec's counters, when a component's events do
// not share one true energy, or when the file is malformed.
std::map<std::string, double> ExpectedScalingFactors(const VirtualVoltaSpec& spec,
                                                     const std::string& estimates_path);

// Runs every line of `ubench` at every core clock of the spec (highest clock first, lines in
// file order) and stages, under `out_dir`:
//   power_log.csv        nvidia-smi log (timestamp, index, power.draw [W], clocks, temperature)
//   windows.csv          kernel,start_us,end_us (one launch per kernel)
//   counters.csv         Nsight Compute raw page (`ncu --csv --page raw --print-units base`):
//                        one row per launch with the counters above (ops without a metric
//                        and a spec without issue counter contribute no column)
//   sweep.csv            kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,
//                        f_mem_mhz,iterations  (the description a harness keeps)
//   truth_power.csv      kernel,true_power_w,true_constant_w,true_static_w,true_dynamic_w
//   truth_accelwattch.json  the truth and what AccelWattch's methods should recover from it
// Kernel names are <benchmark>_sm<k>_l<y>_f<MHz>. Throws OptionError for an invalid spec or a
// ubench name the spec does not define, InputError for a bad energy-estimate file.
AccelWattchSweepSummary WriteAccelWattchSweeps(const VirtualVoltaSpec& spec,
                                               const CampaignSpec& campaign,
                                               const std::vector<UbenchConfig>& ubench,
                                               unsigned seed, const std::string& out_dir,
                                               OutputSet* outputs);

// The files WriteAccelWattchSweeps stages, relative to out_dir.
const std::vector<std::string>& AccelWattchSweepFiles();

}  // namespace wattcal
