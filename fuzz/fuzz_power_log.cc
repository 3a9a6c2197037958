// Power logs: nvidia-smi CSV in its shapes, raw NVML samples, dcgmi dmon (ingest/power_log.h).
#include "fuzz_support.h"
#include "ingest/power_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY({
    wattcal::PowerLogOptions options;
    options.dmon_interval_ms = 100.0;  // lets dcgmi dmon inputs without timestamps through
    wattcal::PowerLogReader reader(path, options);
    wattcal::PowerSample sample;
    while (reader.Next(&sample)) {
    }
  });
}
