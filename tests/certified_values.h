// Values the tests expect that no test could derive visibly from its own inputs: means and
// weighted sums over a real file's rows, and confidence half-widths of a real sheet. Each is
// recomputed from the shared files by scripts/certify/hand_values.py (Python's csv and
// statistics modules, scipy's t quantile; no wattcal code), and
// CertifiedValues.HandValuesAreRecomputedIndependently checks every constant here against the
// script's output, within twice the rounding-error bound the script prints for it, so a constant
// cannot drift from the files it claims to come from.
#pragma once

namespace wattcal {
namespace certified {

struct Value {
  const char* name;  // as hand_values.py prints it
  double value;
};

// tests/counters_test.cc: Nsight Compute details pages in ../shared/samples/ncu, the mean over
// a kernel's launches in base units (7 launches of Kernel2, 6 of Kernel).
constexpr Value kAwsKernel2DurationS{"counters_aws_kernel2_duration_s", 3.1725714285714288e-06};
constexpr Value kAwsKernelDurationS{"counters_aws_kernel_duration_s", 8.2933333333333341e-06};
constexpr Value kAwsKernel2MemoryFrequencyHz{"counters_aws_kernel2_memory_frequency_hz",
                                             682148037.63428581};
constexpr Value kAwsKernel2SmFrequencyHz{"counters_aws_kernel2_sm_frequency_hz",
                                         1020229411.1228572};
constexpr Value kAwsKernel2AchievedOccupancyPct{"counters_aws_kernel2_achieved_occupancy_pct",
                                                23.297142857142855};
constexpr Value kLassenKernel2MemoryThroughputBps{"counters_lassen_kernel2_memory_throughput_bps",
                                                  7133606919.7657156};
constexpr Value kLassenKernelMemoryThroughputBps{"counters_lassen_kernel_memory_throughput_bps",
                                                 19413166196.253334};
constexpr Value kLassenKernel2DurationS{"counters_lassen_kernel2_duration_s",
                                        4.4434285714285716e-06};
// The H100 raw page (h100_capture/ubench_random/ncu_raw.csv), launches ID 25 and 26 weighted by
// gpu__time_duration.sum.
constexpr Value kH100Sweep12SmThroughputPct{"counters_h100_sweep_1_2_sm_throughput_pct",
                                            1.1301640861143667};
constexpr Value kH100Sweep12SmClockHz{"counters_h100_sweep_1_2_sm_clock_hz", 1979982830.0003524};

// tests/accelwattch_real_data_test.cc: 95% half-widths of the MAPE over the Volta sheets'
// kernels, in points: the paper's (normal quantile x population SD / sqrt(n)) and Student t's.
constexpr Value kAwVoltaHwNormal{"aw_ci_volta_hw_normal_population_sd_pct", 2.1822474315960214};
constexpr Value kAwVoltaHwStudentT{"aw_ci_volta_hw_student_t_pct", 2.3453552360531642};
constexpr Value kAwVoltaSassSimNormal{"aw_ci_volta_sass_sim_normal_population_sd_pct",
                                      3.1186895365677079};
constexpr Value kAwVoltaSassSimStudentT{"aw_ci_volta_sass_sim_student_t_pct", 3.342032337391645};
constexpr Value kAwVoltaHybridNormal{"aw_ci_volta_hybrid_normal_population_sd_pct",
                                     2.1533512796139891};
constexpr Value kAwVoltaHybridStudentT{"aw_ci_volta_hybrid_student_t_pct", 2.3142992978622869};
constexpr Value kAwVoltaPtxSimNormal{"aw_ci_volta_ptx_sim_normal_population_sd_pct",
                                     4.3675125381296587};
constexpr Value kAwVoltaPtxSimStudentT{"aw_ci_volta_ptx_sim_student_t_pct", 4.7630749214862158};

// Every value above, in hand_values.py's order.
constexpr Value kAll[] = {kAwsKernel2DurationS,
                          kAwsKernelDurationS,
                          kAwsKernel2MemoryFrequencyHz,
                          kAwsKernel2SmFrequencyHz,
                          kAwsKernel2AchievedOccupancyPct,
                          kLassenKernel2MemoryThroughputBps,
                          kLassenKernelMemoryThroughputBps,
                          kLassenKernel2DurationS,
                          kH100Sweep12SmThroughputPct,
                          kH100Sweep12SmClockHz,
                          kAwVoltaHwNormal,
                          kAwVoltaHwStudentT,
                          kAwVoltaSassSimNormal,
                          kAwVoltaSassSimStudentT,
                          kAwVoltaHybridNormal,
                          kAwVoltaHybridStudentT,
                          kAwVoltaPtxSimNormal,
                          kAwVoltaPtxSimStudentT};

}  // namespace certified
}  // namespace wattcal
