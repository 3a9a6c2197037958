#include "fleet/fleet_reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <set>

#include "util/errors.h"
#include "util/logging.h"
#include "util/nan.h"
#include "util/option_rule.h"

namespace wattcal {

bool FleetReduceOptions::Check(std::string* error) const {
  if (threads < 1) return RejectOption(error, "--threads: {} is not a count >= 1", threads);
  if (max_matrix_gpus < 2)
    return RejectOption(error, "--max-matrix-gpus: {} is not a count >= 2", max_matrix_gpus);
  return fit.Check(error);
}

int FleetResult::failed() const {
  int n = 0;
  for (const FleetGpu& g : gpus) n += g.member.status == FleetStatus::kOk ? 0 : 1;
  return n;
}

namespace {

// Fits one GPU; a failure becomes its status and message (and a warning).
void FitOne(const FleetDescription& d, std::shared_ptr<const CaptureCounters> lent,
            const FleetFitOptions& options, const std::vector<std::string>& only, FleetGpu* g,
            CaptureReport* ingested = nullptr) {
  try {
    g->fit = FitFleetGpu(g->member.captures, d, g->member.has_counters ? nullptr : lent, options,
                         only, ingested);
    g->member.message = g->fit.cv_note;
  } catch (const std::exception& e) {
    g->member.status = FleetStatus::kFailed;
    g->member.message = fmt::format("could not be calibrated: {}", e.what());
  }
}

// The GPU whose counters the model's GPUs without counters use: the first (UUID order) with
// counters of its own that reduces; nullptr when none does. Fits it (and any before it that fail).
std::shared_ptr<const CaptureCounters> LendingGpu(
    const FleetDescription& d, const std::vector<int>& members, const FleetFitOptions& options,
    const std::vector<std::string>& only, std::vector<FleetGpu>* gpus, std::vector<bool>* done) {
  for (int i : members) {
    FleetGpu& g = (*gpus)[i];
    if (!g.member.has_counters || d.fields) continue;
    CaptureReport ingested;
    FitOne(d, nullptr, options, only, &g, &ingested);
    (*done)[i] = true;
    if (g.member.status == FleetStatus::kOk) {
      return std::make_shared<const CaptureCounters>(LendCounters(ingested));
    }
  }
  return nullptr;
}

// Fits the members not fitted yet, in parallel; `lent` lends its counters to those without.
void FitMembers(const FleetDescription& d, const std::vector<int>& members,
                const std::shared_ptr<const CaptureCounters>& lent,
                const std::vector<std::string>& only, const FleetReduceOptions& options,
                const std::vector<bool>& done, std::vector<FleetGpu>* gpus) {
  const int n = static_cast<int>(members.size());
  Progress progress(fmt::format("fleet: {} GPUs of {}", n, d.path), n);
#pragma omp parallel for schedule(dynamic) num_threads(options.threads)
  for (int k = 0; k < n; ++k) {
    FleetGpu& g = (*gpus)[members[k]];
    if (done[members[k]]) {
    } else if (!g.member.has_counters && !lent && !d.fields) {
      g.member.status = FleetStatus::kFailed;
      g.member.message = fmt::format(
          "no counters: its captures have none (no ncu_raw.csv, no ncu/) and no GPU of its model "
          "({}) with counters of its own was reduced to lend them",
          d.path);
    } else {
      FitOne(d, lent, options.fit, only, &g);
    }
    progress.Tick();
  }
  progress.Finish();
}

// The benchmarks every one of `members` ran (sorted).
std::vector<std::string> CommonBenchmarks(const std::vector<FleetGpu>& gpus,
                                          const std::vector<int>& members) {
  std::vector<std::string> common = gpus[members.front()].member.benchmarks;
  for (int i : members) {
    std::vector<std::string> both;
    const std::vector<std::string>& b = gpus[i].member.benchmarks;
    std::set_intersection(common.begin(), common.end(), b.begin(), b.end(),
                          std::back_inserter(both));
    common = both;
  }
  return common;
}

void CompareModel(const std::vector<FleetGpu>& gpus, const FleetReduceOptions& options,
                  FleetModel* m) {
  std::vector<const GpuFit*> fits;
  for (int i : m->gpus) fits.push_back(&gpus[i].fit);
  if (fits.empty()) return;
  m->cross = PredictAcross(fits, options.max_matrix_gpus, options.threads);
  try {
    m->pooled = FitPooled(fits, options.fit);
  } catch (const std::exception& e) {
    m->pooled_error = e.what();
  }
}

}  // namespace

FleetResult ReduceFleet(const std::vector<std::string>& captures,
                        const std::vector<FleetDescription>& descriptions,
                        const FleetReduceOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  FleetResult r;
  r.descriptions = descriptions;
  for (FleetMember& m : GroupCaptures(captures, descriptions)) r.gpus.push_back({m, {}, kNaN});
  // The library's per-GPU notes (flagged rows left out, ...) would repeat once per GPU: each
  // GPU's outcome is reported by the fleet instead.
  const LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kQuiet);
  std::vector<bool> done(r.gpus.size(), false);
  for (size_t d = 0; d < descriptions.size(); ++d) {
    FleetModel m;
    m.model = static_cast<int>(d);
    std::vector<int> members;
    for (size_t i = 0; i < r.gpus.size(); ++i) {
      const FleetMember& g = r.gpus[i].member;
      if (g.model == m.model && g.status == FleetStatus::kOk)
        members.push_back(static_cast<int>(i));
    }
    if (members.empty()) continue;
    const std::vector<std::string> only = options.fit.common_benchmarks
                                              ? CommonBenchmarks(r.gpus, members)
                                              : std::vector<std::string>();
    const std::shared_ptr<const CaptureCounters> lent =
        LendingGpu(descriptions[d], members, options.fit, only, &r.gpus, &done);
    FitMembers(descriptions[d], members, lent, only, options, done, &r.gpus);
    for (int i : members) {
      if (r.gpus[i].member.status == FleetStatus::kOk) m.gpus.push_back(i);
      if (r.gpus[i].member.status == FleetStatus::kOk && !r.gpus[i].member.has_counters && lent)
        m.counters_uuid = CountersName(*lent);
    }
    CompareModel(r.gpus, options, &m);
    for (size_t k = 0; k < m.gpus.size() && k < m.pooled.mape_pct.size(); ++k)
      r.gpus[m.gpus[k]].pooled_mape_pct = m.pooled.mape_pct[k];
    r.models.push_back(std::move(m));
  }
  SetLogLevel(level);
  std::set<std::string> inputs;
  for (const FleetGpu& g : r.gpus) {
    inputs.insert(g.fit.inputs.begin(), g.fit.inputs.end());
    if (g.member.status != FleetStatus::kOk) {
      LogWarning(fmt::format("{} {}: {}", FleetMemberName(g.member),
                             FleetStatusName(g.member.status), g.member.message));
    }
  }
  r.inputs.assign(inputs.begin(), inputs.end());
  return r;
}

}  // namespace wattcal
