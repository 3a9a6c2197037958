#include "simulated_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "suite_plan.h"

namespace wattcal::capture {

namespace {

constexpr int kSimulatedSms = 132;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// The busy share (0..1) of each pipe a kernel drives, by GPM metric id, before the grid's scaling.
std::map<int, double> KernelPipes(const Benchmark& b) {
  constexpr int kInt = 4, kHmma = 7, kDmma = 8, kImma = 9, kDram = 10, kFp64 = 11, kFp32 = 12, kFp16 = 13;
  switch (b.kernel) {
    case KernelKind::kSleep: return {};
    case KernelKind::kIntAdd: case KernelKind::kIntXorshift: case KernelKind::kIntMad: return {{kInt, 0.9}};
    case KernelKind::kIntMul: return {{kInt, 0.3}, {kFp32, 0.5}};  // IMAD on the FMA pipe (GH100)
    case KernelKind::kFp32Fma: return {{kFp32, 0.92}, {kInt, 0.05}};
    case KernelKind::kFp32Add: case KernelKind::kFp32Mul: return {{kFp32, 0.6}, {kInt, 0.05}};
    case KernelKind::kFp64Fma: case KernelKind::kFp64Add: case KernelKind::kFp64Mul: return {{kFp64, 0.9}};
    case KernelKind::kFp16Hfma2: case KernelKind::kFp16Hfma2Fma: return {{kFp16, 0.85}};
    case KernelKind::kTensor: case KernelKind::kTensorBf16: case KernelKind::kTensorTf32:
    case KernelKind::kWgmmaFp16: case KernelKind::kWgmmaBf16: case KernelKind::kWgmmaFp8:
      return {{kHmma, 0.88}, {kInt, 0.05}};
    case KernelKind::kTensorInt8: return {{kImma, 0.85}, {kInt, 0.05}};
    case KernelKind::kTensorFp64: return {{kDmma, 0.8}};
    case KernelKind::kDramLd: case KernelKind::kDramWrite: case KernelKind::kDramCopy:
      return {{kDram, 0.85}, {kInt, 0.1}};
    case KernelKind::kMix: {
      const MixCounts& m = b.mix;
      const double total = std::max(1, m.fma + m.int_ops + m.fp64 + m.mma + m.dram * 8 + m.l2 + m.shared + m.sfu);
      return {{kFp32, 0.9 * m.fma / total},  {kInt, 0.9 * m.int_ops / total}, {kFp64, 0.9 * m.fp64 / total},
              {kHmma, 0.9 * m.mma / total}, {kDram, std::min(0.9, 0.9 * 8 * m.dram / total)}};
    }
    default: return {{kInt, 0.2}};  // SFU, conversions, shared, L1, L2, atomics
  }
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
      // Written aside and renamed into place: the stand-in NVML reads it from the sampler thread
      // meanwhile, and must never see it half written.
      const std::string partial = load_file_ + ".partial";
      if (std::FILE* f = std::fopen(partial.c_str(), "w")) {
        for (const auto& [id, pct] : SimulatedActivity(b, kSimulatedSms)) std::fprintf(f, "%d %.3f\n", id, pct);
        std::fclose(f);
        std::rename(partial.c_str(), load_file_.c_str());
      }
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

std::vector<std::pair<int, double>> SimulatedActivity(const Benchmark& b, int sm_count) {
  const double sms = std::max(1, sm_count);
  const double grid_share = std::min(1.0, static_cast<double>(b.blocks) / sms);
  // Warps on each busy SM: one block each when the plan keeps one block per SM.
  const double warps_per_sm = b.one_block_per_sm
                                  ? b.threads / 32.0
                                  : static_cast<double>(b.blocks) * b.threads / 32.0 / sms;
  const double fill = grid_share * std::min(1.0, warps_per_sm / 8.0);
  std::vector<std::pair<int, double>> out = {{1, 100.0 * grid_share}, {2, 100.0 * grid_share},
                                             {3, 100.0 * std::min(1.0, warps_per_sm / 64.0)}};
  double tensor = 0.0;
  for (const auto& [id, share] : KernelPipes(b)) {
    out.emplace_back(id, 100.0 * share * fill);
    if (id == 7 || id == 8 || id == 9) tensor += 100.0 * share * fill;
  }
  out.emplace_back(5, std::min(100.0, tensor));
  std::sort(out.begin(), out.end());
  return out;
}

bool SimulatedGpuRequested() {
  const std::string v = Env("WATTCAL_SIMULATED_GPU");
  return !v.empty() && v != "0";
}

std::unique_ptr<BenchmarkDevice> OpenSimulatedDevice(CudaDeviceInfo* info) {
  info->name = "Simulated GPU (WATTCAL_SIMULATED_GPU)";
  info->compute_capability = 90;
  info->sm_count = kSimulatedSms;
  const std::string uuid = Env("FAKE_NVML_UUID");
  info->uuid = uuid.empty() ? "GPU-00000000-1111-2222-3333-444444444444" : uuid;
  info->pci_bus_id = "";
  return std::make_unique<SimulatedDevice>();
}

}  // namespace wattcal::capture
