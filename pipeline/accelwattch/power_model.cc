#include "accelwattch/power_model.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "util/csv_field.h"
#include "util/errors.h"

namespace wattcal {

AccelWattchBreakdown EvaluateAccelWattch(const AccelWattchEnergies& energies,
                                         const AccelWattchFixedTerms& fixed,
                                         const std::vector<double>& x, const KernelActivity& kernel,
                                         const std::string& activity_path, double f_core_mhz,
                                         double f_mem_mhz) {
  auto fail = [&](const std::string& field, const std::string& message) {
    throw InputError(activity_path, kernel.line, field,
                     fmt::format("kernel '{}': {}", kernel.kernel, message));
  };
  if (x.size() != energies.components.size()) {
    throw std::invalid_argument(
        fmt::format("EvaluateAccelWattch: {} scaling factors for {} components", x.size(),
                    energies.components.size()));
  }
  if (!(f_core_mhz > 0.0))
    throw std::invalid_argument(fmt::format("EvaluateAccelWattch: f_core_mhz {}", f_core_mhz));
  const int n = fixed.num_sms;
  if (kernel.active_sms > n) {
    fail("active_sms",
         fmt::format("{} active SMs, but the model's GPU has {}", kernel.active_sms, n));
  }
  if (kernel.lanes_per_warp > fixed.warp_size) {
    fail("lanes_per_warp",
         fmt::format("{} lanes, but a warp has {}", kernel.lanes_per_warp, fixed.warp_size));
  }
  const CategoryStaticTerm* term = fixed.StaticFor(kernel.category);
  if (term == nullptr) {
    fail("category", kernel.category.empty()
                         ? "no instruction-mix category, and the model has no default category "
                           "(calibrate with --default-category)"
                         : fmt::format("category '{}' has no static model in {}", kernel.category,
                                       fixed.static_source));
  }
  const double f_mem_target = f_mem_mhz > 0.0 ? f_mem_mhz : kernel.f_mem_mhz;
  for (const double f : {f_core_mhz, kernel.f_core_mhz, energies.reference_f_core_mhz}) {
    if (!fixed.VoltageDefinedAt(f)) {
      fail("f_core_mhz", fmt::format("{} MHz lies outside the voltage curve's {}-{} MHz ({})", f,
                                     fixed.voltage_f_core_mhz.front(),
                                     fixed.voltage_f_core_mhz.back(), fixed.voltage_source));
    }
  }

  AccelWattchBreakdown b;
  b.static_category = term->category;
  // AccelWattch Eq. 12's dynamic terms: x_i * a_i * E-hat_i / T, with E-hat_i at the target voltage
  // (V ~ f, AccelWattch §4.2: (f / f_ref)^2 for voltage-scaled components) and the event rate
  // carried to the target clock at a constant activity per cycle.
  for (size_t i = 0; i < energies.components.size(); ++i) {
    const EnergyComponent& c = energies.components[i];
    double events = 0.0;
    for (const std::string& e : c.events) {
      const auto it = kernel.events.find(e);
      if (it == kernel.events.end()) {
        fail(e, fmt::format("no count for counter '{}' (component {})", e, c.component));
      }
      events += it->second;
    }
    double rate_per_s = events / kernel.elapsed_s;
    if (c.clock == "core") {
      rate_per_s *= f_core_mhz / kernel.f_core_mhz;
    } else if (f_mem_target != kernel.f_mem_mhz) {
      if (!(kernel.f_mem_mhz > 0.0)) {
        fail("f_mem_mhz", fmt::format("component {} follows the memory clock, which this kernel's "
                                      "activity does not give",
                                      c.component));
      }
      rate_per_s *= f_mem_target / kernel.f_mem_mhz;
    }
    double energy_j = c.energy_per_event_pj * 1e-12;
    if (c.voltage_scaled) {
      // AccelWattch Eq. 2's C V^2 per event: (V / V_ref)^2, (f / f_ref)^2 under V ~ f.
      const double v = fixed.VoltageRatio(f_core_mhz, energies.reference_f_core_mhz);
      energy_j *= v * v;
    }
    const double p = x[i] * energy_j * rate_per_s;
    b.dynamic_w.push_back(p);
    b.dynamic_total_w += p;
  }
  // AccelWattch Eq. 9 and AccelWattch Eq. 10's static term: P_static,yLanes,N / N per active SM,
  // static ~ V (~ f).
  const double static_all_sms_w =
      AccelWattchFixedTerms::StaticAllSmsW(*term, kernel.lanes_per_warp, fixed.half_warp_lanes);
  b.static_w = static_all_sms_w / n * kernel.active_sms *
               fixed.VoltageRatio(f_core_mhz, fixed.static_f_core_mhz);
  // AccelWattch Eq. 10's idle term: P_perIdleSM (N - k), static ~ V (~ f).
  b.idle_w = fixed.p_idle_sm_w * (n - kernel.active_sms) *
             fixed.VoltageRatio(f_core_mhz, fixed.idle_f_core_mhz);
  b.const_w = fixed.p_const_w;
  return b;
}

ComponentTable BuildComponentTable(const ActivityTable& activity,
                                   const AccelWattchEnergies& energies,
                                   const AccelWattchFixedTerms& fixed) {
  ComponentTable t;
  t.path = activity.path;
  t.format = "activity";
  t.components = energies.ComponentNames();
  const std::vector<double> ones(energies.components.size(), 1.0);
  for (const KernelActivity& k : activity.kernels) {
    if (!(k.mean_power_w > 0.0)) {
      throw InputError(
          activity.path, k.line, "mean_power_w",
          fmt::format("kernel '{}' has no measured power (ingest it with --power-log and "
                      "--windows)",
                      k.kernel));
    }
    const AccelWattchBreakdown b =
        EvaluateAccelWattch(energies, fixed, ones, k, activity.path, k.f_core_mhz, k.f_mem_mhz);
    t.kernels.push_back(k.kernel);
    t.lines.push_back(k.line);
    t.dynamic_w.push_back(b.dynamic_w);
    t.const_w.push_back(b.const_w);
    t.static_w.push_back(b.static_w);
    t.idle_w.push_back(b.idle_w);
    t.measured_w.push_back(k.mean_power_w);
  }
  return t;
}

std::vector<AccelWattchPrediction> PredictAccelWattchActivity(
    const AccelWattchModel& model, const ActivityTable& activity,
    const std::vector<double>& f_core_mhz, const std::vector<double>& f_mem_mhz) {
  AccelWattchEvaluationGrid grid;
  grid.f_core_mhz = f_core_mhz;
  grid.f_mem_mhz = f_mem_mhz;
  return PredictAccelWattchActivity(model, activity, grid);
}

std::vector<AccelWattchPrediction> PredictAccelWattchActivity(
    const AccelWattchModel& model, const ActivityTable& activity,
    const AccelWattchEvaluationGrid& grid) {
  if (!model.has_terms) {
    throw OptionError(
        "this AccelWattch model scales per-kernel component tables only (it has no energy "
        "estimates and fixed terms); calibrate it with --activity to predict from activity");
  }
  for (double f : grid.f_core_mhz) {
    if (!(f > 0.0)) throw OptionError(fmt::format("--f-core-mhz {}: a clock must be > 0", f));
  }
  for (double f : grid.f_mem_mhz) {
    if (!(f > 0.0)) throw OptionError(fmt::format("--f-mem-mhz {}: a clock must be > 0", f));
  }
  for (int k : grid.active_sms) {
    if (k < 1 || k > model.fixed.num_sms) {
      throw OptionError(fmt::format("--active-sms {}: must lie in [1, {}] (the model's GPU)", k,
                                    model.fixed.num_sms));
    }
  }
  for (int y : grid.lanes_per_warp) {
    if (y < 1 || y > model.fixed.warp_size) {
      throw OptionError(
          fmt::format("--lanes-per-warp {}: must lie in [1, {}]", y, model.fixed.warp_size));
    }
  }
  std::vector<AccelWattchPrediction> out;
  for (int index = 0; index < activity.num_kernels(); ++index) {
    const KernelActivity& kernel = activity.kernels[index];
    auto own = [](const auto& list, auto value) {
      using T = typename std::decay_t<decltype(list)>::value_type;
      return list.empty() ? std::vector<T>{static_cast<T>(value)} : list;
    };
    for (int k : own(grid.active_sms, kernel.active_sms)) {
      for (int y : own(grid.lanes_per_warp, kernel.lanes_per_warp)) {
        // The what-if kernel: AccelWattch Eq. 10's k and y; its activity per active SM kept.
        KernelActivity what_if = kernel;
        what_if.active_sms = k;
        what_if.lanes_per_warp = y;
        if (k != kernel.active_sms) {
          for (auto& [counter, count] : what_if.events)
            count *= static_cast<double>(k) / kernel.active_sms;
        }
        for (double fc : own(grid.f_core_mhz, kernel.f_core_mhz)) {
          for (double fm : own(grid.f_mem_mhz, kernel.f_mem_mhz)) {
            AccelWattchPrediction p;
            p.kernel = index;
            p.f_core_mhz = fc;
            p.f_mem_mhz = fm;
            p.active_sms = k;
            p.lanes_per_warp = y;
            p.at_measured_pair = fc == kernel.f_core_mhz && fm == kernel.f_mem_mhz &&
                                 k == kernel.active_sms && y == kernel.lanes_per_warp;
            p.breakdown = EvaluateAccelWattch(model.energies, model.fixed, model.x, what_if,
                                              activity.path, fc, fm);
            out.push_back(std::move(p));
          }
        }
      }
    }
  }
  return out;
}

std::string AccelWattchPredictionsToCsv(const AccelWattchModel& model,
                                        const ActivityTable& activity,
                                        const std::vector<AccelWattchPrediction>& predictions,
                                        bool breakdown) {
  std::string s =
      "kernel,benchmark,category,static_category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,"
      "predicted_w,measured_w,error_pct";
  if (breakdown) {
    s += ",const_w,static_w,idle_w,dynamic_w";
    for (const std::string& c : model.components) s += "," + CsvField(c + "_w");
  }
  s += "\n";
  for (const AccelWattchPrediction& p : predictions) {
    const KernelActivity& k = activity.kernels[p.kernel];
    const AccelWattchBreakdown& b = p.breakdown;
    const double total = b.total_w();
    s += fmt::format("{},{},{},{},{},{},{:.6g},{:.6g},{:.6f}", CsvField(k.kernel),
                     CsvField(k.benchmark), k.category, b.static_category, p.active_sms,
                     p.lanes_per_warp, p.f_core_mhz, p.f_mem_mhz, total);
    if (p.at_measured_pair && k.mean_power_w > 0.0) {
      s += fmt::format(",{:.6f},{:.4f}", k.mean_power_w,
                       100.0 * (total - k.mean_power_w) / k.mean_power_w);
    } else {
      s += ",,";
    }
    if (breakdown) {
      s += fmt::format(",{:.6f},{:.6f},{:.6f},{:.6f}", b.const_w, b.static_w, b.idle_w,
                       b.dynamic_total_w);
      for (double v : b.dynamic_w) s += fmt::format(",{:.6f}", v);
    }
    s += "\n";
  }
  return s;
}

}  // namespace wattcal
