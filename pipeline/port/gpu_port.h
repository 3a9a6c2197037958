// Carrying a calibrated model to another GPU of the same architecture (Guerreiro et al.,
// TPDS'19 §4.6, Fig. 12, Eq. 11).
//
// Component coefficients gamma_i scale with how many of that component the two chips have:
//
//   gamma_i(target) = gamma_i(base) * count_i(target) / count_i(base)
//
// where the count follows the component's `scales_with` rule in the GPU descriptions
// (io/gpu_description.h): "units" = sm_count x units_per_sm (SP, INT, DP, SFU, CF),
// "sms" = sm_count (Shared: one shared memory per SM), "l2_banks" (L2; TPDS Table 3's
// L2-cache banks), "memory_bus" = memory_bus_width_bits (DRAM). GTX Titan X -> GTX 980:
// 24 -> 16 SMs, 12 -> 8 L2 banks, 384 -> 256 bits: every factor is 2/3, as in the paper.
//
// The static and component-independent terms alpha0, alpha1 of each domain are carried over
// in one of three ways:
//   idle-power  TPDS Eq. 11: every alpha x P_idle(target) / P_idle(base), the idle powers measured
//               at the default pair (TPDS: 75 W GTX Titan X, 65 W GTX 980);
//   components  the domain's own count ratio (core: sm_count; mem: memory_bus_width_bits),
//               the paper's first approach, which under-predicts (unmodelled parts such as
//               PCIe do not shrink with the chip);
//   none        unchanged.
//
// Voltages and frequency levels are the base model's (same architecture, same V-F curve);
// the target must have the same default pair. A base component the target does not have
// (e.g. CF for the GTX 980's 6-component files) is dropped and listed in the report; a target
// component the base model lacks is an error (train the base model on the target's component
// set: ProjectCorpus below).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/corpus.h"
#include "io/gpu_description.h"
#include "model/power_model.h"

namespace wattcal {

enum class ConstantScaling { kIdlePower, kComponentCounts, kNone };

const char* ConstantScalingName(ConstantScaling v);  // "idle-power" | "components" | "none"

struct GpuPortOptions {
  // How alpha0 and alpha1 of every domain are carried over (see above). The default needs no
  // measurement; idle-power, with the two measured idle powers, is the paper's better choice.
  ConstantScaling constant_scaling = ConstantScaling::kComponentCounts;
  // idle-power only: idle power of the base GPU at its default pair, W (> 0).
  double base_idle_w = 0.0;
  // idle-power only: idle power of the target GPU at its default pair, W (> 0).
  double target_idle_w = 0.0;

  // False, with a sentence naming the field, its value and the rule broken, when invalid.
  bool Check(std::string* error) const;
};

// How one coefficient was carried over.
struct PortedCoefficient {
  std::string name;         // component name (target's spelling), or "alpha0:core", ...
  std::string domain;       // "core" or "mem"
  std::string scales_with;  // "units", "sms", "l2_banks", "memory_bus", "idle_power", "none"
  double base_count = 1.0;  // count (or idle power, W) on the base GPU
  double target_count = 1.0;
  double factor = 1.0;      // target_count / base_count
  double base_value = 0.0;  // the base model's coefficient
  double target_value = 0.0;
};

struct GpuPortReport {
  std::string base_gpu;
  std::string target_gpu;
  ConstantScaling constant_scaling = ConstantScaling::kComponentCounts;
  double base_idle_w = 0.0;    // idle-power only
  double target_idle_w = 0.0;  // idle-power only
  // One per target component, in the target's order.
  std::vector<PortedCoefficient> components;
  // alpha0 and alpha1 of every domain: "alpha0:core", "alpha1:core", "alpha0:mem", ...
  std::vector<PortedCoefficient> constant_terms;
  // Base model components the target does not have (their power is dropped).
  std::vector<std::string> dropped_components;
  // Optional components of the descriptions that the base model lacks (its counters did not
  // have them): left out of the ported model too.
  std::vector<std::string> left_out_optional;
};

// The model for `target_gpu`. `base_gpu` describes the GPU `base` was calibrated on; its
// components may be finer than the model's (a model component "SP" takes its units from the
// description's "SP ADD"/"SP MUL"/"SP FMA" when they agree). Throws InputError naming the
// description file and field when a needed count is missing (l2_banks, memory_bus_width_bits)
// or the layouts cannot be matched, OptionError when `options` fails Check().
PowerModel PortModelToGpu(const PowerModel& base, const GpuDescription& base_gpu,
                          const GpuDescription& target_gpu, const GpuPortOptions& options,
                          GpuPortReport* report);

// The count of component `c` of `gpu` under its scales_with rule (default rule when empty),
// and the rule applied in `rule`. Throws InputError naming the description's field when the
// rule needs a count the description does not give.
double ComponentCount(const GpuDescription& gpu, const ComponentCounters& c, std::string* rule);

// The scales_with rule of `c`: its own, or the default (compute -> units; mem bandwidth ->
// memory_bus; core bandwidth named L2 -> l2_banks; other core bandwidth -> sms).
std::string ScalesWith(const ComponentCounters& c);

// Idle power measured at the corpus's default pair: the mean power of the rows there whose
// utilisations are all 0 (gpmTOOL's "idle" microbenchmark). Throws InputError naming the
// corpus when it has no power column or no such row.
double IdlePowerAtDefaultW(const Corpus& corpus);

// The corpus restricted to the components of `target` (same default pair and domains; the
// corpus's other components are dropped and listed in `dropped`), e.g. the GTX Titan X's
// 7-component training file without CF, to train a base model whose components all exist on
// the GTX 980. Throws InputError naming the corpus when a target component is missing or the
// defaults differ.
Corpus ProjectCorpus(const Corpus& corpus, const Layout& target, std::vector<std::string>* dropped);

// The report as JSON (keys in a fixed order).
void to_json(nlohmann::ordered_json& j, const GpuPortReport& report);
// One coefficient of the report: name, domain, scales_with, counts, factor, values.
void to_json(nlohmann::ordered_json& j, const PortedCoefficient& p);

// A few lines for the terminal.
std::string FormatGpuPortReport(const GpuPortReport& report);

}  // namespace wattcal
