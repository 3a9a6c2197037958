// A GPU description: what TPDS Eqs. 7-8 need to turn counters into component utilisations,
// read from microbench_specs/gpus/<gpu>.json (every number there carries its source).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/corpus.h"

namespace wattcal {

// How a component's utilisation is computed from counters.
enum class UtilisationKind {
  // TPDS Eq. 7: U = thread_ops / (active_cycles_per_sm * sm_count * units_per_sm), where
  // thread_ops = the sum of the thread-level counters, or warp_size x the sum of the
  // warp-level counters.
  kComputeUnit,
  // TPDS Eq. 8: U = achieved bandwidth / peak bandwidth
  //   = (sum of byte counters + bytes_per_access x sum of access counters) / duration_s
  //     / peak_bytes_per_s.
  kBandwidth,
};

// One modelled component and the counters behind it.
struct ComponentCounters {
  // Component name as in the model layout ("SP ADD", "L2", "DRAM", ...).
  std::string component;
  // "core" or "mem": the domain whose V-F scales it.
  std::string domain = "core";
  UtilisationKind kind = UtilisationKind::kComputeUnit;
  // kComputeUnit: functional units of this kind per SM (TPDS Table 3).
  double units_per_sm = 0.0;
  // kBandwidth: peak bandwidth of the unit at the default clocks, bytes per second.
  double peak_bytes_per_s = 0.0;
  // kBandwidth: bytes moved per counted access (e.g. 32 threads x 4 bytes for a warp-wide
  // shared-memory instruction); used with `access_metrics`.
  double bytes_per_access = 0.0;
  // Nsight Compute metric names whose values are summed; a metric listed k times in one list
  // counts k times (a weight: the H100's FP32 lists FFMA twice to count FLOPs). Thread-level
  // counts (e.g. smsp__sass_thread_inst_executed_op_fadd_pred_on.sum) ...
  std::vector<std::string> thread_metrics;
  // ... warp-level counts, multiplied by the warp size (e.g. sm__inst_executed_pipe_xu.sum) ...
  std::vector<std::string> warp_metrics;
  // ... byte counts (e.g. dram__bytes.sum) ...
  std::vector<std::string> byte_metrics;
  // ... and access counts, multiplied by bytes_per_access.
  std::vector<std::string> access_metrics;
  // What this component's count on the chip is, when a model is carried to another GPU
  // (TPDS §4.6, pipeline/port/gpu_port.h): "units" (sm_count x units_per_sm), "sms"
  // (sm_count), "l2_banks" or "memory_bus" (memory_bus_width_bits). Empty = the default rule:
  // compute -> units; bandwidth in mem -> memory_bus; bandwidth in core named L2 -> l2_banks;
  // other core bandwidth (Shared) -> sms.
  std::string scales_with;
  // Its metrics may be absent from an export (counters collected before the component was
  // added, or a metric the GPU lacks): the component is then left out of the layout, with a
  // warning naming the metric, instead of the export being refused.
  bool optional = false;
};

struct GpuDescription {
  // File the description was read from ("" when built in code); for error messages.
  std::string path;
  std::string name;
  int sm_count = 0;
  int warp_size = 32;
  // Default (reference) clocks, MHz.
  double default_core_mhz = 0.0;
  double default_mem_mhz = 0.0;
  // Metric giving the active cycles per SM (TPDS Eq. 7's ACycles), e.g. sm__cycles_active.avg.
  std::string active_cycles_metric = "sm__cycles_active.avg";
  // Metric giving the kernel duration, e.g. gpu__time_duration.sum (unit from the file).
  std::string duration_metric = "gpu__time_duration.sum";
  // L2 cache banks (slices); 0 = not given. Used only to port a model (TPDS §4.6, Table 3).
  int l2_banks = 0;
  // Width of the memory bus in bits; 0 = not given. Used only to port a model.
  int memory_bus_width_bits = 0;
  // The modelled components, in model order (core components first, then mem).
  std::vector<ComponentCounters> components;
  // Where each number came from: field path -> citation.
  std::map<std::string, std::string> sources;

  // The model layout these components make (domains "core" and, if any, "mem").
  Layout ToLayout() const;
  // The same description without the components named in `left_out`.
  GpuDescription Without(const std::vector<std::string>& left_out) const;
  // Every metric the description reads (the time bases first, then each component's), once
  // each: what a profiler is asked for, and all an export needs to give utilisations.
  std::vector<std::string> Metrics() const;
  // Those an export must give for utilisations at all: the time bases and the metrics of the
  // components that are not optional (an optional one's absence leaves its component out).
  std::vector<std::string> RequiredMetrics() const;
  bool Check(std::string* error) const;
};

// Reads a description (throws InputError naming the file and the JSON field).
GpuDescription ReadGpuDescription(const std::string& path);

// GPU names compared: a product name as NVML and nvidia-smi give it ("NVIDIA H100 80GB HBM3") and a
// description's name ("h100-sxm"). Words: the lower-case runs of letters and digits of a name
// ("NVIDIA A100-PCIE-40GB" -> nvidia, a100, pcie, 40gb).
std::vector<std::string> GpuNameWords(const std::string& name);

// Whether two product names name the same GPU: the same words, the maker's ("nvidia") aside.
bool SameGpuProduct(const std::string& a, const std::string& b);

// Whether `description` describes the GPU named `product`: every word of the description's name is
// one of the product name's, except a board form factor (sxm, sxm2-5, pcie, nvl) when the product
// name states none (NVML names the H100 SXM "NVIDIA H100 80GB HBM3"). "h100-sxm" describes "NVIDIA
// H100 80GB HBM3" but not "NVIDIA H200" nor "NVIDIA H100 PCIe".
bool DescriptionDescribes(const GpuDescription& description, const std::string& product);

}  // namespace wattcal
