// Power-log ingest throughput: a ~200 MB nvidia-smi log (the A100 sample's eight columns:
// timestamp, utilization, two temperatures, power.draw, power.draw.instant, SM and memory
// clocks, values with units) is generated once into a temporary file and streamed
//   - through CsvReader alone (libcsv; the floor under every CSV ingest), copying fields into
//     strings and as zero-copy views,
//   - through PowerLogReader (parsing timestamps, units, clocks, temperature),
//   - through MeasureWindows with 20,000 kernel windows (the whole MTSM pass).
// Throughput is reported per core as bytes_per_second over CPU time (one thread; on a shared
// machine wall time also counts other processes' turns). max_rss_mb is the process's peak
// resident memory after the runs (constant memory: it must not grow with the log; compare
// WATTCAL_BENCH_LOG_MB=50 and =400).
//
//   build/bin/ingest_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//   WATTCAL_BENCH_LOG=/tmp/smi.csv build/bin/ingest_bench   # keep the log for
//   python3 bench/python_csv_baseline.py /tmp/smi.csv       # the Python comparison
//
// Environment: WATTCAL_BENCH_LOG_MB (default 200) sets the log's size; WATTCAL_BENCH_LOG names
// the file and keeps it afterwards (default: a temporary file, removed at exit).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "ingest/kernel_energy.h"
#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"
#include "io/csv_reader.h"

using namespace wattcal;

namespace {

// First row's time: 2023/08/24 22:20:16.285 (the A100 sample's).
constexpr double kStartS = 1692915616.285;

struct BenchLog {
  std::string path;
  std::string windows_path;
  bool keep = false;
  size_t bytes = 0;
  int64_t rows = 0;
  double last_time_s = 0.0;
  ~BenchLog() {
    if (!keep && !path.empty()) std::remove(path.c_str());
    if (!windows_path.empty()) std::remove(windows_path.c_str());
  }
};

std::string SmiTimestamp(int64_t ms_since_start) {
  // 2023/08/24 22:20:16.285 + ms; the sample's day, rolling over minutes/hours/days.
  const int64_t total_ms = 285 + 16 * 1000 + 20 * 60000 + int64_t{22} * 3600000 + ms_since_start;
  const int64_t day = total_ms / 86400000;
  const int64_t in_day = total_ms % 86400000;
  return fmt::format("2023/08/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", 24 + day, in_day / 3600000,
                     in_day / 60000 % 60, in_day / 1000 % 60, in_day % 1000);
}

// Writes the log once per process: rows 11-30 ms apart, power following an idle/load square
// wave with noise, readings repeated as a slow sensor would (a new value every ~3 rows).
const BenchLog& Log() {
  static BenchLog log = [] {
    BenchLog b;
    const char* size_env = std::getenv("WATTCAL_BENCH_LOG_MB");
    const double mb = size_env ? std::atof(size_env) : 200.0;
    const char* path_env = std::getenv("WATTCAL_BENCH_LOG");
    b.keep = path_env != nullptr;
    b.path = path_env ? path_env : fmt::format("/tmp/wattcal_ingest_bench_{}.csv", getpid());
    std::FILE* f = std::fopen(b.path.c_str(), "wb");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", b.path.c_str());
      std::exit(1);
    }
    std::string text =
        "timestamp, utilization.gpu [%], temperature.gpu, temperature.memory, power.draw [W], "
        "power.draw.instant [W], clocks.current.sm [MHz], clocks.current.memory [MHz]\n";
    std::mt19937_64 rng(20230824);
    std::uniform_int_distribution<int> gap_ms(11, 30);
    std::normal_distribution<double> noise(0.0, 2.0);
    const size_t target = static_cast<size_t>(mb * 1e6);
    int64_t ms = 0;
    double power = 64.07;
    while (b.bytes + text.size() < target) {
      const bool load = (ms / 5000) % 2 == 1;
      if (b.rows % 3 == 0) power = (load ? 240.0 : 64.0) + noise(rng);
      const int sm = load ? 1275 : 1410;
      text +=
          fmt::format("{}, {} %, {}, {}, {:.2f} W, {:.2f} W, {} MHz, 1215 MHz\n", SmiTimestamp(ms),
                      load ? 100 : 0, load ? 55 : 43, load ? 52 : 44, power, power, sm);
      b.last_time_s = kStartS + static_cast<double>(ms) * 1e-3;
      ++b.rows;
      ms += gap_ms(rng);
      if (text.size() > (1 << 20)) {
        b.bytes += std::fwrite(text.data(), 1, text.size(), f);
        text.clear();
      }
    }
    b.bytes += std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);

    // 20,000 windows of 50 ms spread over the log.
    b.windows_path = b.path + ".windows.csv";
    std::string windows = "kernel,start_us,end_us\n";
    const int count = 20000;
    const double span_s = b.last_time_s - kStartS - 1.0;
    for (int i = 0; i < count; ++i) {
      const double start = kStartS + 0.5 + span_s * i / count;
      windows += fmt::format("k{},{:.0f},{:.0f}\n", i % 7, start * 1e6, (start + 0.05) * 1e6);
    }
    std::FILE* w = std::fopen(b.windows_path.c_str(), "wb");
    std::fwrite(windows.data(), 1, windows.size(), w);
    std::fclose(w);
    return b;
  }();
  return log;
}

void ReportMemory(benchmark::State& state) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["max_rss_mb"] = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
  state.counters["log_mb"] = static_cast<double>(Log().bytes) / 1e6;
}

// Every record through CsvReader::Next, copying the fields (Field = std::string) or viewing
// them in the reader's buffer (Field = std::string_view).
template <typename Field>
void ReadEveryRecord(benchmark::State& state) {
  const BenchLog& log = Log();
  int64_t records = 0;
  for (auto _ : state) {
    CsvReader reader(log.path);
    std::vector<Field> fields;
    records = 0;
    size_t chars = 0;
    while (reader.Next(&fields)) {
      ++records;
      chars += fields[4].size();
    }
    benchmark::DoNotOptimize(chars);
  }
  state.SetBytesProcessed(static_cast<int64_t>(log.bytes) * state.iterations());
  state.counters["rows"] = static_cast<double>(records);
  ReportMemory(state);
}

void BM_CsvReaderOnly(benchmark::State& state) { ReadEveryRecord<std::string>(state); }
void BM_CsvReaderViews(benchmark::State& state) { ReadEveryRecord<std::string_view>(state); }

void BM_PowerLogReaderNvidiaSmi(benchmark::State& state) {
  const BenchLog& log = Log();
  int64_t samples = 0;
  for (auto _ : state) {
    PowerLogReader reader(log.path, PowerLogOptions());
    PowerSample s;
    double sum = 0.0;
    samples = 0;
    while (reader.Next(&s)) {
      sum += s.power_w + s.f_core_mhz;
      ++samples;
    }
    benchmark::DoNotOptimize(sum);
  }
  if (samples != log.rows) state.SkipWithError("sample count differs from the rows written");
  state.SetBytesProcessed(static_cast<int64_t>(log.bytes) * state.iterations());
  state.counters["samples"] = static_cast<double>(samples);
  ReportMemory(state);
}

void BM_MeasureWindows(benchmark::State& state) {
  const BenchLog& log = Log();
  const std::vector<KernelWindow> windows = ReadKernelWindows(log.windows_path);
  size_t kernels = 0;
  for (auto _ : state) {
    PowerLogReader reader(log.path, PowerLogOptions());
    const std::vector<WindowEnergy> energies =
        MeasureWindows(&reader, windows, log.windows_path, KernelEnergyOptions());
    kernels = AggregateKernelEnergies(energies, KernelEnergyOptions()).size();
    benchmark::DoNotOptimize(energies.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(log.bytes) * state.iterations());
  state.counters["windows"] = static_cast<double>(windows.size());
  state.counters["kernel_groups"] = static_cast<double>(kernels);
  ReportMemory(state);
}

}  // namespace

BENCHMARK(BM_CsvReaderOnly)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CsvReaderViews)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_PowerLogReaderNvidiaSmi)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_MeasureWindows)->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();
