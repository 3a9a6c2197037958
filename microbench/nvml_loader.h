// NVML, loaded at run time (dlopen("libnvidia-ml.so.1")): no nvml.h is needed to build, and a
// machine without the driver gets a clear error rather than a build or link failure
// (FORMATS.md §9). Only the few functions wattcal-capture calls are declared, with the
// signatures of NVIDIA's NVML API reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capture_writer.h"
#include "runner.h"

namespace wattcal::capture {

class Nvml : public PowerMeter {
 public:
  Nvml() = default;
  ~Nvml() override;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Loads the library (`library` = "" -> libnvidia-ml.so.1), initialises NVML and opens the
  // device with this PCI bus id (as cudaDeviceGetPCIBusId gives it), else this UUID (both ""
  // = index 0). False with `error` set when any step fails.
  bool Open(const std::string& pci_bus_id, const std::string& uuid, std::string* error,
            const std::string& library = "");
  // The same, opening NVML's device `index` (nvmlDeviceGetHandleByIndex_v2), or the device with
  // UUID `uuid` when it is not empty.
  bool OpenByIndex(unsigned index, const std::string& uuid, std::string* error, const std::string& library = "");
  bool is_open() const { return device_ != nullptr; }

  // One reading of power, energy, clocks, temperature, event reasons and limit, stamped with
  // the system clock (Unix epoch us). Values NVML refuses are left "not given".
  PowerSample Read() override;

  // Fills name, uuid, driver, compute capability, power limit and maximum clocks.
  void Describe(CaptureInfo* info) const;

  // nvmlDeviceSetGpuLockedClocks(mhz, mhz) / nvmlDeviceResetGpuLockedClocks. False with
  // `error` set (e.g. "Insufficient Permissions") when NVML refuses.
  bool LockCoreClock(int mhz, std::string* error) override;
  bool ResetCoreClock(std::string* error) override;

  // NVML GPM (nvml.h, group "GPM", Hopper and later): checks nvmlGpmQueryDeviceSupport, allocates
  // two sample buffers and takes the first sample. False with `error` set (one sentence) when the
  // library lacks the GPM entry points or the GPU has no GPM.
  bool StartFieldSampling(const std::vector<int>& gpm_metric_ids, std::string* error) override;
  // Takes a new sample and returns the metrics between the previous sample and it
  // (nvmlGpmMetricsGet on the two), NaN where NVML refused a metric.
  FieldSample ReadFields() override;

 private:
  struct Api;
  struct Gpm;
  void* handle_ = nullptr;  // dlopen handle
  Api* api_ = nullptr;
  Gpm* gpm_ = nullptr;
  void* device_ = nullptr;  // nvmlDevice_t
  // Loads the library and its symbols and initialises NVML.
  bool Load(const std::string& library, std::string* error);
};

// The NVML library to load: $WATTCAL_NVML_LIBRARY when set, else "" (libnvidia-ml.so.1).
std::string NvmlLibraryFromEnvironment();

}  // namespace wattcal::capture
