#include "accelwattch/idle_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "accelwattch/sweep_clock_options.h"
#include "util/errors.h"
#include "util/json_check.h"
#include "util/option_rule.h"

namespace wattcal {

bool IdlePowerOptions::Check(std::string* error) const {
  if (!CheckSweepClockOptions(p_const_w, "f_core_mhz", f_core_mhz, f_tolerance_mhz, num_sms,
                              error)) {
    return false;
  }
  if (lanes_per_warp < 1)
    return RejectOption(error, "lanes_per_warp = {} must be >= 1", lanes_per_warp);
  return true;
}

IdlePowerReport FitIdlePower(const Sweep& sweep, const IdlePowerOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  IdlePowerReport result;
  result.p_const_w = options.p_const_w;
  int n = options.num_sms;
  double f_max = 0.0;
  for (const SweepPoint& p : sweep.points) {
    if (options.num_sms == 0) n = std::max(n, p.active_sms);
    f_max = std::max(f_max, p.f_core_mhz);
  }
  if (n == 0) throw OptionError("num_sms: the sweep gives no active_sms; give the GPU's SM count");
  result.num_sms = n;
  const double f = options.f_core_mhz > 0.0 ? options.f_core_mhz : f_max;
  result.f_core_mhz = f;
  const std::set<std::string> wanted(options.benchmarks.begin(), options.benchmarks.end());
  for (const std::string& b : wanted) {
    if (std::none_of(sweep.points.begin(), sweep.points.end(),
                     [&](const SweepPoint& p) { return p.benchmark == b; })) {
      throw OptionError("benchmarks: '" + b + "' is not in the sweep " + sweep.path);
    }
  }

  // Mean power per benchmark and SM count at the clock, full warps.
  std::map<std::string, std::map<int, std::pair<double, int>>> means;
  for (const SweepPoint& p : sweep.points) {
    const int k = p.active_sms > 0 ? p.active_sms : n;
    const int lanes = p.lanes_per_warp > 0 ? p.lanes_per_warp : options.lanes_per_warp;
    if (k > n) {
      throw InputError(sweep.path, p.line, "active_sms",
                       fmt::format("{} SMs, more than num_sms = {}", k, n));
    }
    if (std::abs(p.f_core_mhz - f) > options.f_tolerance_mhz || lanes != options.lanes_per_warp)
      continue;
    if (!wanted.empty() && !wanted.count(p.benchmark)) continue;
    auto& m = means[p.benchmark][k];
    m.first += p.power_w;
    m.second += 1;
  }
  double log_sum = 0.0, sum = 0.0;
  for (const auto& [name, by_k] : means) {
    if (!by_k.count(n) || by_k.size() < 2) continue;  // needs all N SMs and fewer
    IdleBenchmark b;
    b.benchmark = name;
    b.power_all_sms_w = by_k.at(n).first / by_k.at(n).second;
    b.per_active_sm_w = (b.power_all_sms_w - options.p_const_w) / n;  // AccelWattch Eq. 6
    double num = 0.0, den = 0.0;
    for (const auto& [k, v] : by_k) {
      if (k == n) continue;
      IdleConfig c;
      c.active_sms = k;
      c.power_w = v.first / v.second;
      c.idle_sms_w = c.power_w - options.p_const_w - b.per_active_sm_w * k;  // AccelWattch Eq. 7
      c.per_idle_sm_w = c.idle_sms_w / (n - k);
      num += c.idle_sms_w * (n - k);
      den += static_cast<double>(n - k) * (n - k);
      b.configs.push_back(c);
    }
    b.per_idle_sm_w = num / den;
    if (b.per_idle_sm_w > 0.0) {
      b.used = true;
      log_sum += std::log(b.per_idle_sm_w);
      sum += b.per_idle_sm_w;
      ++result.benchmarks_used;
    } else {
      b.note = fmt::format("estimate {} W <= 0: left out of the geometric mean", b.per_idle_sm_w);
    }
    result.benchmarks.push_back(b);
  }
  if (result.benchmarks.empty()) {
    throw InputError(sweep.path, 0, "active_sms",
                     fmt::format("no benchmark has rows with {} lanes on all {} SMs and on fewer "
                                 "SMs within {} MHz of {} MHz",
                                 options.lanes_per_warp, n, options.f_tolerance_mhz, f));
  }
  if (result.benchmarks_used > 0) {
    result.per_idle_sm_w = std::exp(log_sum / result.benchmarks_used);  // AccelWattch Eq. 8
    result.arithmetic_mean_w = sum / result.benchmarks_used;
    result.status = "ok";
  } else {
    result.status = "every benchmark's per-idle-SM estimate is <= 0: no geometric mean";
  }
  return result;
}

void to_json(nlohmann::json& j, const IdlePowerOptions& o) {
  j = {{"p_const_w", o.p_const_w},
       {"f_core_mhz", o.f_core_mhz},
       {"f_tolerance_mhz", o.f_tolerance_mhz},
       {"num_sms", o.num_sms},
       {"lanes_per_warp", o.lanes_per_warp},
       {"benchmarks", o.benchmarks}};
}

nlohmann::json IdlePowerToJson(const IdlePowerReport& r, const Sweep& sweep,
                               const IdlePowerOptions& options) {
  nlohmann::json j;
  j["model"] =
      "AccelWattch MICRO'21 Eqs. 6-8: per-active-SM power from the all-SM run, idle SMs "
      "as the remainder at fewer SMs, geometric mean over microbenchmarks";
  j["p_idle_sm_w"] = FiniteOrNull(r.per_idle_sm_w);
  j["arithmetic_mean_idle_sm_w"] = FiniteOrNull(r.arithmetic_mean_w);
  j["status"] = r.status;
  j["p_const_w"] = r.p_const_w;
  j["f_core_mhz"] = r.f_core_mhz;
  j["num_sms"] = r.num_sms;
  j["lanes_per_warp"] = options.lanes_per_warp;
  j["benchmarks_used"] = r.benchmarks_used;
  nlohmann::json benchmarks = nlohmann::json::array();
  for (const IdleBenchmark& b : r.benchmarks) {
    nlohmann::json configs = nlohmann::json::array();
    for (const IdleConfig& c : b.configs) {
      configs.push_back({{"active_sms", c.active_sms},
                         {"power_w", c.power_w},
                         {"idle_sms_w", c.idle_sms_w},
                         {"per_idle_sm_w", c.per_idle_sm_w}});
    }
    benchmarks.push_back({{"benchmark", b.benchmark},
                          {"power_all_sms_w", b.power_all_sms_w},
                          {"per_active_sm_w", b.per_active_sm_w},
                          {"per_idle_sm_w", FiniteOrNull(b.per_idle_sm_w)},
                          {"used", b.used},
                          {"note", b.note},
                          {"configs", configs}});
  }
  j["benchmarks"] = benchmarks;
  j["sweep"] = sweep;
  return j;
}

}  // namespace wattcal
