// A stand-in GPU for wattcal-capture on a machine without one (WATTCAL_SIMULATED_GPU=1): the
// whole suite runs through the same plan, run loop, sampler and writer, so that a GPU machine's
// prepared script (scripts/device_capture.sh) can be rehearsed end to end beforehand. Launches
// sleep (1 us per iteration, at most 2 ms); while they run, the file named by
// FAKE_NVML_LOAD_FILE exists and holds the launch's activity (SimulatedActivity: `ID PERCENT`
// lines, NVML GPM metric ids), from which tests/fake_nvml.c draws power and reports GPM
// metrics (--fields gpm); each launch is appended
// to WATTCAL_SIMULATED_LAUNCH_LOG (kernel,blocks,threads,iters) when that is set (a stand-in
// ncu turns it into counters). Never used unless the variable is set.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "benchmark_device.h"

namespace wattcal::capture {

// What a benchmark keeps busy on the simulated GPU: (NVML GPM metric id, percent) pairs (nvml.h
// nvmlGpmMetricId_t: 1 GRAPHICS_UTIL, 2 SM_UTIL, 3 SM_OCCUPANCY, 4 INTEGER_UTIL, 5 ANY_TENSOR_UTIL,
// 7 HMMA, 8 DMMA, 9 IMMA, 10 DRAM_BW_UTIL, 11 FP64, 12 FP32, 13 FP16), in id order. The share of
// SMs its grid fills scales SM_UTIL; each pipe's share is its kernel's (a unit kernel keeps its
// pipe ~90% busy, a mix in proportion to its instruction counts) times that and the warps an SM
// holds (a pipe needs ~8 warps per SM to fill). Made up for the tests, not measured.
std::vector<std::pair<int, double>> SimulatedActivity(const Benchmark& b, int sm_count);

// True when WATTCAL_SIMULATED_GPU is set to a non-empty value other than 0.
bool SimulatedGpuRequested();

// The simulated device: CC 9.0, 132 SMs, named "Simulated GPU (WATTCAL_SIMULATED_GPU)", with
// the UUID of $FAKE_NVML_UUID or the stand-in NVML library's default.
std::unique_ptr<BenchmarkDevice> OpenSimulatedDevice(CudaDeviceInfo* info);

}  // namespace wattcal::capture
