// A stand-in GPU for wattcal-capture on a machine without one (WATTCAL_SIMULATED_GPU=1): the
// whole suite runs through the same plan, run loop, sampler and writer, so that a GPU machine's
// prepared script (scripts/device_capture.sh) can be rehearsed end to end beforehand. Launches
// sleep (1 us per iteration, at most 2 ms); while they run, the file named by
// FAKE_NVML_LOAD_FILE exists (tests/fake_nvml.c then draws more power); each launch is appended
// to WATTCAL_SIMULATED_LAUNCH_LOG (kernel,blocks,threads,iters) when that is set (a stand-in
// ncu turns it into counters). Never used unless the variable is set.
#pragma once

#include <memory>
#include <string>

#include "benchmark_device.h"

namespace wattcal::capture {

// True when WATTCAL_SIMULATED_GPU is set to a non-empty value other than 0.
bool SimulatedGpuRequested();

// The simulated device: CC 9.0, 132 SMs, named "Simulated GPU (WATTCAL_SIMULATED_GPU)", with
// the UUID of $FAKE_NVML_UUID or the stand-in NVML library's default.
std::unique_ptr<BenchmarkDevice> OpenSimulatedDevice(CudaDeviceInfo* info);

}  // namespace wattcal::capture
