// The per-kernel tables of the launches' energies (declared in ingest/kernel_energy.h): the
// flags' names, the launches aggregated per kernel and clock pair, the per-instruction energy
// (Arafa Eq. 1) and the two CSV files.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ingest/kernel_energy.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/nan.h"
#include "util/stats.h"

namespace wattcal {
namespace {

constexpr std::pair<uint32_t, const char*> kFlagNames[] = {
    {kFlagTooFewSamples, "too_few_samples"},
    {kFlagTempDrift, "temp_drift"},
    {kFlagHighCv, "high_cv"},
    {kFlagOverlap, "overlap"},
    {kFlagClockMoved, "clock_moved"},
    {kFlagPowerCap, "power_cap"},
    {kFlagThermal, "thermal"},
    {kFlagHwSlowdown, "hw_slowdown"},
    {kFlagSampleGap, "sample_gap"},
    {kFlagCounterMismatch, "counter_mismatch"},
    {kFlagDataToggle, "data_toggle"},
    {kFlagMetricAbsent, "metric_absent"},
    {kFlagFewFieldSamples, "few_field_samples"},
};

// Mean and sample standard deviation of the non-NaN values.
std::pair<double, double> MeanSd(const std::vector<double>& values) {
  std::vector<double> known;
  std::copy_if(values.begin(), values.end(), std::back_inserter(known),
               [](double v) { return !std::isnan(v); });
  const double mean = Mean(known);
  return {mean, known.size() < 2 ? kNaN : SampleStdDev(known, mean)};
}

}  // namespace

const char* PowerSourceName(PowerSource source) {
  switch (source) {
    case PowerSource::kEnergyCounter: return "energy_counter";
    case PowerSource::kInstantPower: return "instant_power";
    case PowerSource::kAveragedPower: return "averaged_power";
  }
  return "unknown";
}

std::string WindowFlagsToString(uint32_t flags) {
  std::string out;
  for (const auto& [bit, name] : kFlagNames) {
    if (flags & bit) {
      if (!out.empty()) out += ';';
      out += name;
    }
  }
  return out;
}

std::vector<KernelEnergy> AggregateKernelEnergies(const std::vector<WindowEnergy>& windows,
                                                  const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  // Key: name, then clocks rounded to 1 MHz (-1 = unknown, sorts first).
  using Key = std::tuple<std::string, int64_t, int64_t>;
  auto rounded = [](double mhz) -> int64_t {
    return std::isnan(mhz) ? -1 : static_cast<int64_t>(std::llround(mhz));
  };
  std::map<Key, std::vector<const WindowEnergy*>> groups;
  for (const WindowEnergy& w : windows) {
    groups[Key(w.kernel, rounded(w.f_core_mhz), rounded(w.f_mem_mhz))].push_back(&w);
  }
  std::vector<KernelEnergy> out;
  out.reserve(groups.size());
  for (const auto& [key, members] : groups) {
    KernelEnergy k;
    k.kernel = std::get<0>(key);
    k.f_core_mhz = std::get<1>(key) < 0 ? kNaN : static_cast<double>(std::get<1>(key));
    k.f_mem_mhz = std::get<2>(key) < 0 ? kNaN : static_cast<double>(std::get<2>(key));
    std::vector<double> duration, energy, power, papi, sma, drift, cv;
    int64_t flag_counts[std::size(kFlagNames)] = {};
    for (const WindowEnergy* w : members) {
      for (size_t f = 0; f < std::size(kFlagNames); ++f) {
        if (w->flags & kFlagNames[f].first) ++flag_counts[f];
      }
      if (options.exclude_flagged && w->flags != 0) {
        ++k.excluded_launches;
        continue;
      }
      ++k.launches;
      k.samples += w->samples;
      duration.push_back(w->duration_s);
      energy.push_back(w->energy_j);
      power.push_back(w->mean_power_w);
      papi.push_back(w->papi_energy_j);
      sma.push_back(w->sma_max_power_w);
      drift.push_back(w->temp_drift_c);
      cv.push_back(w->cv);
    }
    for (size_t f = 0; f < std::size(kFlagNames); ++f) {
      if (flag_counts[f] == 0) continue;
      if (!k.flags.empty()) k.flags += ';';
      k.flags += fmt::format("{}:{}", kFlagNames[f].second, flag_counts[f]);
    }
    k.duration_s = MeanSd(duration).first;
    std::tie(k.energy_j, k.energy_j_sd) = MeanSd(energy);
    std::tie(k.mean_power_w, k.mean_power_w_sd) = MeanSd(power);
    k.papi_energy_j = MeanSd(papi).first;
    k.sma_max_power_w = MeanSd(sma).first;
    k.temp_drift_c = MeanSd(drift).first;
    k.cv = MeanSd(cv).first;
    out.push_back(std::move(k));
  }
  return out;
}

InstructionEnergy PerInstructionEnergy(const KernelEnergy& with, const KernelEnergy& without,
                                       double instructions) {
  if (!(instructions > 0.0) || !std::isfinite(instructions)) {
    throw OptionError(
        fmt::format("instructions = {} must be a finite number > 0 (the "
                    "instructions per launch that the overhead twin lacks)",
                    instructions));
  }
  InstructionEnergy e;
  e.instructions = instructions;
  e.launches_with = with.launches;
  e.launches_without = without.launches;
  e.total_energy_j = with.energy_j;
  e.overhead_energy_j = without.energy_j;
  if (with.launches == 0 || without.launches == 0) {
    e.energy_j = e.energy_j_sd = e.energy_j_se = e.papi_energy_j = kNaN;
    return e;
  }
  e.energy_j = (with.energy_j - without.energy_j) / instructions;
  e.papi_energy_j = (with.papi_energy_j - without.papi_energy_j) / instructions;
  const double vw = with.energy_j_sd * with.energy_j_sd;
  const double vo = without.energy_j_sd * without.energy_j_sd;
  e.energy_j_sd = std::sqrt(vw + vo) / instructions;  // NaN when either sd is unknown
  e.energy_j_se = std::sqrt(vw / static_cast<double>(with.launches) +
                            vo / static_cast<double>(without.launches)) /
                  instructions;
  return e;
}

std::string KernelEnergiesToCsv(const std::vector<KernelEnergy>& kernels) {
  std::string out =
      "kernel,launches,duration_s,energy_j,mean_power_w,samples,f_core_mhz,f_mem_mhz,"
      "energy_j_sd,mean_power_w_sd,papi_energy_j,sma_max_power_w,temp_drift_c,cv,flags,"
      "excluded_launches\n";
  for (const KernelEnergy& k : kernels) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(k.kernel), k.launches,
        CsvNumber(k.duration_s), CsvNumber(k.energy_j), CsvNumber(k.mean_power_w), k.samples,
        CsvNumber(k.f_core_mhz), CsvNumber(k.f_mem_mhz), CsvNumber(k.energy_j_sd),
        CsvNumber(k.mean_power_w_sd), CsvNumber(k.papi_energy_j), CsvNumber(k.sma_max_power_w),
        CsvNumber(k.temp_drift_c), CsvNumber(k.cv), CsvField(k.flags), k.excluded_launches);
  }
  return out;
}

std::string WindowEnergiesToCsv(const std::vector<WindowEnergy>& windows) {
  std::string out =
      "kernel,line,start_s,end_s,duration_s,energy_j,mean_power_w,samples,papi_energy_j,"
      "sma_max_power_w,temp_drift_c,cv,f_core_mhz,f_mem_mhz,flags,f_core_min_mhz,"
      "f_core_max_mhz,f_mem_min_mhz,f_mem_max_mhz,clock_reasons,power_limit_w,power_source,"
      "trapezoid_energy_j\n";
  for (const WindowEnergy& w : windows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},", CsvField(w.kernel), w.line,
                       CsvFixed(w.start_s, 6), CsvFixed(w.end_s, 6), CsvNumber(w.duration_s),
                       CsvNumber(w.energy_j), CsvNumber(w.mean_power_w), w.samples,
                       CsvNumber(w.papi_energy_j), CsvNumber(w.sma_max_power_w),
                       CsvNumber(w.temp_drift_c), CsvNumber(w.cv), CsvNumber(w.f_core_mhz),
                       CsvNumber(w.f_mem_mhz), WindowFlagsToString(w.flags));
    out += fmt::format(
        "{},{},{},{},{},{},{},{}\n", CsvNumber(w.f_core_min_mhz), CsvNumber(w.f_core_max_mhz),
        CsvNumber(w.f_mem_min_mhz), CsvNumber(w.f_mem_max_mhz),
        w.has_clock_reasons ? fmt::format("{:#x}", w.clock_reasons) : std::string(),
        CsvNumber(w.power_limit_w), CsvField(w.power_source), CsvNumber(w.trapezoid_energy_j));
  }
  return out;
}

}  // namespace wattcal
