#include "simulated_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "suite_plan.h"

namespace wattcal::capture {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

class SimulatedDevice : public BenchmarkDevice {
 public:
  SimulatedDevice() : load_file_(Env("FAKE_NVML_LOAD_FILE")), launch_log_(Env("WATTCAL_SIMULATED_LAUNCH_LOG")) {}
  ~SimulatedDevice() override { Synchronize(); }

  double TimedLaunch(const Benchmark& b, int64_t iters) override {
    Launch(b, iters);
    Synchronize();
    return 0.001 * static_cast<double>(iters);
  }

  void Launch(const Benchmark& b, int64_t iters) override {
    if (!load_file_.empty()) {
      if (std::FILE* f = std::fopen(load_file_.c_str(), "w")) std::fclose(f);
    }
    if (!launch_log_.empty()) {
      if (std::FILE* f = std::fopen(launch_log_.c_str(), "a")) {
        std::fprintf(f, "%s,%lld,%d,%lld\n", KernelName(b.kernel), static_cast<long long>(b.blocks), b.threads,
                     static_cast<long long>(iters));
        std::fclose(f);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(iters, 2000)));
  }

  void Synchronize() override {
    if (!load_file_.empty()) std::remove(load_file_.c_str());
  }

 private:
  std::string load_file_;
  std::string launch_log_;
};

}  // namespace

bool SimulatedGpuRequested() {
  const std::string v = Env("WATTCAL_SIMULATED_GPU");
  return !v.empty() && v != "0";
}

std::unique_ptr<BenchmarkDevice> OpenSimulatedDevice(CudaDeviceInfo* info) {
  info->name = "Simulated GPU (WATTCAL_SIMULATED_GPU)";
  info->compute_capability = 90;
  info->sm_count = 132;
  const std::string uuid = Env("FAKE_NVML_UUID");
  info->uuid = uuid.empty() ? "GPU-00000000-1111-2222-3333-444444444444" : uuid;
  info->pci_bus_id = "";
  return std::make_unique<SimulatedDevice>();
}

}  // namespace wattcal::capture
