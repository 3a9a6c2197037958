// Model files: wattcal JSON and gpmTOOL's model format (pipeline/model/model_io.h).
#include "fuzz_support.h"
#include "model/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY(wattcal::ReadModel(path));
}
