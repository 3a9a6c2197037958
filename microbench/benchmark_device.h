// What the run loop (runner.h) needs from a GPU, in plain C++ (no CUDA types): kernels.cu
// implements it with CUDA, the CPU tests with a simulation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "suite_plan.h"

namespace wattcal::capture {

// The GPU side (kernels.cu implements it with CUDA).
class BenchmarkDevice {
 public:
  virtual ~BenchmarkDevice() = default;
  // Launches `b` once with `iters` iterations, waits, and returns its duration in ms.
  virtual double TimedLaunch(const Benchmark& b, int64_t iters) = 0;
  // Enqueues one launch; returns once at most one earlier launch is still running, so that
  // launches run back to back and the host clock follows the GPU within one launch.
  virtual void Launch(const Benchmark& b, int64_t iters) = 0;
  // Waits for every launch.
  virtual void Synchronize() = 0;
  // Why `b` cannot run here although the GPU's compute capability allows it ("" when it can):
  // its kernel has no code in what was loaded for this GPU (PlanForGpu, suite_plan.h).
  virtual std::string Unavailable(const Benchmark& b) const {
    (void)b;
    return "";
  }
};

// Data the kernels start from: random words (seeded) or zeros (--data zeros).
enum class DataMode { kRandom, kZeros };

struct CudaDeviceInfo {
  std::string name;
  std::string pci_bus_id;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML spells it
  int compute_capability = 0;  // major * 10 + minor
  int sm_count = 0;
  int driver_version = 0;
  int runtime_version = 0;
};

// Opens CUDA device `index`, allocates and fills the buffers. nullptr with `error` set when
// there is no GPU (or no CUDA driver). Defined in kernels.cu; only wattcal-capture links it.
std::unique_ptr<BenchmarkDevice> OpenCudaDevice(int index, DataMode data, uint64_t seed,
                                                CudaDeviceInfo* info, std::string* error);

}  // namespace wattcal::capture
