#include "fleet/fleet_terms.h"

#include <algorithm>
#include <cmath>

#include "util/stats.h"

namespace wattcal {

namespace {

void Summarise(FleetTerm* t) {
  std::vector<double> v, deviation;
  for (const TermEstimate& e : t->values)
    if (std::isfinite(e.w)) v.push_back(e.w);
  t->outlier.assign(t->values.size(), false);
  if (v.empty()) return;
  t->median_w = Median(v);
  for (double x : v) deviation.push_back(std::abs(x - t->median_w));
  t->mad_w = Median(deviation);
  t->min_w = *std::min_element(v.begin(), v.end());
  t->max_w = *std::max_element(v.begin(), v.end());
  for (size_t i = 0; i < t->values.size(); ++i) {
    const TermEstimate& e = t->values[i];
    if (!std::isfinite(e.w)) continue;
    const double lo = std::isfinite(e.lo_w) ? e.lo_w : e.w;
    const double hi = std::isfinite(e.hi_w) ? e.hi_w : e.w;
    const bool excludes = t->median_w < lo || t->median_w > hi;
    const double off = std::abs(e.w - t->median_w);
    // Iglewicz-Hoaglin modified z-score: 0.6745 (x - median) / MAD.
    const bool far = t->mad_w > 0.0 ? 0.6745 * off / t->mad_w > kOutlierRobustZ : off > 0.0;
    t->outlier[i] = excludes && far;
  }
}

}  // namespace

std::vector<FleetTerm> ModelTerms(const FleetResult& fleet, const FleetModel& model) {
  std::vector<FleetTerm> terms(2);
  terms[0].name = "idle";
  terms[1].name = "static";
  for (int i : model.gpus) {
    const GpuFit& f = fleet.gpus[i].fit;
    TermEstimate idle;
    idle.w = f.idle_w;
    terms[0].values.push_back(idle);
    terms[1].values.push_back(f.static_w);
    for (const std::string& c : f.components) {
      if (std::none_of(terms.begin(), terms.end(),
                       [&](const FleetTerm& t) { return t.name == c; })) {
        FleetTerm t;
        t.name = c;
        terms.push_back(t);
      }
    }
  }
  for (size_t t = 2; t < terms.size(); ++t) {
    for (int i : model.gpus) {
      const GpuFit& f = fleet.gpus[i].fit;
      const auto it = std::find(f.components.begin(), f.components.end(), terms[t].name);
      terms[t].values.push_back(
          it == f.components.end() ? TermEstimate() : f.component_w[it - f.components.begin()]);
    }
  }
  for (FleetTerm& t : terms) Summarise(&t);
  return terms;
}

}  // namespace wattcal
