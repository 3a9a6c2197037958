// gpmTOOL training/real/prediction files and tidy CSVs (pipeline/io/corpus_io.h).
#include "fuzz_support.h"
#include "io/corpus_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY(wattcal::ReadCorpus(path));
}
