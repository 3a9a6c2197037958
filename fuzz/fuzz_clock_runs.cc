// Per-run tables at locked clocks (io/clock_runs.h): wattcal's tidy table, EnergAIzer's NVML table
// and the nsfcac DCGM means, told apart by their header. What is read is also written back
// (WriteClockRunsCsv) and, when it is a whole table, read again.
#include "fuzz_support.h"
#include "io/clock_runs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY({
    const wattcal::ClockRunTable table = wattcal::ReadClockRuns(path);
    const std::string tidy = wattcal::WriteClockRunsCsv(table);
    wattcal::fuzz::WriteInput(reinterpret_cast<const uint8_t*>(tidy.data()), tidy.size());
    wattcal::ReadClockRuns(path);
  });
}
