#include "nvml_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

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

// NVML GPM (GPU Performance Monitoring), as nvml.h declares it: NVIDIA/go-nvml gen/nvml/nvml.h
// (commit 2f9e261f, 2026-07-01; the header of the CUDA toolkit 12.x/13.x), group "GPM",
// nvmlGpmStructs: nvmlGpmSample_t is an opaque pointer; nvmlGpmMetric_t and nvmlGpmMetricsGet_t
// below have its members in its order. NVML reads numMetrics entries of metrics[], so the array's
// size (NVML_GPM_METRIC_MAX, 98 in CUDA 12.0's header, 333 in this one) only has to be at least
// the number asked.
using nvmlGpmSample_t = void*;
constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;
constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;
constexpr int NVML_GPM_METRIC_MAX = 333;

struct nvmlGpmMetric_t {
  unsigned int metricId;    // IN: NVML_GPM_METRIC_? (nvmlGpmMetricId_t)
  nvmlReturn_t nvmlReturn;  // OUT: status of this metric; value valid only when 0
  double value;             // OUT
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // OUT: may be NULL
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;     // IN: NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // IN: entries of metrics[] to fill
  nvmlGpmSample_t sample1;  // IN: the earlier sample
  nvmlGpmSample_t sample2;  // IN: the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};

struct nvmlGpmSupport_t {
  unsigned int version;            // IN: NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;  // OUT
};

}  // namespace

// The GPM entry points (all absent from drivers before 520) and the two samples the metrics are
// computed between: `previous` was taken at the last tick, `current` is taken now, then they swap.
struct Nvml::Gpm {
  nvmlReturn_t (*QueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
  nvmlReturn_t (*SampleAlloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*SampleFree)(nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*SampleGet)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*MetricsGet)(nvmlGpmMetricsGet_t*) = nullptr;
  nvmlGpmSample_t previous = nullptr;
  nvmlGpmSample_t current = nullptr;
  std::vector<int> ids;
  nvmlGpmMetricsGet_t request{};  // large (333 entries): kept here, not on the sampler's stack
};

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
  if (gpm_ != nullptr) {
    if (gpm_->SampleFree != nullptr) {
      if (gpm_->previous != nullptr) gpm_->SampleFree(gpm_->previous);
      if (gpm_->current != nullptr) gpm_->SampleFree(gpm_->current);
    }
    delete gpm_;
  }
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
  // The sample's time is its energy reading's (the midpoint of that one call), since windows take
  // their energy from it; stamped after the clock, temperature and limit queries below, it would
  // carry their latency, and any delay of the thread between them, into every energy difference.
  const int64_t before_us = NowUs();
  if (a.GetTotalEnergyConsumption != nullptr && a.GetTotalEnergyConsumption(device_, &ull) == NVML_SUCCESS) {
    s.energy_mj = static_cast<int64_t>(ull);
  }
  s.timestamp_us = before_us + (NowUs() - before_us) / 2;
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

bool Nvml::StartFieldSampling(const std::vector<int>& gpm_metric_ids, std::string* error) {
  if (handle_ == nullptr || device_ == nullptr) {
    *error = "NVML is not open";
    return false;
  }
  if (gpm_metric_ids.empty() || gpm_metric_ids.size() > static_cast<size_t>(NVML_GPM_METRIC_MAX)) {
    *error = fmt::format("--fields: {} GPM metrics asked for (1 to {})", gpm_metric_ids.size(), NVML_GPM_METRIC_MAX);
    return false;
  }
  auto gpm = std::make_unique<Gpm>();
  auto sym = [&](const char* name, auto** fn) {
    *reinterpret_cast<void**>(fn) = dlsym(handle_, name);
    return *fn != nullptr;
  };
  if (!(sym("nvmlGpmQueryDeviceSupport", &gpm->QueryDeviceSupport) && sym("nvmlGpmSampleAlloc", &gpm->SampleAlloc) &&
        sym("nvmlGpmSampleFree", &gpm->SampleFree) && sym("nvmlGpmSampleGet", &gpm->SampleGet) &&
        sym("nvmlGpmMetricsGet", &gpm->MetricsGet))) {
    *error = "--fields gpm: this NVML has no GPM functions (nvmlGpmQueryDeviceSupport, nvmlGpmSampleGet, "
             "nvmlGpmMetricsGet: driver 520 or later is needed); record power only, or collect the DCGM "
             "fields with dcgmi dmon (docs/fields.md)";
    return false;
  }
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t r = gpm->QueryDeviceSupport(device_, &support);
  if (r != NVML_SUCCESS || support.isSupportedDevice == 0) {
    *error = fmt::format("--fields gpm: this GPU has no GPM metrics (nvmlGpmQueryDeviceSupport: {}; GPM needs "
                         "Hopper or later); record power only, or collect the DCGM fields with dcgmi dmon "
                         "(docs/fields.md)",
                         r != NVML_SUCCESS ? api_->Error(r) : std::string("not supported"));
    return false;
  }
  r = gpm->SampleAlloc(&gpm->previous);
  if (r == NVML_SUCCESS) r = gpm->SampleAlloc(&gpm->current);
  if (r == NVML_SUCCESS) r = gpm->SampleGet(device_, gpm->previous);
  if (r != NVML_SUCCESS) {
    *error = fmt::format("--fields gpm: the first GPM sample failed: {}", api_->Error(r));
    if (gpm->previous != nullptr) gpm->SampleFree(gpm->previous);
    if (gpm->current != nullptr) gpm->SampleFree(gpm->current);
    return false;
  }
  gpm->ids = gpm_metric_ids;
  gpm_ = gpm.release();
  return true;
}

FieldSample Nvml::ReadFields() {
  FieldSample s;
  s.values.assign(gpm_ != nullptr ? gpm_->ids.size() : 0, std::numeric_limits<double>::quiet_NaN());
  if (gpm_ == nullptr) return s;
  Gpm& g = *gpm_;
  const nvmlReturn_t got = g.SampleGet(device_, g.current);
  s.timestamp_us = NowUs();
  if (got != NVML_SUCCESS) return s;  // no sample: this interval's cells stay empty
  // nvmlGpmMetricsGet: the metrics between sample1 (earlier) and sample2 (later).
  g.request.version = NVML_GPM_METRICS_GET_VERSION;
  g.request.numMetrics = static_cast<unsigned>(g.ids.size());
  g.request.sample1 = g.previous;
  g.request.sample2 = g.current;
  for (size_t k = 0; k < g.ids.size(); ++k) {
    g.request.metrics[k] = nvmlGpmMetric_t{};
    g.request.metrics[k].metricId = static_cast<unsigned>(g.ids[k]);
  }
  if (g.MetricsGet(&g.request) == NVML_SUCCESS) {
    for (size_t k = 0; k < g.ids.size(); ++k) {
      if (g.request.metrics[k].nvmlReturn == NVML_SUCCESS) s.values[k] = g.request.metrics[k].value;
    }
  }
  std::swap(g.previous, g.current);
  return s;
}

std::string NvmlLibraryFromEnvironment() {
  const char* lib = std::getenv("WATTCAL_NVML_LIBRARY");
  return lib != nullptr ? std::string(lib) : std::string();
}

}  // namespace wattcal::capture
