// Each profiler's counter reader, which ReadCounters (ingest/counters.cc) dispatches to.
// Internal to ingest/.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ingest/counters.h"
#include "ingest/internal/counter_csv.h"

namespace wattcal {
namespace counters_internal {

// Nsight Compute (counters_ncu.cc): the details table (one row per launch and metric) and the
// raw table (one row per launch), each launch with its counters.
std::vector<CounterLaunch> ReadNcuDetailsLaunches(const std::string& path, const CsvStart& start);
std::vector<CounterLaunch> ReadNcuRawLaunches(const std::string& path, const CsvStart& start);
// The raw table's launches one by one (of the kernels in `keep`, all when null).
void StreamNcuRawLaunches(const std::string& path, const CsvStart& start,
                          const std::set<std::string>* keep,
                          const std::function<void(CounterLaunch&&)>& sink);
// "(x, y, z)".
std::string Dim3Text(const std::array<int64_t, 3>& d);

// nvprof --metrics and AccelWattch's hw_perf.csv (counters_nvprof.cc): one record per kernel,
// with each metric's base unit in `bases`.
std::vector<KernelCounters> ReadNvprof(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases);
std::vector<KernelCounters> ReadHwPerf(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases);

}  // namespace counters_internal
}  // namespace wattcal
