#include "nvml_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "wall_clock.h"

namespace wattcal::capture {

namespace {

// The NVML types used here, as nvml.h declares them.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned NVML_CLOCK_SM = 1;
constexpr unsigned NVML_CLOCK_MEM = 2;
constexpr unsigned NVML_TEMPERATURE_GPU = 0;
constexpr unsigned NVML_FI_DEV_POWER_INSTANT = 186;
constexpr int NVML_VALUE_TYPE_DOUBLE = 0;
constexpr int NVML_VALUE_TYPE_UNSIGNED_INT = 1;
constexpr int NVML_VALUE_TYPE_UNSIGNED_LONG = 2;
constexpr int NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3;
constexpr int NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4;
constexpr int NVML_VALUE_TYPE_SIGNED_INT = 5;

union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*GetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetHandleByPciBusId)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetHandleByUUID)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetPowerUsage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*GetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*GetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*GetClockInfo)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*GetMaxClockInfo)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*GetTemperature)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*GetClocksEventReasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*GetEnforcedPowerLimit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*GetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*GetDriverVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*SetGpuLockedClocks)(nvmlDevice_t, unsigned, unsigned) = nullptr;
  nvmlReturn_t (*ResetGpuLockedClocks)(nvmlDevice_t) = nullptr;
  nvmlReturn_t (*GetCudaComputeCapability)(nvmlDevice_t, int*, int*) = nullptr;

  std::string Error(nvmlReturn_t r) const {
    return ErrorString != nullptr ? fmt::format("{} ({})", ErrorString(r), r) : fmt::format("NVML error {}", r);
  }
};

Nvml::~Nvml() {
  if (api_ != nullptr && device_ != nullptr && api_->Shutdown != nullptr) api_->Shutdown();
  delete api_;
  if (handle_ != nullptr) dlclose(handle_);
}

bool Nvml::Load(const std::string& library, std::string* error) {
  const std::string lib = library.empty() ? std::string("libnvidia-ml.so.1") : library;
  handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    *error = fmt::format("NVML is not available: cannot load {} ({}). It ships with the NVIDIA "
                         "driver; wattcal-capture needs a machine with an NVIDIA GPU and its driver. To "
                         "rehearse without one: WATTCAL_NVML_LIBRARY=build/tests/libfake_nvml.so (a stand-in "
                         "NVML), and WATTCAL_SIMULATED_GPU=1 for the suite (microbench/README.md, \"Rehearsal "
                         "without a GPU\")",
                         lib, why != nullptr ? why : "unknown reason");
    return false;
  }
  api_ = new Api();
  auto sym = [&](const char* name, auto** fn) {
    *reinterpret_cast<void**>(fn) = dlsym(handle_, name);
    return *fn != nullptr;
  };
  bool ok = sym("nvmlInit_v2", &api_->Init) && sym("nvmlShutdown", &api_->Shutdown) &&
            sym("nvmlDeviceGetHandleByIndex_v2", &api_->GetHandleByIndex) &&
            sym("nvmlDeviceGetPowerUsage", &api_->GetPowerUsage);
  sym("nvmlErrorString", &api_->ErrorString);
  if (!ok) {
    *error = fmt::format("{}: does not export nvmlInit_v2, nvmlShutdown, "
                         "nvmlDeviceGetHandleByIndex_v2 and nvmlDeviceGetPowerUsage (too old a driver?)",
                         lib);
    return false;
  }
  sym("nvmlDeviceGetHandleByPciBusId_v2", &api_->GetHandleByPciBusId);
  sym("nvmlDeviceGetHandleByUUID", &api_->GetHandleByUUID);
  sym("nvmlDeviceGetTotalEnergyConsumption", &api_->GetTotalEnergyConsumption);
  sym("nvmlDeviceGetFieldValues", &api_->GetFieldValues);
  sym("nvmlDeviceGetClockInfo", &api_->GetClockInfo);
  sym("nvmlDeviceGetMaxClockInfo", &api_->GetMaxClockInfo);
  sym("nvmlDeviceGetTemperature", &api_->GetTemperature);
  if (!sym("nvmlDeviceGetCurrentClocksEventReasons", &api_->GetClocksEventReasons)) {
    sym("nvmlDeviceGetCurrentClocksThrottleReasons", &api_->GetClocksEventReasons);
  }
  sym("nvmlDeviceGetEnforcedPowerLimit", &api_->GetEnforcedPowerLimit);
  sym("nvmlDeviceGetName", &api_->GetName);
  sym("nvmlDeviceGetUUID", &api_->GetUUID);
  sym("nvmlSystemGetDriverVersion", &api_->GetDriverVersion);
  sym("nvmlDeviceSetGpuLockedClocks", &api_->SetGpuLockedClocks);
  sym("nvmlDeviceResetGpuLockedClocks", &api_->ResetGpuLockedClocks);

  sym("nvmlDeviceGetCudaComputeCapability", &api_->GetCudaComputeCapability);

  const nvmlReturn_t r = api_->Init();
  if (r != NVML_SUCCESS) {
    *error = fmt::format("nvmlInit_v2 failed: {} (is the NVIDIA driver loaded?)", api_->Error(r));
    return false;
  }
  return true;
}

bool Nvml::OpenByIndex(unsigned index, const std::string& uuid, std::string* error, const std::string& library) {
  if (!Load(library, error)) return false;
  nvmlDevice_t dev = nullptr;
  nvmlReturn_t r = -1;
  if (!uuid.empty()) {
    if (api_->GetHandleByUUID == nullptr) {
      *error = "this NVML cannot open a GPU by UUID (nvmlDeviceGetHandleByUUID)";
      api_->Shutdown();
      return false;
    }
    r = api_->GetHandleByUUID(uuid.c_str(), &dev);
  } else {
    r = api_->GetHandleByIndex(index, &dev);
  }
  if (r != NVML_SUCCESS) {
    api_->Shutdown();
    *error = uuid.empty() ? fmt::format("NVML cannot open GPU {}: {}", index, api_->Error(r))
                          : fmt::format("NVML cannot open the GPU {}: {}", uuid, api_->Error(r));
    return false;
  }
  device_ = dev;
  return true;
}

bool Nvml::Open(const std::string& pci_bus_id, const std::string& uuid, std::string* error,
                const std::string& library) {
  if (!Load(library, error)) return false;
  nvmlReturn_t r = -1;
  // The CUDA device's NVML handle: by PCI bus id, else by UUID (NVML and CUDA number GPUs
  // differently under CUDA_VISIBLE_DEVICES), else index 0 when neither is known.
  nvmlDevice_t dev = nullptr;
  if (!pci_bus_id.empty() && api_->GetHandleByPciBusId != nullptr) {
    r = api_->GetHandleByPciBusId(pci_bus_id.c_str(), &dev);
  }
  if (r != NVML_SUCCESS && !uuid.empty() && api_->GetHandleByUUID != nullptr) {
    r = api_->GetHandleByUUID(uuid.c_str(), &dev);
  }
  if (r != NVML_SUCCESS && pci_bus_id.empty() && uuid.empty()) r = api_->GetHandleByIndex(0, &dev);
  if (r != NVML_SUCCESS) {
    api_->Shutdown();
    *error = fmt::format("NVML cannot open the GPU (PCI {}, {}): {}", pci_bus_id.empty() ? "?" : pci_bus_id,
                         uuid.empty() ? "no UUID" : uuid, api_->Error(r));
    return false;
  }
  device_ = dev;
  return true;
}

PowerSample Nvml::Read() {
  PowerSample s;
  const Api& a = *api_;
  unsigned u = 0;
  unsigned long long ull = 0;
  if (a.GetPowerUsage(device_, &u) == NVML_SUCCESS) s.power_mw = u;
  if (a.GetFieldValues != nullptr) {
    nvmlFieldValue_t f;
    std::memset(&f, 0, sizeof f);
    f.fieldId = NVML_FI_DEV_POWER_INSTANT;
    if (a.GetFieldValues(device_, 1, &f) == NVML_SUCCESS && f.nvmlReturn == NVML_SUCCESS) {
      switch (f.valueType) {
        case NVML_VALUE_TYPE_DOUBLE: s.power_instant_mw = static_cast<int64_t>(f.value.dVal); break;
        case NVML_VALUE_TYPE_UNSIGNED_INT: s.power_instant_mw = f.value.uiVal; break;
        case NVML_VALUE_TYPE_UNSIGNED_LONG: s.power_instant_mw = static_cast<int64_t>(f.value.ulVal); break;
        case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: s.power_instant_mw = static_cast<int64_t>(f.value.ullVal); break;
        case NVML_VALUE_TYPE_SIGNED_LONG_LONG: s.power_instant_mw = f.value.sllVal; break;
        case NVML_VALUE_TYPE_SIGNED_INT: s.power_instant_mw = f.value.siVal; break;
        default: break;
      }
    }
  }
  if (a.GetTotalEnergyConsumption != nullptr && a.GetTotalEnergyConsumption(device_, &ull) == NVML_SUCCESS) {
    s.energy_mj = static_cast<int64_t>(ull);
  }
  if (a.GetClockInfo != nullptr) {
    if (a.GetClockInfo(device_, NVML_CLOCK_SM, &u) == NVML_SUCCESS) s.sm_clock_mhz = u;
    if (a.GetClockInfo(device_, NVML_CLOCK_MEM, &u) == NVML_SUCCESS) s.mem_clock_mhz = u;
  }
  if (a.GetTemperature != nullptr && a.GetTemperature(device_, NVML_TEMPERATURE_GPU, &u) == NVML_SUCCESS) {
    s.temperature_c = u;
  }
  if (a.GetClocksEventReasons != nullptr && a.GetClocksEventReasons(device_, &ull) == NVML_SUCCESS) {
    s.has_clocks_event_reasons = true;
    s.clocks_event_reasons = ull;
  }
  if (a.GetEnforcedPowerLimit != nullptr && a.GetEnforcedPowerLimit(device_, &u) == NVML_SUCCESS) {
    s.power_limit_mw = u;
  }
  s.timestamp_us = NowUs();
  return s;
}

void Nvml::Describe(CaptureInfo* info) const {
  const Api& a = *api_;
  char buf[256] = {};
  unsigned u = 0;
  if (a.GetName != nullptr && a.GetName(device_, buf, sizeof buf) == NVML_SUCCESS) info->gpu_name = buf;
  std::memset(buf, 0, sizeof buf);
  if (a.GetUUID != nullptr && a.GetUUID(device_, buf, sizeof buf) == NVML_SUCCESS) info->gpu_uuid = buf;
  std::memset(buf, 0, sizeof buf);
  if (a.GetDriverVersion != nullptr && a.GetDriverVersion(buf, sizeof buf) == NVML_SUCCESS) info->driver_version = buf;
  if (a.GetEnforcedPowerLimit != nullptr && a.GetEnforcedPowerLimit(device_, &u) == NVML_SUCCESS) info->power_limit_mw = u;
  int major = 0, minor = 0;
  if (info->compute_capability == 0 && a.GetCudaComputeCapability != nullptr &&
      a.GetCudaComputeCapability(device_, &major, &minor) == NVML_SUCCESS) {
    info->compute_capability = major * 10 + minor;
  }
  if (a.GetMaxClockInfo != nullptr) {
    if (a.GetMaxClockInfo(device_, NVML_CLOCK_SM, &u) == NVML_SUCCESS) info->max_sm_clock_mhz = u;
    if (a.GetMaxClockInfo(device_, NVML_CLOCK_MEM, &u) == NVML_SUCCESS) info->max_mem_clock_mhz = u;
  }
  if (a.GetClockInfo != nullptr) {
    if (a.GetClockInfo(device_, NVML_CLOCK_SM, &u) == NVML_SUCCESS) info->idle_sm_clock_mhz = u;
    if (a.GetClockInfo(device_, NVML_CLOCK_MEM, &u) == NVML_SUCCESS) info->idle_mem_clock_mhz = u;
  }
}

bool Nvml::LockCoreClock(int mhz, std::string* error) {
  if (api_->SetGpuLockedClocks == nullptr) {
    *error = "this NVML has no nvmlDeviceSetGpuLockedClocks";
    return false;
  }
  const nvmlReturn_t r = api_->SetGpuLockedClocks(device_, static_cast<unsigned>(mhz), static_cast<unsigned>(mhz));
  if (r != NVML_SUCCESS) {
    *error = fmt::format("nvmlDeviceSetGpuLockedClocks({}, {}) failed: {} (locking clocks needs "
                         "root or an administrator's permission)",
                         mhz, mhz, api_->Error(r));
    return false;
  }
  return true;
}

bool Nvml::ResetCoreClock(std::string* error) {
  if (api_ == nullptr || device_ == nullptr || api_->ResetGpuLockedClocks == nullptr) {
    *error = "NVML is not open";
    return false;
  }
  const nvmlReturn_t r = api_->ResetGpuLockedClocks(device_);
  if (r != NVML_SUCCESS) {
    *error = fmt::format("nvmlDeviceResetGpuLockedClocks failed: {}", api_->Error(r));
    return false;
  }
  return true;
}

std::string NvmlLibraryFromEnvironment() {
  const char* lib = std::getenv("WATTCAL_NVML_LIBRARY");
  return lib != nullptr ? std::string(lib) : std::string();
}

}  // namespace wattcal::capture
