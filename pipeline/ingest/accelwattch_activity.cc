#include "ingest/accelwattch_activity.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "io/sweep.h"
#include "ingest/ingest.h"
#include "ingest/kernel_windows.h"
#include "util/bounds.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {
namespace {

// The counters' launch time, from which AccelWattch Eq. 11's T_elapsedTime is taken.
constexpr const char* kDurationMetric = "gpu__time_duration.sum";

std::string Count(int v) { return v > 0 ? std::to_string(v) : std::string(); }

// Mean launch window length per kernel key, seconds.
std::map<std::string, double> MeanWindowLengths(const std::string& windows_path) {
  std::map<std::string, std::pair<double, int64_t>> sum;
  for (const KernelWindow& w : ReadKernelWindows(windows_path)) {
    auto& [total_s, n] = sum[KernelKey(w.kernel)];
    total_s += w.end_s - w.start_s;
    ++n;
  }
  std::map<std::string, double> mean;
  for (const auto& [key, s] : sum) mean[key] = s.first / static_cast<double>(s.second);
  return mean;
}

}  // namespace

AccelWattchActivity AccelWattchActivityTable(const std::string& description_path,
                                             const std::vector<KernelCounters>& counters,
                                             const std::string& counters_path,
                                             const KernelEnergyReport* energy,
                                             const std::string& windows_path) {
  const std::vector<SweepDescriptionRow> description = ReadSweepDescription(description_path);
  std::map<std::string, const KernelCounters*> counters_of;
  for (const KernelCounters& k : counters) {
    if (!counters_of.emplace(KernelKey(k.kernel), &k).second) {
      throw InputError(counters_path, k.line, "Kernel Name",
                       fmt::format("two kernels of this file are both called '{}' once their "
                                   "argument lists are dropped; wattcal cannot tell which "
                                   "description row they belong to",
                                   KernelKey(k.kernel)));
    }
  }
  // Measured power per kernel key: launch-weighted over its clock groups.
  std::map<std::string, std::pair<double, int64_t>> power_of;
  if (energy != nullptr) {
    for (const KernelEnergy& k : energy->kernels) {
      auto& [weighted_w, launches] = power_of[KernelKey(k.kernel)];
      if (k.launches > 0) {
        weighted_w += k.mean_power_w * static_cast<double>(k.launches);
        launches += k.launches;
      }
    }
  }

  // The rows' counters, and every metric they report.
  std::vector<const KernelCounters*> row_counters;
  std::set<std::string> metrics;
  std::set<std::string> described;
  bool need_windows = false;
  for (const SweepDescriptionRow& d : description) {
    const std::string key = KernelKey(d.kernel);
    described.insert(key);
    const auto it = counters_of.find(key);
    if (it == counters_of.end()) {
      throw InputError(description_path, d.line, "kernel",
                       fmt::format("no counters for kernel '{}' in {} ({} kernels)", d.kernel,
                                   counters_path, counters.size()));
    }
    row_counters.push_back(it->second);
    for (const auto& [metric, value] : it->second->metrics) metrics.insert(metric);
    need_windows |= it->second->metrics.count(kDurationMetric) == 0;
  }
  std::map<std::string, double> window_s;
  if (need_windows && !windows_path.empty()) window_s = MeanWindowLengths(windows_path);

  AccelWattchActivity result;
  std::string& s = result.csv;
  s = "kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,elapsed_s,"
      "launches,mean_power_w";
  for (const std::string& m : metrics) s += "," + CsvField(m);
  s += "\n";
  for (size_t i = 0; i < description.size(); ++i) {
    const SweepDescriptionRow& d = description[i];
    const KernelCounters& k = *row_counters[i];
    const std::string key = KernelKey(d.kernel);
    double elapsed_s = NAN;
    const auto duration = k.metrics.find(kDurationMetric);
    if (duration != k.metrics.end()) {
      elapsed_s = duration->second;
    } else if (window_s.count(key)) {
      elapsed_s = window_s.at(key);
    } else {
      throw InputError(description_path, d.line, "elapsed_s",
                       fmt::format("no elapsed time for kernel '{}': its counters in {} lack {} "
                                   "and {}",
                                   d.kernel, counters_path, kDurationMetric,
                                   windows_path.empty() ? "no --windows file is given"
                                                        : "it has no window in " + windows_path));
    }
    double power_w = NAN;
    if (energy != nullptr) {
      const auto p = power_of.find(key);
      if (p == power_of.end()) {
        throw InputError(
            description_path, d.line, "kernel",
            fmt::format("kernel '{}' has no launch window in {}", d.kernel, windows_path));
      }
      if (p->second.second > 0) power_w = p->second.first / static_cast<double>(p->second.second);
    }
    s += fmt::format("{},{},{},{},{},{},{},{},{},{}", CsvField(d.kernel), CsvField(d.benchmark),
                     CsvField(d.category), Count(d.active_sms), Count(d.lanes_per_warp),
                     CsvExactNumber(d.f_core_mhz), CsvExactNumber(d.f_mem_mhz),
                     CsvExactNumber(elapsed_s), k.launches, CsvExactNumber(power_w));
    for (const std::string& m : metrics) {
      const auto v = k.metrics.find(m);
      // Counts, bytes, cycles and durations are bounded (util/bounds.h): a 1e308 counter is an
      // input error naming the counters file and the kernel's line, not a value passed on.
      if (v != k.metrics.end() && !(std::fabs(v->second) <= kMaxCount)) {
        throw InputError(k.path.empty() ? counters_path : k.path, k.line, m,
                         fmt::format("kernel '{}': {}", k.kernel,
                                     BoundViolation(PhysicalQuantity::kCount, v->second)));
      }
      s += "," + (v == k.metrics.end() ? std::string() : CsvExactNumber(v->second));
    }
    s += "\n";
  }
  for (const auto& [key, k] : counters_of) result.ignored_counter_kernels += !described.count(key);
  if (result.ignored_counter_kernels > 0) {
    LogWarning(
        fmt::format("{}: {} kernels have counters but are not in the description {}; "
                    "ignored",
                    counters_path, result.ignored_counter_kernels, description_path));
  }
  result.kernels = static_cast<int>(description.size());
  result.metrics = static_cast<int>(metrics.size());
  return result;
}

}  // namespace wattcal
