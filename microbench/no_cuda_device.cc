// wattcal-capture built without the CUDA toolkit: the suite's kernels are absent, so the suite
// refuses to run with a clear error; --app (which needs only the driver's NVML) works.
#include "benchmark_device.h"

namespace wattcal::capture {

std::unique_ptr<BenchmarkDevice> OpenCudaDevice(int /*index*/, DataMode /*data*/, uint64_t /*seed*/,
                                                CudaDeviceInfo* /*info*/, std::string* error) {
  *error = "this wattcal-capture was built without the CUDA toolkit, so it has no suite kernels: rebuild "
           "with nvcc found by CMake (the suite), or record your own program with --app NAME -- CMD";
  return nullptr;
}

}  // namespace wattcal::capture
