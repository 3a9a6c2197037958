#include "perf/perf_validation.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "perf/perf_csv.h"
#include "util/errors.h"

namespace wattcal {
namespace {

TimeErrorSummary Stats(const std::vector<const TimeErrorPoint*>& points) {
  TimeErrorSummary s;
  for (const TimeErrorPoint* p : points) {
    const double e = p->error_pct();
    ++s.points;
    s.mape_pct += std::abs(e);
    s.mean_error_pct += e;
    s.max_ape_pct = std::max(s.max_ape_pct, std::abs(e));
  }
  if (s.points > 0) {
    s.mape_pct /= s.points;
    s.mean_error_pct /= s.points;
  }
  return s;
}

}  // namespace

PerfValidationReport ValidateTimes(const std::vector<TimePrediction>& predictions,
                                   const std::vector<CrispCounters>& counters,
                                   const std::vector<ActualTime>& actual,
                                   const std::string& actual_path) {
  std::map<std::pair<std::string, double>, double> truth;
  for (const ActualTime& a : actual) truth[{a.kernel, a.target_mhz}] = a.actual_time_s;
  std::map<std::string, double> base;
  for (const CrispCounters& c : counters) base[c.kernel] = c.base_mhz;

  PerfValidationReport v;
  std::vector<std::string> model_order;
  for (const TimePrediction& p : predictions) {
    const auto it = truth.find({p.kernel, p.target_mhz});
    if (it == truth.end()) continue;
    TimeErrorPoint point;
    point.kernel = p.kernel;
    point.model = p.model;
    point.target_mhz = p.target_mhz;
    point.predicted_time_s = p.predicted_time_s;
    point.actual_time_s = it->second;
    const auto b = base.find(p.kernel);
    point.at_base = b != base.end() && b->second == p.target_mhz;
    v.points.push_back(point);
    if (std::find(model_order.begin(), model_order.end(), p.model) == model_order.end()) {
      model_order.push_back(p.model);
    }
  }
  const bool any = std::any_of(v.points.begin(), v.points.end(),
                               [](const TimeErrorPoint& p) { return !p.at_base; });
  if (!any) {
    throw InputError(actual_path, 0, "target_mhz",
                     "no actual time matches a predicted (kernel, target frequency) away from the "
                     "kernels' base frequencies; nothing to validate");
  }
  for (const std::string& m : model_order) {
    ModelValidation mv;
    mv.model = m;
    std::vector<const TimeErrorPoint*> all;
    std::map<double, std::vector<const TimeErrorPoint*>> by_target;
    std::map<std::string, std::vector<const TimeErrorPoint*>> by_kernel;
    for (const TimeErrorPoint& p : v.points) {
      if (p.model != m || p.at_base) continue;
      all.push_back(&p);
      by_target[p.target_mhz].push_back(&p);
      by_kernel[p.kernel].push_back(&p);
    }
    mv.overall = Stats(all);
    for (const auto& [f, points] : by_target) mv.per_target.emplace_back(f, Stats(points));
    for (const CrispCounters& c : counters) {
      const auto it = by_kernel.find(c.kernel);
      if (it != by_kernel.end()) mv.per_kernel.emplace_back(c.kernel, Stats(it->second));
    }
    v.models.push_back(std::move(mv));
  }
  return v;
}

void to_json(nlohmann::json& j, const TimeErrorSummary& s) {
  j = {{"points", s.points},
       {"mape_pct", s.mape_pct},
       {"max_ape_pct", s.max_ape_pct},
       {"mean_error_pct", s.mean_error_pct}};
}

void to_json(nlohmann::json& mj, const ModelValidation& m) {
  mj = m.overall;
  mj["model"] = m.model;
  nlohmann::json per_target = nlohmann::json::array();
  for (const auto& [f, s] : m.per_target) {
    nlohmann::json t = s;
    t["target_mhz"] = f;
    per_target.push_back(t);
  }
  nlohmann::json per_kernel = nlohmann::json::array();
  for (const auto& [k, s] : m.per_kernel) {
    nlohmann::json t = s;
    t["kernel"] = k;
    per_kernel.push_back(t);
  }
  mj["per_target"] = per_target;
  mj["per_kernel"] = per_kernel;
}

void to_json(nlohmann::json& j, const PerfValidationReport& v) {
  j = nlohmann::json::object();
  j["excluded"] =
      "points at each kernel's base frequency (every model returns the measured time there)";
  j["models"] = v.models;
}

std::string TimeErrorsToCsv(const PerfValidationReport& v) {
  std::string out = "kernel,model,target_mhz,predicted_time_s,actual_time_s,error_pct,at_base\n";
  for (const TimeErrorPoint& p : v.points) {
    out += PerfCsvField(p.kernel) + "," + PerfCsvField(p.model) + "," +
           PerfCsvNumber(p.target_mhz) + "," + PerfCsvNumber(p.predicted_time_s) + "," +
           PerfCsvNumber(p.actual_time_s) + "," + PerfCsvNumber(p.error_pct()) + "," +
           (p.at_base ? "1" : "0") + "\n";
  }
  return out;
}

std::string FormatPerfValidation(const PerfValidationReport& v) {
  std::vector<double> targets;
  for (const ModelValidation& m : v.models) {
    for (const auto& [f, s] : m.per_target) {
      if (std::find(targets.begin(), targets.end(), f) == targets.end()) targets.push_back(f);
    }
  }
  std::sort(targets.begin(), targets.end());
  std::string out = "Run-time MAPE (%) by target core frequency (MHz):\n";
  out += fmt::format("  {:<13}", "model");
  for (double f : targets) out += fmt::format(" {:>7g}", f);
  out += fmt::format(" {:>8} {:>8}\n", "all", "max");
  for (const ModelValidation& m : v.models) {
    out += fmt::format("  {:<13}", m.model);
    for (double f : targets) {
      const auto it = std::find_if(m.per_target.begin(), m.per_target.end(),
                                   [f](const auto& e) { return e.first == f; });
      out += it == m.per_target.end() ? fmt::format(" {:>7}", "-")
                                      : fmt::format(" {:>7.2f}", it->second.mape_pct);
    }
    out += fmt::format(" {:>8.2f} {:>8.2f}\n", m.overall.mape_pct, m.overall.max_ape_pct);
  }
  return out;
}

}  // namespace wattcal
