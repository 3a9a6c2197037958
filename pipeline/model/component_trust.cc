#include "model/component_trust.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/power_limit.h"

namespace wattcal {

std::vector<ComponentTrust> ComponentTrustTable(const PowerModel& model) {
  const std::vector<std::string> names = model.layout.ComponentNames();
  const std::vector<int> domains = model.layout.ComponentDomains();
  std::vector<ComponentTrust> table;
  for (size_t i = 0; i < names.size() && i < model.component_w_per_mhz.size(); ++i) {
    const FrequencyDomain& d = model.layout.domains[static_cast<size_t>(domains[i])];
    ComponentTrust t;
    t.component = names[i];
    t.domain = d.name;
    t.w_per_mhz = model.component_w_per_mhz[i];
    t.full_use_w =
        t.w_per_mhz * d.default_freq_mhz;  // TPDS Eq. 9: gamma_i * U_i * f, U_i = 1, v = 1
    const CoefficientCi& ci = model.coefficient_ci95;
    if (ci.known() && i < ci.component_w_per_mhz.size()) {
      t.has_ci = true;
      t.ci_low_w = ci.component_w_per_mhz[i].first * d.default_freq_mhz;
      t.ci_high_w = ci.component_w_per_mhz[i].second * d.default_freq_mhz;
    }
    const TrainingRange& range = model.training_range;
    t.trained_up_to = i < range.max_util_frac.size() ? range.max_util_frac[i]
                                                     : std::numeric_limits<double>::quiet_NaN();
    if (std::isfinite(t.trained_up_to) && t.trained_up_to < kTrustHalfUse)
      t.flags.push_back(kTrustBelowHalfUse);
    if (t.has_ci && t.ci_low_w <= 0.0 && t.ci_high_w >= 0.0)
      t.flags.push_back(kTrustIntervalHoldsZero);
    if (model.power_limit_w && t.full_use_w > *model.power_limit_w) {
      t.flags.push_back(kTrustAboveBoardLimit);
    }
    table.push_back(std::move(t));
  }
  return table;
}

std::vector<std::string> ExtrapolatesFlags(const std::vector<ComponentTrust>& table,
                                           const double* util_frac,
                                           const std::vector<double>& component_w,
                                           double uncapped_w) {
  std::vector<std::string> out;
  if (!(uncapped_w > 0.0)) return out;
  for (size_t i = 0; i < table.size() && i < component_w.size(); ++i) {
    const ComponentTrust& t = table[i];
    if (!(component_w[i] > kExtrapolatesShare * uncapped_w)) continue;
    const bool beyond =
        std::isfinite(t.trained_up_to) && UtilBeyondTraining(util_frac[i], t.trained_up_to);
    const bool holds_zero =
        std::find(t.flags.begin(), t.flags.end(), kTrustIntervalHoldsZero) != t.flags.end();
    if (beyond || holds_zero)
      out.push_back(std::string(kPredictionFlagExtrapolates) + ":" + t.component);
  }
  return out;
}

namespace {

std::string Number(double v, int decimals) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : std::string("-");
}

}  // namespace

std::string ComponentTrustText(const std::vector<ComponentTrust>& table) {
  size_t width = 9;  // "component"
  for (const ComponentTrust& t : table) width = std::max(width, t.component.size());
  std::string s =
      fmt::format("{:<{}}  {:>6}  {:>11}  {:>16}  {:>22}  {:>13}  {}\n", "component", width,
                  "domain", "w_per_mhz", "full_use_w", "full_use_w_ci95", "trained_up_to", "flags");
  for (const ComponentTrust& t : table) {
    std::string flags;
    for (const std::string& f : t.flags) flags += (flags.empty() ? "" : ",") + f;
    s += fmt::format(
        "{:<{}}  {:>6}  {:>11.5f}  {:>16}  {:>22}  {:>13}  {}\n", t.component, width, t.domain,
        t.w_per_mhz, Number(t.full_use_w, 1),
        t.has_ci ? fmt::format("[{}, {}]", Number(t.ci_low_w, 1), Number(t.ci_high_w, 1)) : "-",
        Number(t.trained_up_to, 3), flags.empty() ? "-" : flags);
  }
  return s;
}

std::vector<std::string> ComponentTrustWarnings(const std::vector<ComponentTrust>& table) {
  std::vector<std::string> out;
  for (const ComponentTrust& t : table) {
    std::vector<std::string> why;
    for (const std::string& f : t.flags) {
      if (f == kTrustBelowHalfUse && !(t.trained_up_to > 0.0)) {
        why.push_back("no training row uses it, so its power is not measured at all");
      } else if (f == kTrustBelowHalfUse) {
        why.push_back(
            fmt::format("trained only up to {:.3f} of full use, so {:.0f} W at full use is an "
                        "extrapolation",
                        t.trained_up_to, t.full_use_w));
      } else if (f == kTrustIntervalHoldsZero) {
        why.push_back(fmt::format("its 95% interval [{:.1f}, {:.1f}] W at full use holds zero",
                                  t.ci_low_w, t.ci_high_w));
      } else if (f == kTrustAboveBoardLimit) {
        why.push_back(fmt::format("{:.0f} W at full use is above the board limit", t.full_use_w));
      }
    }
    if (!why.empty()) {
      std::string s = t.component + ": ";
      for (size_t k = 0; k < why.size(); ++k) s += (k ? "; " : "") + why[k];
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace wattcal
