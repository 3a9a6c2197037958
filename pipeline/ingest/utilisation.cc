#include "ingest/utilisation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "util/bounds.h"
#include "util/csv_field.h"
#include "util/errors.h"

namespace wattcal {
namespace {

std::string KernelLabel(const KernelCounters& k) {
  return k.benchmark.empty() ? k.kernel : k.benchmark + "/" + k.kernel;
}

std::string FormatG6(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", v);
  return buffer;
}

// Looks up the metrics a component needs, in order; records absent ones.
class MetricLookup {
 public:
  MetricLookup(const KernelCounters& k, std::vector<std::string>* missing)
      : k_(k), missing_(missing) {}

  // The value of `metric`, or NaN when absent (allowed only with a `missing` list).
  double Get(const std::string& metric, const std::string& component, const char* equation) {
    const auto it = k_.metrics.find(metric);
    if (it != k_.metrics.end()) {
      if (it->second < 0) {
        throw InputError(k_.path, k_.line, metric,
                         fmt::format("kernel '{}': negative counter {} (component {})",
                                     KernelLabel(k_), it->second, component));
      }
      if (!WithinBound(PhysicalQuantity::kCount, it->second)) {
        throw InputError(k_.path, k_.line, metric,
                         fmt::format("kernel '{}' (component {}): {}", KernelLabel(k_), component,
                                     BoundViolation(PhysicalQuantity::kCount, it->second)));
      }
      return it->second;
    }
    if (missing_ == nullptr) {
      throw InputError(k_.path, k_.line, metric,
                       fmt::format("kernel '{}' has no value for metric '{}', which component "
                                   "{} needs ({}); profile that metric, or use a GPU "
                                   "description that does not list it",
                                   KernelLabel(k_), metric, component, equation));
    }
    if (std::find(missing_->begin(), missing_->end(), metric) == missing_->end()) {
      missing_->push_back(metric);
    }
    return std::numeric_limits<double>::quiet_NaN();
  }

  // Sum over `metrics` times `factor` (NaN when any is absent).
  double Sum(const std::vector<std::string>& metrics, double factor, const std::string& component,
             const char* equation) {
    double sum = 0.0;
    for (const std::string& m : metrics) sum += factor * Get(m, component, equation);
    return sum;
  }

 private:
  const KernelCounters& k_;
  std::vector<std::string>* missing_;
};

// amount / base, where a zero base is allowed only for a zero amount.
double Ratio(const KernelCounters& k, double amount, double base, const std::string& base_metric,
             const std::string& component) {
  if (std::isnan(amount) || std::isnan(base)) return std::numeric_limits<double>::quiet_NaN();
  if (base > 0) return amount / base;
  if (amount == 0) return 0.0;
  throw InputError(k.path, k.line, base_metric,
                   fmt::format("kernel '{}': the time base '{}' is 0 but component {} counts {}",
                               KernelLabel(k), base_metric, component, amount));
}

}  // namespace

std::vector<double> ComputeUtilisations(const KernelCounters& k, const GpuDescription& gpu,
                                        std::vector<std::string>* missing) {
  MetricLookup lookup(k, missing);
  std::vector<double> u;
  u.reserve(gpu.components.size());
  for (const ComponentCounters& c : gpu.components) {
    if (c.kind == UtilisationKind::kComputeUnit) {
      const char* eq = "TPDS Eq. 7";
      const double ops = lookup.Sum(c.thread_metrics, 1.0, c.component, eq) +
                         lookup.Sum(c.warp_metrics, gpu.warp_size, c.component, eq);
      const double cycles = lookup.Get(gpu.active_cycles_metric, c.component, eq);
      u.push_back(Ratio(k, ops, cycles * gpu.sm_count * c.units_per_sm, gpu.active_cycles_metric,
                        c.component));
    } else {
      const char* eq = "TPDS Eq. 8";
      const double bytes = lookup.Sum(c.byte_metrics, 1.0, c.component, eq) +
                           lookup.Sum(c.access_metrics, c.bytes_per_access, c.component, eq);
      const double duration_s = lookup.Get(gpu.duration_metric, c.component, eq);
      u.push_back(
          Ratio(k, bytes, duration_s * c.peak_bytes_per_s, gpu.duration_metric, c.component));
    }
    if (!std::isnan(u.back()) && !WithinBound(PhysicalQuantity::kUtilisation, u.back())) {
      throw InputError(k.path, k.line, c.component,
                       fmt::format("kernel '{}': the counters give component {} {} (check the "
                                   "counters, or the GPU description's units_per_sm / "
                                   "peak_bytes_per_s)",
                                   KernelLabel(k), c.component,
                                   BoundViolation(PhysicalQuantity::kUtilisation, u.back())));
    }
  }
  return u;
}

std::map<std::string, double> CountersForUtilisations(const std::vector<double>& u,
                                                      const GpuDescription& gpu, double duration_s,
                                                      double active_cycles_per_sm) {
  if (u.size() != gpu.components.size()) {
    throw std::invalid_argument(
        fmt::format("CountersForUtilisations: {} utilisations for {} "
                    "components of {}",
                    u.size(), gpu.components.size(), gpu.name));
  }
  if (!std::isfinite(duration_s) || duration_s <= 0) {
    throw std::invalid_argument(
        fmt::format("CountersForUtilisations: duration_s = {} must be > 0", duration_s));
  }
  if (!std::isfinite(active_cycles_per_sm) || active_cycles_per_sm <= 0) {
    throw std::invalid_argument(fmt::format(
        "CountersForUtilisations: active_cycles_per_sm = {} must be > 0", active_cycles_per_sm));
  }
  std::map<std::string, double> counters;
  if (!gpu.active_cycles_metric.empty()) counters[gpu.active_cycles_metric] = active_cycles_per_sm;
  if (!gpu.duration_metric.empty()) counters[gpu.duration_metric] = duration_s;
  for (size_t i = 0; i < u.size(); ++i) {
    const ComponentCounters& c = gpu.components[i];
    if (!std::isfinite(u[i]) || u[i] < 0) {
      throw std::invalid_argument(
          fmt::format("CountersForUtilisations: utilisation {} of {} must be finite and >= 0", u[i],
                      c.component));
    }
    if (c.kind == UtilisationKind::kComputeUnit) {
      const double ops = u[i] * active_cycles_per_sm * gpu.sm_count * c.units_per_sm;
      // A metric listed k times counts k times in TPDS Eq. 7: each listing carries one share, so
      // one value per distinct metric (assigned, not added) gives back exactly `ops`.
      const double share =
          ops / static_cast<double>(c.thread_metrics.size() + c.warp_metrics.size());
      for (const std::string& m : c.thread_metrics) counters[m] = share;
      for (const std::string& m : c.warp_metrics) counters[m] = share / gpu.warp_size;
    } else {
      const double bytes = u[i] * duration_s * c.peak_bytes_per_s;
      const double share =
          bytes / static_cast<double>(c.byte_metrics.size() + c.access_metrics.size());
      for (const std::string& m : c.byte_metrics) counters[m] = share;
      for (const std::string& m : c.access_metrics) counters[m] = share / c.bytes_per_access;
    }
  }
  return counters;
}

std::string UtilisationsToTidyCsv(
    const std::vector<std::pair<std::string, std::vector<double>>>& kernel_utils,
    const GpuDescription& gpu) {
  const Layout layout = gpu.ToLayout();
  std::string out;
  if (gpu.default_core_mhz > 0) {
    out += "# wattcal-tidy default_f_core_mhz=" + FormatG6(gpu.default_core_mhz);
    if (layout.num_domains() == 2 && gpu.default_mem_mhz > 0) {
      out += " default_f_mem_mhz=" + FormatG6(gpu.default_mem_mhz);
    }
    out += "\n";
  }
  out += "benchmark";
  for (const ComponentCounters& c : gpu.components)
    out += "," + CsvFieldKeepingEdgeSpaces(c.domain + ":" + c.component);
  out += "\n";
  for (const auto& [name, u] : kernel_utils) {
    if (u.size() != gpu.components.size()) {
      throw std::invalid_argument(
          fmt::format("UtilisationsToTidyCsv: kernel '{}' has {} "
                      "utilisations for {} components",
                      name, u.size(), gpu.components.size()));
    }
    out += CsvFieldKeepingEdgeSpaces(name);
    for (size_t i = 0; i < u.size(); ++i) {
      if (!std::isfinite(u[i])) {
        throw std::invalid_argument(
            fmt::format("UtilisationsToTidyCsv: kernel '{}' has no "
                        "utilisation for {} ({})",
                        name, gpu.components[i].component, u[i]));
      }
      out += "," + FormatG6(u[i]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
