/* A stand-in for libnvidia-ml.so.1 (the driver's NVML), so that the wattcal-capture binary runs
 * end to end on a machine without a GPU: the tests point WATTCAL_NVML_LIBRARY at it. Only the
 * functions microbench/nvml_loader.cc loads, with NVML's signatures and return codes.
 *
 * Its one GPU draws FAKE_NVML_IDLE_W (default 80 W) and, while the file named by
 * $FAKE_NVML_LOAD_FILE exists, FAKE_NVML_LOAD_W more (default 300 W). The energy counter (mJ)
 * integrates that power over the wall clock from nvmlInit, and never goes back from one process
 * to the next (as the driver's); the averaged power lags it.
 * Name and UUID come from $FAKE_NVML_NAME and $FAKE_NVML_UUID (defaults below), so a test can
 * play two different GPUs. $FAKE_NVML_FAIL_INIT makes nvmlInit_v2 fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;
enum { NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
       NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_DRIVER_NOT_LOADED = 9 };

static int g_device = 1;
static double g_last_s = 0.0;
static double g_energy_mj = 5.0e6;

static double Env(const char* name, double fallback) {
  const char* v = getenv(name);
  return v != NULL && v[0] != '\0' ? atof(v) : fallback;
}

static double NowS(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double PowerW(void) {
  const char* load = getenv("FAKE_NVML_LOAD_FILE");
  const double idle = Env("FAKE_NVML_IDLE_W", 80.0);
  return load != NULL && access(load, F_OK) == 0 ? idle + Env("FAKE_NVML_LOAD_W", 300.0) : idle;
}

static void Advance(void) {
  const double now = NowS();
  if (g_last_s > 0.0) g_energy_mj += PowerW() * (now - g_last_s) * 1e3;
  g_last_s = now;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (getenv("FAKE_NVML_FAIL_INIT") != NULL) return NVML_ERROR_DRIVER_NOT_LOADED;
  g_last_s = NowS();
  /* NVML's counter runs from the driver's load, across processes: start each process at the
   * highest energy the GPU can have used since an epoch (the most it draws x the time), which no
   * earlier process's counter can have passed. */
  g_energy_mj = (Env("FAKE_NVML_IDLE_W", 80.0) + Env("FAKE_NVML_LOAD_W", 300.0)) * (g_last_s - 1.7e9) * 1e3;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_device;
  return NVML_SUCCESS;
}
static const char* Uuid(void) {
  const char* u = getenv("FAKE_NVML_UUID");
  return u != NULL ? u : "GPU-00000000-1111-2222-3333-444444444444";
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (strcmp(uuid, Uuid()) != 0) return NVML_ERROR_NOT_FOUND;
  *device = &g_device;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  (void)d;
  Advance();
  *mw = (unsigned)(PowerW() * 1000.0 * 0.97);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long* mj) {
  (void)d;
  Advance();
  *mj = (unsigned long long)g_energy_mj;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, unsigned type, unsigned* mhz) {
  (void)d;
  *mhz = type == 1 ? 1980 : 2619;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, unsigned type, unsigned* mhz) {
  return nvmlDeviceGetClockInfo(d, type, mhz);
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, unsigned sensor, unsigned* c) {
  (void)d;
  (void)sensor;
  *c = 41;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* reasons) {
  (void)d;
  *reasons = PowerW() > Env("FAKE_NVML_IDLE_W", 80.0) ? 0x0 : 0x1;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned* mw) {
  (void)d;
  *mw = 700000;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned length) {
  (void)d;
  const char* n = getenv("FAKE_NVML_NAME");
  snprintf(name, length, "%s", n != NULL ? n : "Fake H100 for tests");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned length) {
  (void)d;
  snprintf(uuid, length, "%s", Uuid());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  snprintf(version, length, "%s", "580.00.fake");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int* major, int* minor) {
  (void)d;
  *major = 9;
  *minor = 0;
  return NVML_SUCCESS;
}
