// Component utilisations from counters, TPDS 2019 Eqs. 7-8 (Guerreiro et al., TPDS §3.1), as
// documented on GpuDescription, their inverse for the virtual GPU, and the tidy activity
// table they go into.
//
//   compute (TPDS Eq. 7):   U = (sum of thread_metrics + warp_size * sum of warp_metrics)
//                          / (active_cycles_per_sm * sm_count * units_per_sm)
//   bandwidth (TPDS Eq. 8): U = (sum of byte_metrics + bytes_per_access * sum of access_metrics)
//                          / duration_s / peak_bytes_per_s
//
// active_cycles_per_sm is the value of gpu.active_cycles_metric and duration_s that of
// gpu.duration_metric (ReadCounters has converted it to seconds).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ingest/counters.h"
#include "io/gpu_description.h"

namespace wattcal {

// Per component utilisation (a fraction; above 1 when the counters exceed the peak), in
// description order. A metric the kernel lacks is an InputError naming the kernel's file
// and line, the metric and the component, unless `missing` is given: then the components
// that need it are NaN and `missing` lists each absent metric once, in description order.
// Negative counters, and a zero time base (active cycles or duration) under non-zero
// counts, are InputErrors too; zero counts over a zero time base give 0.
std::vector<double> ComputeUtilisations(const KernelCounters& k, const GpuDescription& gpu,
                                        std::vector<std::string>* missing = nullptr);

// The inverse, for the virtual GPU: counter values that make ComputeUtilisations return `u`
// for a kernel of `duration_s` seconds with `active_cycles_per_sm`, so that synth and ingest
// share one definition. Each component's operations (or bytes) are split evenly over its
// listed metrics (warp metrics get the share / warp_size, access metrics the share /
// bytes_per_access); values are not rounded to whole counts. The map also holds
// gpu.active_cycles_metric and gpu.duration_metric. Throws std::invalid_argument when `u`
// does not match the components or holds a negative or non-finite value, or when the time
// bases are not finite and > 0.
std::map<std::string, double> CountersForUtilisations(const std::vector<double>& u,
                                                      const GpuDescription& gpu, double duration_s,
                                                      double active_cycles_per_sm);

// wattcal's tidy activity table (io/corpus_io.h): an optional comment line
// "# wattcal-tidy default_f_core_mhz=... [default_f_mem_mhz=...]" with the description's
// default pair, then the header benchmark,core:NAME...,mem:NAME..., then one row per
// kernel, utilisations as %.6g. Names with commas or quotes are quoted. Throws
// std::invalid_argument for a row whose size does not match the components or that holds
// a non-finite utilisation (drop or fill kernels with missing metrics first).
std::string UtilisationsToTidyCsv(
    const std::vector<std::pair<std::string, std::vector<double>>>& kernel_utils,
    const GpuDescription& gpu);

}  // namespace wattcal
