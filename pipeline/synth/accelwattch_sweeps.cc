#include "synth/accelwattch_sweeps.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "accelwattch/static_power.h"
#include "io/json_lines.h"
#include "util/json_file.h"
#include "synth/power_sensor.h"
#include "util/errors.h"
#include "util/rng.h"

namespace wattcal {

namespace {

bool IsFinite(double v) { return std::isfinite(v); }

}  // namespace

bool VirtualVoltaSpec::Check(std::string* error) const {
  auto fail = [error](const std::string& message) {
    *error = message;
    return false;
  };
  if (sm_count < 1) return fail(fmt::format("sm_count = {} must be >= 1", sm_count));
  if (warp_size < 2) return fail(fmt::format("warp_size = {} must be >= 2", warp_size));
  if (half_warp_lanes < 1 || 2 * half_warp_lanes != warp_size) {
    return fail(fmt::format("half_warp_lanes = {} must be half the warp size {}", half_warp_lanes,
                            warp_size));
  }
  if (!(reference_f_core_mhz > 0.0) || !IsFinite(reference_f_core_mhz)) {
    return fail(fmt::format("reference_f_core_mhz = {} must be > 0", reference_f_core_mhz));
  }
  if (f_core_levels_mhz.empty()) return fail("f_core_levels_mhz is empty");
  for (size_t i = 0; i < f_core_levels_mhz.size(); ++i) {
    const double f = f_core_levels_mhz[i];
    if (!(f > 0.0) || !IsFinite(f) || (i > 0 && !(f > f_core_levels_mhz[i - 1]))) {
      return fail(fmt::format("f_core_levels_mhz[{}] = {} must be > 0 and ascending", i, f));
    }
  }
  const std::pair<const char*, double> non_negative[] = {{"constant_power_w", constant_power_w},
                                                         {"chip_static_w", chip_static_w},
                                                         {"sm_static_w", sm_static_w},
                                                         {"idle_sm_w", idle_sm_w},
                                                         {"noise_rel", noise_rel}};
  for (const auto& [name, v] : non_negative) {
    if (!(v >= 0.0) || !IsFinite(v)) return fail(fmt::format("{} = {} must be >= 0", name, v));
  }
  std::set<std::string> unit_names;
  for (const VoltaUnit& u : units) {
    if (!(u.lane_static_w >= 0.0) || !IsFinite(u.lane_static_w)) {
      return fail(
          fmt::format("units[{}].lane_static_w = {} must be >= 0", u.unit, u.lane_static_w));
    }
    if (!unit_names.insert(u.unit).second) return fail("units: '" + u.unit + "' appears twice");
  }
  if (!(issue_energy_pj >= 0.0) || !IsFinite(issue_energy_pj)) {
    return fail(fmt::format("issue_energy_pj = {} must be >= 0", issue_energy_pj));
  }
  if (issue_metric.empty() != (issue_energy_pj == 0.0)) {
    return fail(
        fmt::format("issue_metric = '{}' and issue_energy_pj = {} go together: a metric "
                    "needs an energy > 0 and an energy needs a metric",
                    issue_metric, issue_energy_pj));
  }
  std::set<std::string> op_names, metrics;
  if (!issue_metric.empty()) metrics.insert(issue_metric);
  for (const VoltaOp& o : ops) {
    if (!o.metric.empty() && !metrics.insert(o.metric).second) {
      return fail(
          fmt::format("ops[{}].metric = '{}' is already the metric of another op or the "
                      "issue_metric; every counter counts one kind of event",
                      o.op, o.metric));
    }
    if (!unit_names.count(o.unit)) {
      return fail(fmt::format("ops[{}].unit = '{}' is not one of the units", o.op, o.unit));
    }
    if (!(o.energy_pj >= 0.0) || !IsFinite(o.energy_pj)) {
      return fail(fmt::format("ops[{}].energy_pj = {} must be >= 0", o.op, o.energy_pj));
    }
    if (!op_names.insert(o.op).second) return fail("ops: '" + o.op + "' appears twice");
  }
  std::set<std::string> category_names;
  for (const VoltaCategory& c : categories) {
    if (!(c.half_warp_weight >= 0.0 && c.half_warp_weight <= 1.0)) {
      return fail(fmt::format("categories[{}].half_warp_weight = {} must be in [0, 1]", c.category,
                              c.half_warp_weight));
    }
    if (c.category.empty() || !category_names.insert(c.category).second) {
      return fail("categories: '" + c.category + "' is empty or appears twice");
    }
  }
  std::set<std::string> bench_names;
  for (const VoltaBenchmark& b : benchmarks) {
    if (!bench_names.insert(b.benchmark).second) {
      return fail("benchmarks: '" + b.benchmark + "' appears twice");
    }
    if (!b.category.empty() && !category_names.count(b.category)) {
      return fail(fmt::format("benchmarks[{}].category = '{}' is not one of the categories",
                              b.benchmark, b.category));
    }
    if (!(b.issue_w_per_sm >= 0.0) || !IsFinite(b.issue_w_per_sm)) {
      return fail(fmt::format("benchmarks[{}].issue_w_per_sm = {} must be >= 0", b.benchmark,
                              b.issue_w_per_sm));
    }
    for (const auto& [op, n] : b.ops_per_cycle_per_sm) {
      if (!op_names.count(op)) {
        return fail(
            fmt::format("benchmarks[{}].ops_per_cycle_per_sm names '{}', not one of the "
                        "ops",
                        b.benchmark, op));
      }
      if (!(n >= 0.0) || !IsFinite(n)) {
        return fail(fmt::format("benchmarks[{}].ops_per_cycle_per_sm[{}] = {} must be >= 0",
                                b.benchmark, op, n));
      }
    }
  }
  if (!gating_benchmark.empty() && !bench_names.count(gating_benchmark)) {
    return fail("gating_benchmark = '" + gating_benchmark + "' is not one of the benchmarks");
  }
  return true;
}

const VoltaBenchmark* VirtualVoltaSpec::FindBenchmark(const std::string& name) const {
  for (const VoltaBenchmark& b : benchmarks) {
    if (b.benchmark == name) return &b;
  }
  return nullptr;
}

double VirtualVoltaSpec::HalfWarpWeight(const std::string& category) const {
  for (const VoltaCategory& c : categories) {
    if (c.category == category) return c.half_warp_weight;
  }
  return 0.0;
}

double VirtualVoltaSpec::IssuedPerCycle(const VoltaBenchmark& b) const {
  if (issue_energy_pj <= 0.0) return 0.0;
  return b.issue_w_per_sm / (issue_energy_pj * 1e-12 * reference_f_core_mhz * 1e6);
}

std::map<std::string, double> VirtualVoltaSpec::TrueEnergyPerEventPj() const {
  std::map<std::string, double> energy;
  for (const VoltaOp& o : ops) {
    if (!o.metric.empty()) energy[o.metric] = o.energy_pj;
  }
  if (!issue_metric.empty()) energy[issue_metric] = issue_energy_pj;
  return energy;
}

VirtualVoltaSpec ReadVirtualVoltaSpec(const std::string& path, CampaignSpec* campaign,
                                      std::string* gpu_description_path,
                                      std::string* ubench_cfg_path) {
  *campaign = ReadCampaignSpec(path, gpu_description_path);
  const GpuDescription gpu = ReadGpuDescription(*gpu_description_path);
  const nlohmann::json j = ReadJsonFile(path, "spec file");
  VirtualVoltaSpec s;
  s.sm_count = gpu.sm_count;
  s.warp_size = gpu.warp_size;
  s.reference_f_core_mhz = gpu.default_core_mhz;
  s.f_mem_mhz = gpu.default_mem_mhz;
  std::string field;
  try {
    field = "name";
    s.name = j.value("name", std::string("virtual-volta"));
    s.about = j.value("about", std::string());
    field = "half_warp_lanes";
    s.half_warp_lanes = j.value("half_warp_lanes", s.warp_size / 2);
    field = "f_core_levels_mhz";
    s.f_core_levels_mhz = j.at("f_core_levels_mhz").get<std::vector<double>>();
    field = "constant_power_w";
    s.constant_power_w = j.at("constant_power_w").get<double>();
    field = "chip_static_w";
    s.chip_static_w = j.at("chip_static_w").get<double>();
    field = "sm_static_w";
    s.sm_static_w = j.at("sm_static_w").get<double>();
    field = "idle_sm_w";
    s.idle_sm_w = j.at("idle_sm_w").get<double>();
    field = "noise_rel";
    s.noise_rel = j.value("noise_rel", 0.0);
    field = "gating_benchmark";
    s.gating_benchmark = j.value("gating_benchmark", std::string());
    field = "ubench_cfg";
    s.ubench_cfg = j.value("ubench_cfg", std::string());
    field = "issue_energy_pj";
    s.issue_energy_pj = j.value("issue_energy_pj", 0.0);
    field = "issue_metric";
    s.issue_metric = j.value("issue_metric", std::string());
    field = "energy_estimates";
    s.energy_estimates = j.value("energy_estimates", std::string());
    field = "units";
    for (const auto& u : j.at("units")) {
      s.units.push_back({u.at("unit").get<std::string>(), u.at("lane_static_w").get<double>()});
    }
    field = "ops";
    for (const auto& o : j.at("ops")) {
      s.ops.push_back({o.at("op").get<std::string>(), o.at("unit").get<std::string>(),
                       o.at("energy_pj").get<double>(), o.value("voltage_scaled", true),
                       o.value("metric", std::string())});
    }
    field = "categories";
    for (const auto& c : j.at("categories")) {
      s.categories.push_back(
          {c.at("category").get<std::string>(), c.at("half_warp_weight").get<double>()});
    }
    field = "benchmarks";
    for (const auto& b : j.at("benchmarks")) {
      VoltaBenchmark vb;
      vb.benchmark = b.at("benchmark").get<std::string>();
      vb.category = b.value("category", std::string());
      vb.issue_w_per_sm = b.at("issue_w_per_sm").get<double>();
      vb.ops_per_cycle_per_sm = b.at("ops_per_cycle_per_sm").get<std::map<std::string, double>>();
      s.benchmarks.push_back(vb);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, 0, field, std::string("bad virtual Volta spec: ") + e.what());
  }
  std::string error;
  if (!s.Check(&error)) throw InputError(path, 0, "", error);
  const boost::filesystem::path folder = boost::filesystem::path(path).parent_path();
  *ubench_cfg_path =
      s.ubench_cfg.empty() ? std::string() : (folder / s.ubench_cfg).lexically_normal().string();
  if (!s.energy_estimates.empty()) {
    s.energy_estimates_path = (folder / s.energy_estimates).lexically_normal().string();
  }
  return s;
}

VoltaPower VoltaTruthPower(const VirtualVoltaSpec& spec, const std::string& benchmark,
                           int active_sms, int lanes, double f_core_mhz) {
  const VoltaBenchmark* b = spec.FindBenchmark(benchmark);
  if (b == nullptr)
    throw OptionError("the virtual Volta spec defines no benchmark '" + benchmark + "'");
  const double s = f_core_mhz / spec.reference_f_core_mhz;
  const double n_sms = spec.sm_count, k = active_sms, w = spec.warp_size;
  const double m = spec.HalfWarpWeight(b->category);
  const double shape = m * HalfWarpBasis(lanes, spec.half_warp_lanes) /
                           HalfWarpBasis(spec.warp_size, spec.half_warp_lanes) +
                       (1.0 - m) * (lanes - 1.0) / (w - 1.0);
  const double lanes_eff = 1.0 + (w - 1.0) * shape;
  std::set<std::string> used_units;
  double lane_static_w = 0.0, dynamic_per_sm_w = b->issue_w_per_sm * s * s * s;
  for (const auto& [op_name, n] : b->ops_per_cycle_per_sm) {
    if (n <= 0.0) continue;
    const auto op = std::find_if(spec.ops.begin(), spec.ops.end(),
                                 [&](const VoltaOp& o) { return o.op == op_name; });
    used_units.insert(op->unit);
    const double at_ref_w =
        op->energy_pj * 1e-12 * n * spec.reference_f_core_mhz * 1e6 * lanes_eff / w;
    dynamic_per_sm_w += at_ref_w * (op->voltage_scaled ? s * s * s : s);
  }
  for (const VoltaUnit& u : spec.units) {
    if (used_units.count(u.unit)) lane_static_w += u.lane_static_w;
  }
  VoltaPower p;
  p.constant_w = spec.constant_power_w;
  if (active_sms >= 1) {
    p.static_w = (spec.chip_static_w + (n_sms - k) * spec.idle_sm_w +
                  k * (spec.sm_static_w + lane_static_w * lanes_eff)) *
                 s;
    p.dynamic_w = k * dynamic_per_sm_w;
  }
  return p;
}

namespace {

// The parts of an energy-estimate file the truth needs: per component its events, E-hat and
// whether it is voltage-scaled.
class EnergyEstimatesReader : public JsonFieldReader {
 public:
  EnergyEstimatesReader(const std::string& path, const std::string& text)
      : JsonFieldReader(path, text) {}

  std::map<std::string, double> ScalingFactors(const VirtualVoltaSpec& spec,
                                               const nlohmann::json& j) const {
    if (!j.is_object()) Fail("", "expected a JSON object (format wattcal-accelwattch-energies)");
    if (String(j, "", "format") != "wattcal-accelwattch-energies") {
      Fail("format", "expected \"wattcal-accelwattch-energies\"");
    }
    const std::map<std::string, double> truth = spec.TrueEnergyPerEventPj();
    std::map<std::string, bool> scaled_of;
    for (const VoltaOp& o : spec.ops) {
      if (!o.metric.empty()) scaled_of[o.metric] = o.voltage_scaled;
    }
    if (!spec.issue_metric.empty()) scaled_of[spec.issue_metric] = true;
    std::map<std::string, double> x;
    const Json& components = Array(j, "", "components");
    for (size_t i = 0; i < components.size(); ++i) {
      const std::string at = fmt::format("components[{}]", i);
      const Json& c = components[i];
      if (!c.is_object()) Fail(at, "expected an object");
      const std::string name = String(c, at, "component");
      const double estimate_pj = Number(c, at, "energy_per_event_pj");
      if (!(estimate_pj > 0.0)) {
        Fail(Join(at, "energy_per_event_pj"),
             fmt::format("component {}: {} pJ must be > 0", name, estimate_pj));
      }
      const Json& events = Array(c, at, "events");
      if (events.empty()) Fail(Join(at, "events"), "component " + name + " has no events");
      double true_pj = 0.0;
      for (size_t e = 0; e < events.size(); ++e) {
        const std::string event_at = fmt::format("{}.events[{}]", at, e);
        if (!events[e].is_string()) Fail(event_at, "expected a metric name");
        const std::string event = events[e].get<std::string>();
        const auto it = truth.find(event);
        if (it == truth.end()) {
          Fail(event_at, fmt::format("component {}: '{}' is not a counter of the virtual GPU {} "
                                     "(an op's metric or the issue_metric)",
                                     name, event, spec.name));
        }
        if (e > 0 && it->second != true_pj) {
          Fail(event_at, fmt::format("component {}: its events have different true energies "
                                     "({} pJ and {} pJ), so no single scaling factor is true",
                                     name, true_pj, it->second));
        }
        true_pj = it->second;
        if (c.contains("voltage_scaled") && Bool(c, at, "voltage_scaled") != scaled_of.at(event)) {
          Fail(Join(at, "voltage_scaled"),
               fmt::format("component {}: the truth's '{}' is {}voltage-scaled", name, event,
                           scaled_of.at(event) ? "" : "not "));
        }
      }
      if (!x.emplace(name, true_pj / estimate_pj).second) {
        Fail(Join(at, "component"), "component " + name + " appears twice");
      }
    }
    return x;
  }
};

// A count or clock as ncu prints it with base units: a whole number without digit grouping, or
// the shortest text that reads back exactly.
std::string CounterText(double v) {
  if (v == std::floor(v) && std::abs(v) < 9007199254740992.0) return fmt::format("{:.0f}", v);
  return fmt::format("{:.17g}", v);
}

// The Nsight Compute raw page the virtual GPU's profiler run writes (FORMATS.md §2.2): the
// leading ID/process/kernel columns, then one column per metric in name order; the second
// line is the units row (--print-units base).
class NcuRawPage {
 public:
  explicit NcuRawPage(const VirtualVoltaSpec& spec) : spec_(spec) {
    units_ = {{"gpu__time_duration.sum", "nsecond"},
              {"launch__block_size", ""},
              {"launch__grid_size", ""},
              {"sm__cycles_elapsed.avg", "cycle"},
              {"sm__cycles_elapsed.avg.per_second", "cycle/second"}};
    for (const VoltaOp& o : spec.ops) {
      if (!o.metric.empty()) {
        units_[o.metric] = o.metric.find("sectors") != std::string::npos ? "sector" : "inst";
      }
    }
    if (!spec.issue_metric.empty()) units_[spec.issue_metric] = "inst";
    text_ =
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
        "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\"";
    std::string units = "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\"";
    for (const auto& [metric, unit] : units_) {
      text_ += ",\"" + metric + "\"";
      units += ",\"" + unit + "\"";
    }
    text_ += "\n" + units + "\n";
  }

  // One launch of `c`'s benchmark at `f_core_mhz` lasting `duration_us` (the window).
  void AddLaunch(const std::string& kernel, const UbenchConfig& c, double f_core_mhz,
                 int64_t duration_us) {
    const VoltaBenchmark& b = *spec_.FindBenchmark(c.name);
    // f * T in cycles and the per-SM-cycle rates' multiplier: f_hz * T * k.
    const double cycles = f_core_mhz * static_cast<double>(duration_us);
    const double sm_cycles = cycles * c.active_sms;
    std::map<std::string, double> value = {
        {"gpu__time_duration.sum", static_cast<double>(duration_us) * 1000.0},
        {"launch__block_size", kBlockThreads},
        {"launch__grid_size", static_cast<double>(c.active_sms)},
        {"sm__cycles_elapsed.avg", cycles},
        {"sm__cycles_elapsed.avg.per_second", f_core_mhz * 1e6}};
    const double lane_fraction = static_cast<double>(c.lanes_per_warp) / spec_.warp_size;
    for (const VoltaOp& o : spec_.ops) {
      if (o.metric.empty()) continue;
      const auto n = b.ops_per_cycle_per_sm.find(o.op);
      const double per_cycle = n == b.ops_per_cycle_per_sm.end() ? 0.0 : n->second;
      value[o.metric] = static_cast<double>(std::llround(per_cycle * lane_fraction * sm_cycles));
    }
    if (!spec_.issue_metric.empty()) {
      value[spec_.issue_metric] =
          static_cast<double>(std::llround(spec_.IssuedPerCycle(b) * sm_cycles));
    }
    text_ += fmt::format(
        "\"{}\",\"1\",\"ubench\",\"virtual-gv100\",\"{}\",\"1\",\"7\","
        "\"({}, 1, 1)\",\"({}, 1, 1)\",\"0\",\"7.0\"",
        launches_++, kernel, kBlockThreads, c.active_sms);
    for (const auto& [metric, unit] : units_) text_ += ",\"" + CounterText(value.at(metric)) + "\"";
    text_ += "\n";
  }

  const std::string& text() const { return text_; }

 private:
  // Threads per block of the microbenchmarks (one block per active SM).
  static constexpr int kBlockThreads = 256;
  const VirtualVoltaSpec& spec_;
  std::map<std::string, std::string> units_;  // metric -> unit, in name order
  std::string text_;
  int64_t launches_ = 0;
};

std::string KernelName(const UbenchConfig& c, double f_core_mhz) {
  return fmt::format("{}_sm{}_l{}_f{:g}", c.name, c.active_sms, c.lanes_per_warp, f_core_mhz);
}

// What the truth says AccelWattch's §4 methods should recover.
nlohmann::json TruthJson(const VirtualVoltaSpec& spec, const std::vector<UbenchConfig>& ubench) {
  const double fr = spec.reference_f_core_mhz;
  const int n = spec.sm_count, w = spec.warp_size;
  nlohmann::json j;
  j["about"] =
      "Truth of wattcal-synth --accelwattch-sweeps (pipeline/synth/accelwattch_sweeps.h). All "
      "_w values are at reference_f_core_mhz. idle_sm_w_eq10 is what AccelWattch Eqs. 6-8 "
      "recover: with chip-wide power G on whenever an SM is active, Eq. 10 reproduces the truth "
      "exactly with per-idle-SM power idle_sm_w + G / N. gating.* are the §4.3 increments of "
      "total power, static_*_w the chip static power (tau f of Eq. 3) at N SMs. "
      "true_energy_per_event_pj is the energy E_i of one event of each counter of counters.csv "
      "(pJ at the reference voltage; V ~ f_core, so a voltage-scaled event costs E_i (f / "
      "f_ref)^2 at clock f); expected_scaling_factors are x_i = E_i / E-hat_i for the components "
      "of the energy-estimate file, what AccelWattch Eqs. 12-14 should recover. "
      "issued_per_cycle_per_sm is r_b, the benchmark's warp instructions per SM cycle.";
  j["name"] = spec.name;
  j["reference_f_core_mhz"] = fr;
  j["sm_count"] = n;
  j["warp_size"] = w;
  j["half_warp_lanes"] = spec.half_warp_lanes;
  j["p_const_w"] = spec.constant_power_w;
  j["chip_static_w"] = spec.chip_static_w;
  j["sm_static_w"] = spec.sm_static_w;
  j["idle_sm_w"] = spec.idle_sm_w;
  j["idle_sm_w_eq10"] = spec.idle_sm_w + spec.chip_static_w / n;
  j["noise_rel"] = spec.noise_rel;
  j["voltage_model"] = "V proportional to f_core (Eq. 3)";
  j["voltage_reference_f_core_mhz"] = fr;
  j["true_energy_per_event_pj"] = spec.TrueEnergyPerEventPj();
  if (!spec.energy_estimates_path.empty()) {
    j["energy_estimates"] = spec.energy_estimates;
    j["expected_scaling_factors"] = ExpectedScalingFactors(spec, spec.energy_estimates_path);
  }

  std::set<std::string> names;
  for (const UbenchConfig& c : ubench) names.insert(c.name);
  nlohmann::json benchmarks = nlohmann::json::object();
  for (const std::string& name : names) {
    const VoltaBenchmark* b = spec.FindBenchmark(name);
    const VoltaPower full = VoltaTruthPower(spec, name, n, w, fr);
    const VoltaPower one = VoltaTruthPower(spec, name, n, 1, fr);
    // AccelWattch Eq. 3 coefficients at N SMs, a full warp: tau f = static, beta f^3 =
    // voltage-scaled dynamic; unscaled dynamic (DRAM) is linear in f too and lands in tau.
    const VoltaPower full_2f = VoltaTruthPower(spec, name, n, w, 2.0 * fr);
    // P(2f) - P_c = 8 beta f^3 + 2 tau f, P(f) - P_c = beta f^3 + tau f.
    const double a = full.total_w() - full.constant_w, a2 = full_2f.total_w() - full_2f.constant_w;
    const double beta_f3 = (a2 - 2.0 * a) / 6.0;
    benchmarks[name] = {{"category", b->category},
                        {"half_warp_weight", spec.HalfWarpWeight(b->category)},
                        {"issued_per_cycle_per_sm", spec.IssuedPerCycle(*b)},
                        {"power_full_warp_w", full.total_w()},
                        {"static_first_lane_w", one.static_w},
                        {"static_full_warp_w", full.static_w},
                        {"beta_w_per_mhz3", beta_f3 / (fr * fr * fr)},
                        {"tau_w_per_mhz", (a - beta_f3) / fr}};
  }
  j["benchmarks"] = benchmarks;

  nlohmann::json categories = nlohmann::json::object();
  for (const VoltaCategory& c : spec.categories) {
    const double m = c.half_warp_weight;
    nlohmann::json sweeps = nlohmann::json::array();
    for (const std::string& name : names) {
      const VoltaBenchmark* b = spec.FindBenchmark(name);
      if (b->category != c.category) continue;
      std::set<int> lanes;
      for (const UbenchConfig& u : ubench) {
        if (u.name == name && u.active_sms == n) lanes.insert(u.lanes_per_warp);
      }
      if (lanes.size() >= 3) sweeps.push_back(name);
    }
    categories[c.category] = {
        {"half_warp_weight", m},
        {"expected_model", m >= 0.75 ? "half_warp" : (m <= 0.25 ? "linear" : "either")},
        {"lane_sweep_benchmarks", sweeps}};
  }
  j["categories"] = categories;

  if (!spec.gating_benchmark.empty()) {
    const std::string& g = spec.gating_benchmark;
    auto total = [&](int k, int y) { return VoltaTruthPower(spec, g, k, y, fr).total_w(); };
    const double first_sm = total(1, 1) - spec.constant_power_w;
    const double add_sm = total(2, 1) - total(1, 1);
    const double add_lane = (total(n, 2) - total(n, 1)) / n;
    nlohmann::json gating = {
        {"benchmark", g},
        {"first_sm_w", first_sm},
        {"add_sm_w", add_sm},
        {"first_to_add_sm_ratio", first_sm / add_sm},
        {"first_lane_per_sm_w", add_sm},
        {"add_lane_per_sm_w", add_lane},
        {"first_to_add_lane_ratio", add_sm / add_lane},
        {"sm_all_vs_1_increase_pct", 100.0 * (total(n, 1) / total(1, 1) - 1.0)}};
    if (8 <= spec.half_warp_lanes) {
      gating["lanes_8_vs_1_increase_pct"] = 100.0 * (total(n, 8) / total(n, 1) - 1.0);
    }
    j["gating"] = gating;
  }
  return j;
}

}  // namespace

std::map<std::string, double> ExpectedScalingFactors(const VirtualVoltaSpec& spec,
                                                     const std::string& estimates_path) {
  std::ifstream in(estimates_path, std::ios::binary);
  if (!in)
    throw InputError(
        estimates_path, 0, "",
        std::string("cannot open the energy-estimate file") + ": " + std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const nlohmann::json j = ParseJsonText(estimates_path, text);
  return EnergyEstimatesReader(estimates_path, text).ScalingFactors(spec, j);
}

AccelWattchSweepSummary WriteAccelWattchSweeps(const VirtualVoltaSpec& spec,
                                               const CampaignSpec& campaign,
                                               const std::vector<UbenchConfig>& ubench,
                                               unsigned seed, const std::string& out_dir,
                                               OutputSet* outputs) {
  std::string error;
  if (!spec.Check(&error)) throw OptionError("virtual Volta spec: " + error);
  if (!campaign.Check(&error)) throw OptionError(error);
  for (const UbenchConfig& c : ubench) {
    if (spec.FindBenchmark(c.name) == nullptr) {
      throw OptionError(fmt::format("ubench line {}: the spec {} defines no benchmark '{}'", c.line,
                                    spec.name, c.name));
    }
    if (c.active_sms > spec.sm_count || c.lanes_per_warp > spec.warp_size) {
      throw OptionError(fmt::format("ubench line {}: {} SMs x {} lanes exceeds the GPU's {} x {}",
                                    c.line, c.active_sms, c.lanes_per_warp, spec.sm_count,
                                    spec.warp_size));
    }
  }
  Rng rng(seed);
  PowerSensorSimulator sim(campaign, &rng);
  std::string windows = "kernel,start_us,end_us\n";
  std::string sweep =
      "kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,"
      "iterations\n";
  std::string truth = "kernel,true_power_w,true_constant_w,true_static_w,true_dynamic_w\n";
  NcuRawPage counters(spec);
  AccelWattchSweepSummary summary;
  for (auto f = spec.f_core_levels_mhz.rbegin(); f != spec.f_core_levels_mhz.rend(); ++f) {
    for (const UbenchConfig& c : ubench) {
      const VoltaPower p = VoltaTruthPower(spec, c.name, c.active_sms, c.lanes_per_warp, *f);
      const double kernel_w = p.total_w() * (1.0 + spec.noise_rel * rng.Normal());
      // The harness's launch jitter: the gap varies by up to one sensor refresh period, so
      // kernels do not start in a fixed phase of the sensor's refresh grid.
      const double gap_s = campaign.gap_s + rng.Uniform(0.0, campaign.sensor_refresh_ms * 1e-3);
      sim.Run(gap_s, spec.constant_power_w, *f, spec.f_mem_mhz);
      const double start_s = sim.now_s();
      sim.Run(campaign.kernel_duration_s, kernel_w, *f, spec.f_mem_mhz);
      const std::string kernel = KernelName(c, *f);
      const int64_t start_us = std::llround((kCampaignEpochStartS + start_s) * 1e6);
      const int64_t end_us = std::llround((kCampaignEpochStartS + sim.now_s()) * 1e6);
      windows += fmt::format("{},{},{}\n", kernel, start_us, end_us);
      counters.AddLaunch(kernel, c, *f, end_us - start_us);
      sweep += fmt::format("{},{},{},{},{},{:g},{:g},{}\n", kernel, c.name,
                           spec.FindBenchmark(c.name)->category, c.active_sms, c.lanes_per_warp, *f,
                           spec.f_mem_mhz, c.iterations);
      truth += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.9g}\n", kernel, p.total_w(), p.constant_w,
                           p.static_w, p.dynamic_w);
      ++summary.kernels;
    }
  }
  sim.Run(campaign.gap_s, spec.constant_power_w, spec.f_core_levels_mhz.front(), spec.f_mem_mhz);
  summary.samples = sim.samples();
  outputs->StageText(out_dir + "/power_log.csv", sim.log());
  outputs->StageText(out_dir + "/windows.csv", windows);
  outputs->StageText(out_dir + "/counters.csv", counters.text());
  outputs->StageText(out_dir + "/sweep.csv", sweep);
  outputs->StageText(out_dir + "/truth_power.csv", truth);
  outputs->StageText(out_dir + "/truth_accelwattch.json", DumpJson(TruthJson(spec, ubench)));
  return summary;
}

const std::vector<std::string>& AccelWattchSweepFiles() {
  static const std::vector<std::string> files = {"power_log.csv",   "windows.csv",
                                                 "counters.csv",    "sweep.csv",
                                                 "truth_power.csv", "truth_accelwattch.json"};
  return files;
}

}  // namespace wattcal
