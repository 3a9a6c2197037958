#include "clocks/vf_model.h"

#include <algorithm>
#include <cmath>

#include "util/errors.h"
#include "util/json_check.h"

namespace wattcal {

double VfModel::VoltageAt(double f_mhz) const {
  if (clocks_mhz.empty()) return kNaN;
  if (f_mhz <= clocks_mhz.front()) return v_rel.front();
  if (f_mhz >= clocks_mhz.back()) return v_rel.back();
  const size_t k = static_cast<size_t>(
      std::upper_bound(clocks_mhz.begin(), clocks_mhz.end(), f_mhz) - clocks_mhz.begin() - 1);
  const double t = (f_mhz - clocks_mhz[k]) / (clocks_mhz[k + 1] - clocks_mhz[k]);
  return (1.0 - t) * v_rel[k] + t * v_rel[k + 1];
}

double VfModel::PowerAt(double g, double f_mhz) const {
  const double v = VoltageAt(f_mhz);
  return static_w * v + constant_w + v * v * f_mhz * g;  // TPDS Eq. 4, U one-hot
}

double VfModel::ActivityFrom(double power_w, double f_mhz) const {
  const double v = VoltageAt(f_mhz);
  return std::max(0.0, (power_w - static_w * v - constant_w) / (v * v * f_mhz));
}

bool VfModel::WithinCalibratedClocks(double f_mhz) const {
  return !clocks_mhz.empty() && f_mhz >= clocks_mhz.front() * (1 - 1e-9) &&
         f_mhz <= clocks_mhz.back() * (1 + 1e-9);
}

HeldClock ClockUnderLimit(const VfModel& model, double g, double requested_mhz) {
  HeldClock h;
  h.f_mhz = requested_mhz;
  h.power_w = model.PowerAt(g, requested_mhz);
  if (!model.power_limit_w || !(h.power_w > *model.power_limit_w)) return h;  // none, or under
  const double limit_w = *model.power_limit_w;
  // P(f) is non-decreasing in f (v non-decreasing, every coefficient >= 0): bisect for the
  // clock where it meets the limit.
  double lo = 0.0, hi = requested_mhz;
  if (model.PowerAt(g, lo) >= limit_w) {
    h.f_mhz = lo;
    h.power_w = model.PowerAt(g, lo);
    h.limited = true;
    return h;
  }
  for (int i = 0; i < 100 && hi - lo > 1e-9 * requested_mhz; ++i) {
    const double mid = 0.5 * (lo + hi);
    (model.PowerAt(g, mid) > limit_w ? hi : lo) = mid;
  }
  h.f_mhz = lo;
  h.power_w = model.PowerAt(g, lo);
  h.limited = true;
  return h;
}

void to_json(nlohmann::json& j, const VfModel& m) {
  j = nlohmann::json::object();
  j["format"] = "wattcal-vf-model";
  j["equation"] = "P = static_w * v(f) + constant_w + v(f)^2 * f_core_mhz * activity_w_per_mhz";
  j["reference_mhz"] = FiniteOrNull(m.reference_mhz);
  j["static_w"] = FiniteOrNull(m.static_w);
  j["constant_w"] = FiniteOrNull(m.constant_w);
  if (m.power_limit_w) j["power_limit_w"] = *m.power_limit_w;
  nlohmann::json v = nlohmann::json::array();
  for (size_t i = 0; i < m.clocks_mhz.size(); ++i) {
    v.push_back(
        {{"f_core_mhz", FiniteOrNull(m.clocks_mhz[i])}, {"v_rel", FiniteOrNull(m.v_rel[i])}});
  }
  j["voltages"] = v;
  nlohmann::json a = nlohmann::json::object();
  for (const auto& [w, g] : m.activity_w_per_mhz) a[w] = FiniteOrNull(g);
  j["activity_w_per_mhz"] = a;
}

VfModel VfModelFromJson(const nlohmann::json& j, const std::string& path) {
  auto number = [&](const nlohmann::json& o, const char* key) {
    if (!o.contains(key) || !o[key].is_number()) {
      throw InputError(path, 0, key, "expected a number (a wattcal-vf-model JSON)");
    }
    return o[key].get<double>();
  };
  if (!j.is_object() || j.value("format", "") != "wattcal-vf-model") {
    throw InputError(path, 0, "format", "not a wattcal-vf-model JSON (wattcal-clocks --model-out)");
  }
  VfModel m;
  m.reference_mhz = number(j, "reference_mhz");
  m.static_w = number(j, "static_w");
  m.constant_w = number(j, "constant_w");
  if (j.contains("power_limit_w")) m.power_limit_w = number(j, "power_limit_w");
  if (!j.contains("voltages") || !j["voltages"].is_array() || j["voltages"].empty()) {
    throw InputError(path, 0, "voltages", "expected a non-empty array");
  }
  for (const nlohmann::json& p : j["voltages"]) {
    const double f = number(p, "f_core_mhz"), v = number(p, "v_rel");
    if (!m.clocks_mhz.empty() && (f <= m.clocks_mhz.back() || v < m.v_rel.back())) {
      throw InputError(path, 0, "voltages", "clocks must ascend and voltages not decrease");
    }
    if (!(v > 0.0)) throw InputError(path, 0, "voltages", "a voltage must be positive");
    m.clocks_mhz.push_back(f);
    m.v_rel.push_back(v);
  }
  if (j.contains("activity_w_per_mhz") && j["activity_w_per_mhz"].is_object()) {
    for (const auto& [w, g] : j["activity_w_per_mhz"].items()) {
      if (!g.is_number()) throw InputError(path, 0, "activity_w_per_mhz." + w, "expected a number");
      m.activity_w_per_mhz[w] = g.get<double>();
    }
  }
  return m;
}

}  // namespace wattcal
