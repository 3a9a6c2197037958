// Kernel launch windows (ingest/kernel_windows.h).
#include "fuzz_support.h"
#include "ingest/kernel_windows.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY(wattcal::ReadKernelWindows(path));
}
