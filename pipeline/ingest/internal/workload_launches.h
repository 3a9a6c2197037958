// A workload's launches of a capture's counter exports, as ingest/capture.cc reads them: the
// metrics a GPU description reads and their roles, and the launches checked and summed one at a
// time (workload_launches.cc). Internal to ingest/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ingest/counters.h"
#include "ingest/internal/capture_flags.h"
#include "io/gpu_description.h"

namespace wattcal {
namespace capture_internal {

// The metrics the description reads (its optional components' when `optional`, else the
// others' and the two time bases).
std::vector<std::string> NeededMetrics(const GpuDescription& gpu, bool optional = false);

// What each metric the description reads is used as, and so which units it may carry.
enum class MetricRole { kTime, kCount, kBytes };

std::map<std::string, MetricRole> MetricRoles(const GpuDescription& gpu);

// A workload's launches, read one at a time (an export of a whole training step has 10^5):
// every used metric's unit against its role (a duration must be a time, a byte count bytes, a
// count a count: a duration in cycles read as seconds once made every bandwidth utilisation 1e-9
// of itself); a metric with an unknown unit is an error; a required metric absent ("n/a") from
// some launches counts 0 there, with a warning, and absent from every launch, or a time base
// absent from any or 0 in any, is an error; an optional one absent from every launch is recorded
// (ResolveOptionalMetrics decides). The launches are summed (SumCounterLaunches, which refuses a
// negative count in any launch) as they come.
class WorkloadLaunches {
 public:
  WorkloadLaunches(const std::string& name, const std::vector<std::string>& needed,
                   const std::vector<std::string>& optional,
                   const std::map<std::string, MetricRole>& roles, const GpuDescription& gpu)
      : sum_(name), needed_(needed), optional_(optional), roles_(roles), gpu_(gpu) {}

  void Add(const CounterLaunch& l);

  // The checks that need every launch; records in `optional` the optional metrics no launch has
  // and those some launch has.
  void Finish(OptionalMetrics* optional, std::vector<std::string>* warnings) const;

  int64_t launches() const { return count_; }
  double kernel_time_s() const { return time_s_; }
  int64_t first_line() const { return first_.line; }
  const std::string& first_kernel() const { return first_.kernel; }
  KernelCounters Sum() const { return sum_.Result(); }

 private:
  struct Brief {
    std::string path, kernel;
    int64_t line = 0, id = -1;
    Brief() = default;
    explicit Brief(const CounterLaunch& l)
        : path(l.path), kernel(l.kernel), line(l.line), id(l.id) {}
  };
  struct Lack {
    int64_t count = 0;
    Brief first;
  };

  void Warn(const std::string& m, const Lack& lack, std::vector<std::string>* warnings) const;

  // A time base of 0 in a launch that ran (a corrupt export): its counts would divide by the
  // other launches' time, or, alone, give utilisations of 0.
  void RefuseZeroTimeBase(const CounterLaunch& l) const;

  void CheckUnits(const CounterLaunch& l) const;

  CounterLaunchSum sum_;
  const std::vector<std::string>& needed_;
  const std::vector<std::string>& optional_;
  const std::map<std::string, MetricRole>& roles_;
  const GpuDescription& gpu_;
  std::map<std::string, Lack> lacking_;
  Brief first_;
  int64_t count_ = 0;
  double time_s_ = 0.0;
};

}  // namespace capture_internal
}  // namespace wattcal
