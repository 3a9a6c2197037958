// Counter exports: Nsight Compute details/raw pages, nvprof, AccelWattch hw_perf.csv
// (ingest/counters.h).
#include "fuzz_support.h"
#include "ingest/counters.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY(wattcal::ReadCounters(path));
}
