#include "accelwattch/static_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "accelwattch/sweep_clock_options.h"
#include "util/errors.h"
#include "util/json_check.h"
#include "util/option_rule.h"

namespace wattcal {

double HalfWarpBasis(int lanes, int half_warp_lanes) {
  const double y = lanes, h = half_warp_lanes;
  return y <= h ? y - 1.0 : 0.5 * (h - 1.0) + 0.5 * (y - h - 1.0);
}

bool StaticPowerOptions::Check(std::string* error) const {
  if (!CheckSweepClockOptions(p_const_w, "reference_f_core_mhz", reference_f_core_mhz,
                              f_tolerance_mhz, num_sms, error)) {
    return false;
  }
  if (warp_size < 2) return RejectOption(error, "warp_size = {} must be >= 2", warp_size);
  if (half_warp_lanes < 1 || half_warp_lanes >= warp_size)
    return RejectOption(error, "half_warp_lanes = {} must be in [1, warp_size = {})",
                        half_warp_lanes, warp_size);
  if (min_frequencies < 2)
    return RejectOption(error, "min_frequencies = {} must be >= 2 (beta and tau)", min_frequencies);
  return true;
}

namespace {

// Least-squares line y = c0 + c1 x (needs two distinct x).
void FitLine(const std::vector<double>& x, const std::vector<double>& y, double* c0, double* c1) {
  const double n = x.size();
  double mx = 0.0, my = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxx = 0.0, sxy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  *c1 = sxy / sxx;
  *c0 = my - *c1 * mx;
}

DivergenceModel FitDivergence(const std::vector<DivergencePoint>& points, int warp_size,
                              const std::function<double(int)>& basis) {
  std::vector<double> x, y;
  for (const DivergencePoint& p : points) {
    x.push_back(basis(p.lanes_per_warp));
    y.push_back(p.static_w);
  }
  DivergenceModel m;
  FitLine(x, y, &m.p_static_first_lane_w, &m.p_static_add_lane_w);
  double ss = 0.0, max_abs = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = m.p_static_first_lane_w + m.p_static_add_lane_w * x[i] - y[i];
    ss += e * e;
    max_abs = std::max(max_abs, std::abs(e));
  }
  m.rmse_w = std::sqrt(ss / x.size());
  m.max_abs_error_w = max_abs;
  m.p_static_full_warp_w = m.p_static_first_lane_w + m.p_static_add_lane_w * basis(warp_size);
  return m;
}

// The sweep's frame: N (the GPU's SMs), the warp size, the reference clock, and how a row's
// SM and lane counts read (0: all of them).
struct SweepFrame {
  int n = 0;
  int warp_size = 0;
  double f_ref_mhz = 0.0;
  double f_tolerance_mhz = 0.0;
  bool AtRef(const SweepPoint& p) const {
    return std::abs(p.f_core_mhz - f_ref_mhz) <= f_tolerance_mhz;
  }
  int SmsOf(int k) const { return k > 0 ? k : n; }
  int LanesOf(int y) const { return y > 0 ? y : warp_size; }
};

// N (from the options, else the sweep's most active SMs) and the reference clock (from the
// options, else the highest); refuses rows beyond N or the warp size, and a reference clock
// no row is within the tolerance of.
SweepFrame FrameOf(const Sweep& sweep, const StaticPowerOptions& options) {
  SweepFrame frame;
  frame.warp_size = options.warp_size;
  frame.f_tolerance_mhz = options.f_tolerance_mhz;
  int n = options.num_sms;
  double f_max = 0.0;
  for (const SweepPoint& p : sweep.points) {
    if (options.num_sms == 0) n = std::max(n, p.active_sms);
    f_max = std::max(f_max, p.f_core_mhz);
  }
  if (n == 0) throw OptionError("num_sms: the sweep gives no active_sms; give the GPU's SM count");
  for (const SweepPoint& p : sweep.points) {
    if (p.active_sms > n) {
      throw InputError(sweep.path, p.line, "active_sms",
                       fmt::format("{} SMs, more than num_sms = {}", p.active_sms, n));
    }
    if (p.lanes_per_warp > options.warp_size) {
      throw InputError(
          sweep.path, p.line, "lanes_per_warp",
          fmt::format("{} lanes, more than warp_size = {}", p.lanes_per_warp, options.warp_size));
    }
  }
  frame.n = n;
  frame.f_ref_mhz = options.reference_f_core_mhz > 0.0 ? options.reference_f_core_mhz : f_max;
  if (std::none_of(sweep.points.begin(), sweep.points.end(),
                   [&](const SweepPoint& p) { return frame.AtRef(p); })) {
    throw InputError(sweep.path, 0, "f_core_mhz",
                     fmt::format("no row within {} MHz of the reference clock {} MHz",
                                 options.f_tolerance_mhz, frame.f_ref_mhz));
  }
  return frame;
}

// Mean power at the reference clock per benchmark and (SMs, lanes): (sum W, rows).
using MeansAtRef = std::map<std::string, std::map<std::pair<int, int>, std::pair<double, int>>>;

// The gating benchmark: the options', else the one with 1-lane rows on the most SM counts (two
// at least); "" when none has.
std::string GatingBenchmark(const Sweep& sweep, const StaticPowerOptions& options,
                            MeansAtRef& means) {
  if (!options.gating_benchmark.empty()) {
    if (std::none_of(sweep.points.begin(), sweep.points.end(), [&](const SweepPoint& p) {
          return p.benchmark == options.gating_benchmark;
        })) {
      throw OptionError("gating_benchmark: '" + options.gating_benchmark +
                        "' is not in the sweep " + sweep.path);
    }
    return options.gating_benchmark;
  }
  auto one_lane_sm_counts = [&](const std::string& b) {
    std::vector<int> k;
    for (const auto& [key, v] : means[b]) {
      if (key.second == 1) k.push_back(key.first);
    }
    return k;
  };
  std::string benchmark;
  size_t best = 1;
  for (const auto& [b, m] : means) {
    const size_t count = one_lane_sm_counts(b).size();
    if (count > best) {
      best = count;
      benchmark = b;
    }
  }
  return benchmark;
}

// Power gating (AccelWattch §4.3): lines through the gating benchmark's 1-lane rows over the
// SM counts and its all-SM rows over the lane counts up to the half warp.
GatingTerms FitGating(const Sweep& sweep, const StaticPowerOptions& options,
                      const SweepFrame& frame) {
  const int n = frame.n, h = options.half_warp_lanes;
  MeansAtRef means;
  for (const SweepPoint& p : sweep.points) {
    if (!frame.AtRef(p)) continue;
    auto& m = means[p.benchmark][{frame.SmsOf(p.active_sms), frame.LanesOf(p.lanes_per_warp)}];
    m.first += p.power_w;
    m.second += 1;
  }
  GatingTerms g;
  g.benchmark = GatingBenchmark(sweep, options, means);
  if (g.benchmark.empty()) {
    g.status = "no benchmark has 1-lane rows on two or more SM counts at the reference clock";
    return g;
  }
  auto& m = means[g.benchmark];
  std::vector<double> k, pk, y, py;
  for (const auto& [key, v] : m) {
    if (key.second == 1) {
      k.push_back(key.first);
      pk.push_back(v.first / v.second);
      g.sm_counts.push_back(key.first);
    }
    if (key.first == n && key.second <= h) {
      y.push_back(key.second);
      py.push_back(v.first / v.second);
      g.lane_counts.push_back(key.second);
    }
  }
  std::vector<std::string> missing;
  if (k.size() >= 2) {
    double c0, c1;
    FitLine(k, pk, &c0, &c1);
    g.first_sm_w = c0 + c1 - options.p_const_w;
    g.add_sm_w = c1;
    g.first_to_add_sm_ratio = g.first_sm_w / g.add_sm_w;
    g.first_lane_per_sm_w = g.add_sm_w;
    g.sm_all_vs_1_increase_pct = 100.0 * ((c0 + c1 * n) / (c0 + c1) - 1.0);
  } else {
    missing.push_back("1-lane rows on fewer than two SM counts");
  }
  if (y.size() >= 2) {
    double d0, d1;
    FitLine(y, py, &d0, &d1);
    g.add_lane_per_sm_w = d1 / n;
    g.first_to_add_lane_ratio = g.first_lane_per_sm_w / g.add_lane_per_sm_w;
    if (8 <= h) g.lanes_8_vs_1_increase_pct = 100.0 * ((d0 + 8.0 * d1) / (d0 + d1) - 1.0);
  } else {
    missing.push_back(
        fmt::format("rows on all {} SMs with fewer than two lane counts <= {}", n, h));
  }
  g.status = missing.empty() ? "ok" : missing.front();
  for (size_t i = 1; i < missing.size(); ++i) g.status += "; " + missing[i];
  return g;
}

// The category's divergence points: one AccelWattch Eq. 3 fit with p_const fixed per curve
// of a lane sweep (a benchmark of the category with >= 3 lane counts on all N SMs), sorted by
// lanes then benchmark; curves with too few clocks go to `excluded`. Returns the fits' MAPE sum.
double DivergencePoints(const std::vector<SweepCurve>& curves, const StaticPowerOptions& options,
                        const SweepFrame& frame, CategoryStatic* cs,
                        std::vector<ExcludedCurve>* excluded) {
  std::map<std::string, std::set<int>> lanes_by_benchmark;
  for (const SweepCurve& c : curves) {
    if (c.category == cs->category && frame.SmsOf(c.active_sms) == frame.n) {
      lanes_by_benchmark[c.benchmark].insert(frame.LanesOf(c.lanes_per_warp));
    }
  }
  double mape_sum = 0.0;
  for (const SweepCurve& c : curves) {
    if (c.category != cs->category || frame.SmsOf(c.active_sms) != frame.n ||
        lanes_by_benchmark[c.benchmark].size() < 3) {
      continue;
    }
    const int distinct = c.DistinctFrequencies();
    if (distinct < options.min_frequencies) {
      excluded->push_back({c.benchmark, c.active_sms, c.lanes_per_warp,
                           fmt::format("{} distinct core clocks, fewer than {}", distinct,
                                       options.min_frequencies)});
      continue;
    }
    const Eq3Fit fit = FitEq3FixedConstant(c, options.p_const_w);
    DivergencePoint p;
    p.benchmark = c.benchmark;
    p.lanes_per_warp = frame.LanesOf(c.lanes_per_warp);
    p.tau_w_per_mhz = fit.tau_w_per_mhz;
    p.beta_w_per_mhz3 = fit.beta_w_per_mhz3;
    p.static_w = fit.tau_w_per_mhz * frame.f_ref_mhz;
    p.eq3_mape_pct = fit.mape_pct;
    p.points = static_cast<int>(c.f_core_mhz.size());
    cs->points.push_back(p);
    mape_sum += fit.mape_pct;
    if (std::find(cs->benchmarks.begin(), cs->benchmarks.end(), c.benchmark) ==
        cs->benchmarks.end()) {
      cs->benchmarks.push_back(c.benchmark);
    }
  }
  std::sort(cs->points.begin(), cs->points.end(),
            [](const DivergencePoint& a, const DivergencePoint& b) {
              return a.lanes_per_warp != b.lanes_per_warp ? a.lanes_per_warp < b.lanes_per_warp
                                                          : a.benchmark < b.benchmark;
            });
  return mape_sum;
}

// Divergence of one category (AccelWattch §4.4-4.5): its static power over the active lanes,
// fitted linear and half-warp; the half-warp model is chosen where the sweep tells them apart
// and it fits better.
CategoryStatic FitCategory(const std::string& category, const std::vector<SweepCurve>& curves,
                           const StaticPowerOptions& options, const SweepFrame& frame,
                           std::vector<ExcludedCurve>* excluded) {
  const int h = options.half_warp_lanes, w = options.warp_size;
  CategoryStatic cs;
  cs.category = category;
  const double mape_sum = DivergencePoints(curves, options, frame, &cs, excluded);
  std::set<int> lanes;
  for (const DivergencePoint& p : cs.points) lanes.insert(p.lanes_per_warp);
  if (cs.points.empty()) {
    cs.status = fmt::format(
        "no lane sweep (a benchmark of this category with 3 or more lane "
        "counts on all {} SMs)",
        frame.n);
  } else if (lanes.size() < 2) {
    cs.status = "fewer than two lane counts";
  } else {
    cs.eq3_mape_pct = mape_sum / cs.points.size();
    cs.linear = FitDivergence(cs.points, w, [](int y) { return y - 1.0; });
    cs.half_warp = FitDivergence(cs.points, w, [h](int y) { return HalfWarpBasis(y, h); });
    const double scale = std::max(cs.linear.rmse_w, cs.half_warp.rmse_w);
    cs.distinguishable = *lanes.rbegin() > h &&
                         std::abs(cs.linear.rmse_w - cs.half_warp.rmse_w) > 1e-9 * (scale + 1.0);
    cs.chosen_model =
        cs.distinguishable && cs.half_warp.rmse_w < cs.linear.rmse_w ? "half_warp" : "linear";
    cs.status = "ok";
  }
  return cs;
}

}  // namespace

StaticPowerReport FitStaticPower(const Sweep& sweep, const StaticPowerOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  StaticPowerReport result;
  result.p_const_w = options.p_const_w;
  // N and the reference clock.
  const SweepFrame frame = FrameOf(sweep, options);
  result.num_sms = frame.n;
  result.reference_f_core_mhz = frame.f_ref_mhz;
  // --- Power gating (AccelWattch §4.3).
  result.gating = FitGating(sweep, options, frame);
  // --- Divergence (AccelWattch §4.4-4.5).
  const std::vector<SweepCurve> curves = GroupCurves(sweep);
  for (const std::string& category : MixCategories()) {
    result.categories.push_back(FitCategory(category, curves, options, frame, &result.excluded));
  }
  return result;
}

void to_json(nlohmann::json& j, const StaticPowerOptions& o) {
  j = {{"p_const_w", o.p_const_w},
       {"reference_f_core_mhz", o.reference_f_core_mhz},
       {"f_tolerance_mhz", o.f_tolerance_mhz},
       {"num_sms", o.num_sms},
       {"warp_size", o.warp_size},
       {"half_warp_lanes", o.half_warp_lanes},
       {"gating_benchmark", o.gating_benchmark},
       {"min_frequencies", o.min_frequencies}};
}

namespace {

nlohmann::json ModelJson(const DivergenceModel& m, int n) {
  return {{"p_static_first_lane_w", FiniteOrNull(m.p_static_first_lane_w)},
          {"p_static_add_lane_w", FiniteOrNull(m.p_static_add_lane_w)},
          {"p_static_full_warp_w", FiniteOrNull(m.p_static_full_warp_w)},
          {"p_static_first_lane_per_active_sm_w", FiniteOrNull(m.p_static_first_lane_w / n)},
          {"p_static_add_lane_per_active_sm_w", FiniteOrNull(m.p_static_add_lane_w / n)},
          {"rmse_w", FiniteOrNull(m.rmse_w)},
          {"max_abs_error_w", FiniteOrNull(m.max_abs_error_w)}};
}

}  // namespace

nlohmann::json StaticPowerToJson(const StaticPowerReport& r, const Sweep& sweep,
                                 const StaticPowerOptions& options) {
  nlohmann::json j;
  j["model"] =
      "AccelWattch MICRO'21 §4.3-4.5 and Eq. 9: power-gating terms from total power at "
      "the reference clock; per instruction-mix category, linear (Eq. 4) and half-warp "
      "(Eq. 5) models of the static power tau f (Eq. 3 with p_const fixed), the one with "
      "the smaller RMSE chosen";
  j["p_const_w"] = r.p_const_w;
  j["reference_f_core_mhz"] = r.reference_f_core_mhz;
  j["num_sms"] = r.num_sms;
  j["warp_size"] = options.warp_size;
  j["half_warp_lanes"] = options.half_warp_lanes;
  const GatingTerms& g = r.gating;
  j["gating"] = {{"benchmark", g.benchmark},
                 {"status", g.status},
                 {"basis", "total power at reference_f_core_mhz"},
                 {"sm_counts", g.sm_counts},
                 {"lane_counts", g.lane_counts},
                 {"first_sm_w", FiniteOrNull(g.first_sm_w)},
                 {"add_sm_w", FiniteOrNull(g.add_sm_w)},
                 {"first_to_add_sm_ratio", FiniteOrNull(g.first_to_add_sm_ratio)},
                 {"first_lane_per_sm_w", FiniteOrNull(g.first_lane_per_sm_w)},
                 {"add_lane_per_sm_w", FiniteOrNull(g.add_lane_per_sm_w)},
                 {"first_to_add_lane_ratio", FiniteOrNull(g.first_to_add_lane_ratio)},
                 {"sm_all_vs_1_increase_pct", FiniteOrNull(g.sm_all_vs_1_increase_pct)},
                 {"lanes_8_vs_1_increase_pct", FiniteOrNull(g.lanes_8_vs_1_increase_pct)}};
  nlohmann::json categories = nlohmann::json::object();
  for (const CategoryStatic& c : r.categories) {
    nlohmann::json cj = {{"status", c.status}, {"benchmarks", c.benchmarks}};
    if (c.status == "ok") {
      cj["chosen_model"] = c.chosen_model;
      cj["distinguishable"] = c.distinguishable;
      cj["linear"] = ModelJson(c.linear, r.num_sms);
      cj["half_warp"] = ModelJson(c.half_warp, r.num_sms);
      cj["eq3_mape_pct"] = FiniteOrNull(c.eq3_mape_pct);
      nlohmann::json points = nlohmann::json::array();
      for (const DivergencePoint& p : c.points) {
        points.push_back({{"benchmark", p.benchmark},
                          {"lanes_per_warp", p.lanes_per_warp},
                          {"static_w", FiniteOrNull(p.static_w)},
                          {"beta_w_per_mhz3", FiniteOrNull(p.beta_w_per_mhz3)},
                          {"tau_w_per_mhz", FiniteOrNull(p.tau_w_per_mhz)},
                          {"eq3_mape_pct", FiniteOrNull(p.eq3_mape_pct)},
                          {"points", p.points}});
      }
      cj["lanes"] = points;
    }
    categories[c.category] = cj;
  }
  j["categories"] = categories;
  nlohmann::json order = MixCategories();
  j["category_order"] = order;
  nlohmann::json excluded = nlohmann::json::array();
  for (const ExcludedCurve& e : r.excluded) {
    excluded.push_back({{"benchmark", e.benchmark},
                        {"active_sms", e.active_sms},
                        {"lanes_per_warp", e.lanes_per_warp},
                        {"reason", e.reason}});
  }
  j["excluded_curves"] = excluded;
  j["sweep"] = sweep;
  return j;
}

}  // namespace wattcal
