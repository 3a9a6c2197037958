/* A stand-in for libnvidia-ml.so.1 (the driver's NVML), so that the wattcal-capture binary runs
 * end to end on a machine without a GPU: the tests point WATTCAL_NVML_LIBRARY at it. Only the
 * functions microbench/nvml_loader.cc loads, with NVML's signatures and return codes.
 *
 * Its one GPU draws FAKE_NVML_IDLE_W (default 80 W) and, while the file named by
 * $FAKE_NVML_LOAD_FILE exists, FAKE_NVML_LOAD_W more (default 300 W). The energy counter (mJ)
 * integrates that power over the wall clock from nvmlInit, and never goes back from one process
 * to the next (as the driver's); the averaged power lags it.
 * Name and UUID come from $FAKE_NVML_NAME and $FAKE_NVML_UUID (defaults below), so a test can
 * play two different GPUs; its SM and memory clocks from $FAKE_NVML_SM_MHZ and $FAKE_NVML_MEM_MHZ
 * (an H100 SXM's: 1980 and 2619 MHz). $FAKE_NVML_FAIL_INIT makes nvmlInit_v2 fail.
 *
 * Activity and GPM. The load file may hold the running work's activity, one `ID PERCENT` line per
 * NVML GPM metric (nvml.h nvmlGpmMetricId_t: 2 SM_UTIL, 4 INTEGER_UTIL, 7 HMMA, 9 IMMA, 10
 * DRAM_BW_UTIL, 11 FP64, 12 FP32, 13 FP16, ...), as microbench/simulated_device.cc writes it or a
 * test's stand-in application. Then the load draws sum(weight x percent / 100) instead of
 * FAKE_NVML_LOAD_W: the true per-component power at full use, W, from $FAKE_NVML_GPM_W
 * ("2:60,12:120,...") or kDefaultWeight below. The GPM functions (nvmlGpmSampleGet,
 * nvmlGpmMetricsGet, with nvml.h's structures) report each metric's time average between two
 * samples, plus uniform noise of +-$FAKE_NVML_GPM_NOISE (percentage points, default 0.3) seeded by
 * $FAKE_NVML_SEED (default 1). $FAKE_NVML_NO_GPM: nvmlGpmQueryDeviceSupport says the GPU has none;
 * built with FAKE_NVML_WITHOUT_GPM, the library has no GPM functions at all (a driver before 520). */
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

#define GPM_IDS 128
/* Percent of each GPM metric now (from the load file), and the integral of each over time. */
static double g_activity_pct[GPM_IDS];
static double g_activity_pct_s[GPM_IDS];

/* W at full use per GPM metric id: SM_UTIL 60, INTEGER 40, HMMA 250, IMMA 200, DRAM_BW 110,
 * FP64 150, FP32 120, FP16 90; the others draw nothing. */
static double DefaultWeight(int id) {
  switch (id) {
    case 2: return 60.0;
    case 4: return 40.0;
    case 7: return 250.0;
    case 9: return 200.0;
    case 10: return 110.0;
    case 11: return 150.0;
    case 12: return 120.0;
    case 13: return 90.0;
    default: return 0.0;
  }
}

static double Weight(int id) {
  const char* w = getenv("FAKE_NVML_GPM_W");
  if (w == NULL || w[0] == '\0') return DefaultWeight(id);
  while (*w != '\0') {
    char* end = NULL;
    const long key = strtol(w, &end, 10);
    if (end == w || *end != ':') return 0.0;
    const double value = strtod(end + 1, &end);
    if (key == id) return value;
    w = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return 0.0;
  }
  return 0.0;
}

/* Reads the load file into g_activity_pct; returns 0 when absent, 1 when present without
 * activity lines, 2 with them. */
static int ReadActivity(void) {
  memset(g_activity_pct, 0, sizeof g_activity_pct);
  const char* load = getenv("FAKE_NVML_LOAD_FILE");
  if (load == NULL) return 0;
  FILE* f = fopen(load, "r");
  if (f == NULL) return 0;
  int id = 0, any = 0;
  double pct = 0.0;
  while (fscanf(f, "%d %lf", &id, &pct) == 2) {
    if (id > 0 && id < GPM_IDS) g_activity_pct[id] = pct, any = 1;
  }
  fclose(f);
  return any ? 2 : 1;
}

static double PowerW(void) {
  const double idle = Env("FAKE_NVML_IDLE_W", 80.0);
  const int state = ReadActivity();
  if (state == 0) return idle;
  if (state == 1) return idle + Env("FAKE_NVML_LOAD_W", 300.0);
  double p = idle;
  for (int id = 1; id < GPM_IDS; ++id) p += Weight(id) * g_activity_pct[id] / 100.0;
  return p;
}

static void Advance(void) {
  const double now = NowS();
  const double p = PowerW(); /* also reads the activity */
  if (g_last_s > 0.0) {
    g_energy_mj += p * (now - g_last_s) * 1e3;
    for (int id = 1; id < GPM_IDS; ++id) g_activity_pct_s[id] += g_activity_pct[id] * (now - g_last_s);
  }
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
  *mhz = (unsigned)(type == 1 ? Env("FAKE_NVML_SM_MHZ", 1980.0) : Env("FAKE_NVML_MEM_MHZ", 2619.0));
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

#ifndef FAKE_NVML_WITHOUT_GPM
/* NVML GPM, with nvml.h's structures (NVIDIA/go-nvml gen/nvml/nvml.h, group "GPM"). */
typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;
struct nvmlGpmSample_st {
  double time_s;
  double pct_s[GPM_IDS];
  int taken;
};
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[333];
} nvmlGpmMetricsGet_t;
typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

static unsigned long long g_noise_state = 0;

/* Uniform in [-1, 1), from a 64-bit LCG seeded by $FAKE_NVML_SEED. */
static double Noise(void) {
  if (g_noise_state == 0) g_noise_state = 0x9E3779B97F4A7C15ULL ^ (unsigned long long)Env("FAKE_NVML_SEED", 1.0);
  g_noise_state = g_noise_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(g_noise_state >> 11) / 4503599627370496.0 - 1.0;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* support) {
  (void)d;
  if (support == NULL || support->version != 1) return NVML_ERROR_INVALID_ARGUMENT;
  support->isSupportedDevice = getenv("FAKE_NVML_NO_GPM") != NULL ? 0 : 1;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  *sample = (nvmlGpmSample_t)calloc(1, sizeof(struct nvmlGpmSample_st));
  return *sample != NULL ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  free(sample);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t sample) {
  (void)d;
  if (getenv("FAKE_NVML_NO_GPM") != NULL) return NVML_ERROR_NOT_SUPPORTED;
  Advance();
  sample->time_s = g_last_s;
  memcpy(sample->pct_s, g_activity_pct_s, sizeof sample->pct_s);
  sample->taken = 1;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  if (m == NULL || m->version != 1 || m->numMetrics > 333 || m->sample1 == NULL || m->sample2 == NULL ||
      !m->sample1->taken || !m->sample2->taken) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const double dt = m->sample2->time_s - m->sample1->time_s;
  const double noise = Env("FAKE_NVML_GPM_NOISE", 0.3);
  for (unsigned k = 0; k < m->numMetrics; ++k) {
    nvmlGpmMetric_t* x = &m->metrics[k];
    const unsigned id = x->metricId;
    if (id == 0 || id >= GPM_IDS || !(dt > 0.0)) {
      x->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    double v = (m->sample2->pct_s[id] - m->sample1->pct_s[id]) / dt + noise * Noise();
    const int is_rate = id == 20 || id == 21 || id >= 60;
    if (v < 0.0) v = 0.0;
    if (!is_rate && v > 100.0) v = 100.0;
    x->value = v;
    x->nvmlReturn = NVML_SUCCESS;
  }
  return NVML_SUCCESS;
}
#endif
