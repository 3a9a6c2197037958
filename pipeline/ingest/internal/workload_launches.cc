#include "ingest/internal/workload_launches.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/errors.h"

namespace wattcal {
namespace capture_internal {

std::vector<std::string> NeededMetrics(const GpuDescription& gpu, bool optional) {
  std::vector<std::string> m;
  if (!optional) m = {gpu.active_cycles_metric, gpu.duration_metric};
  for (const ComponentCounters& c : gpu.components) {
    if (c.optional != optional) continue;
    for (const auto* list :
         {&c.thread_metrics, &c.warp_metrics, &c.byte_metrics, &c.access_metrics}) {
      m.insert(m.end(), list->begin(), list->end());
    }
  }
  return m;
}

std::map<std::string, MetricRole> MetricRoles(const GpuDescription& gpu) {
  std::map<std::string, MetricRole> roles;
  for (const ComponentCounters& c : gpu.components) {
    for (const auto* list : {&c.thread_metrics, &c.warp_metrics, &c.access_metrics}) {
      for (const std::string& m : *list) roles[m] = MetricRole::kCount;
    }
    for (const std::string& m : c.byte_metrics) roles[m] = MetricRole::kBytes;
  }
  roles[gpu.active_cycles_metric] = MetricRole::kCount;
  roles[gpu.duration_metric] = MetricRole::kTime;
  return roles;
}

void WorkloadLaunches::Add(const CounterLaunch& l) {
  CheckUnits(l);
  RefuseZeroTimeBase(l);
  if (count_ == 0) first_ = Brief(l);
  ++count_;
  for (const std::vector<std::string>* list : {&needed_, &optional_}) {
    for (const std::string& m : *list) {
      if (l.unknown_units.count(m)) LaunchMetric(l, m);  // throws: unknown unit
      if (l.metrics.count(m)) continue;
      Lack& lack = lacking_[m];
      if (lack.count++ == 0) lack.first = Brief(l);
    }
  }
  const auto t = l.metrics.find(gpu_.duration_metric);
  if (t != l.metrics.end())
    time_s_ += t->second * static_cast<double>(std::max<int64_t>(1, l.launches));
  sum_.Add(l);
}

void WorkloadLaunches::Finish(OptionalMetrics* optional, std::vector<std::string>* warnings) const {
  for (const std::string& m : needed_) {
    const auto it = lacking_.find(m);
    if (it == lacking_.end()) continue;
    const bool time_base = m == gpu_.active_cycles_metric || m == gpu_.duration_metric;
    const Lack& lack = it->second;
    if (lack.count == count_ || time_base) {
      throw InputError(
          lack.first.path, lack.first.line, m,
          fmt::format("no value in this launch (launch ID {}, {}): the export has no such column, "
                      "or its cell is n/a",
                      lack.first.id, lack.first.kernel));
    }
    Warn(m, lack, warnings);
  }
  for (const std::string& m : optional_) {
    const auto it = lacking_.find(m);
    if (it == lacking_.end() || it->second.count < count_) optional->present.insert(m);
    if (it == lacking_.end()) continue;
    if (it->second.count == count_) {
      std::vector<std::string>& exports = optional->absent[m];
      if (exports.empty() || exports.back() != it->second.first.path)
        exports.push_back(it->second.first.path);
    } else {
      Warn(m, it->second, warnings);
    }
  }
}

void WorkloadLaunches::Warn(const std::string& m, const Lack& lack,
                            std::vector<std::string>* warnings) const {
  warnings->push_back(fmt::format(
      "{}:{}: {}: {} of {} launches of this workload have no value (n/a), first {}: counted as 0",
      lack.first.path, lack.first.line, m, lack.count, count_, lack.first.kernel));
}

void WorkloadLaunches::RefuseZeroTimeBase(const CounterLaunch& l) const {
  for (const std::string* m : {&gpu_.active_cycles_metric, &gpu_.duration_metric}) {
    const auto it = l.metrics.find(*m);
    if (it == l.metrics.end() || it->second != 0.0) continue;
    throw InputError(l.path, l.line, *m,
                     fmt::format("the time base is 0 in this launch (launch ID {}, {}): a "
                                 "launch that ran has elapsed cycles and a duration (a corrupt "
                                 "export?)",
                                 l.id, l.kernel));
  }
}

void WorkloadLaunches::CheckUnits(const CounterLaunch& l) const {
  for (const auto& [metric, role] : roles_) {
    const auto it = l.metric_base.find(metric);
    if (it == l.metric_base.end()) continue;
    const std::string& base = it->second;
    const bool is_count =
        base != "byte" && base != "second" && base != "%" && base.find('/') == std::string::npos;
    const bool ok = role == MetricRole::kTime    ? base == "second"
                    : role == MetricRole::kBytes ? base == "byte"
                                                 : is_count;
    if (ok) continue;
    const char* wanted = role == MetricRole::kTime ? "a time (nsecond, usecond, msecond, second)"
                         : role == MetricRole::kBytes
                             ? "bytes (byte, Kbyte, ...)"
                             : "a count (inst, cycle, warp, thread, ..., or no unit)";
    throw InputError(
        l.path, l.line, metric,
        fmt::format("its unit is {} ('{}'), but the GPU description uses it as {}: TPDS Eqs. 7-8 "
                    "would read it wrongly (is the column the right metric?)",
                    base.empty() ? "a plain count" : base, base, wanted));
  }
}

}  // namespace capture_internal
}  // namespace wattcal
