#include "port/gpu_port.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/errors.h"
#include "util/option_rule.h"

namespace wattcal {
namespace {

// Index of the component named `name` (canonical spelling) in `layout`, or -1.
int FindComponent(const Layout& layout, const std::string& name) {
  const std::vector<std::string> names = layout.ComponentNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (CanonicalComponentName(names[i]) == CanonicalComponentName(name))
      return static_cast<int>(i);
  }
  return -1;
}

// Index of the domain named `name` in `layout`, or -1.
int FindDomain(const Layout& layout, const std::string& name) {
  for (int d = 0; d < layout.num_domains(); ++d) {
    if (layout.domains[d].name == name) return d;
  }
  return -1;
}

// The count of the component named `name` on `gpu`: its own entry, or the entries of its
// family ("SP" -> "SP ADD", "SP MUL", "SP FMA") when they all give the same count.
double CountOnGpu(const GpuDescription& gpu, const std::string& name, std::string* rule) {
  const std::string canonical = CanonicalComponentName(name);
  for (const ComponentCounters& c : gpu.components) {
    if (CanonicalComponentName(c.component) == canonical) return ComponentCount(gpu, c, rule);
  }
  double count = 0.0;
  std::string first, family_rule;
  for (const ComponentCounters& c : gpu.components) {
    const std::string member = CanonicalComponentName(c.component);
    if (member.rfind(canonical + " ", 0) != 0) continue;
    std::string member_rule;
    const double member_count = ComponentCount(gpu, c, &member_rule);
    if (first.empty()) {
      first = c.component;
      count = member_count;
      family_rule = member_rule;
    } else if (member_count != count || member_rule != family_rule) {
      throw InputError(
          gpu.path, 0, "components",
          fmt::format("{} and {} give different counts ({} {} vs. {} {}); the "
                      "model's aggregate component {} has no single count",
                      first, c.component, count, family_rule, member_count, member_rule, name));
    }
  }
  if (first.empty()) {
    throw InputError(
        gpu.path, 0, "components",
        fmt::format("no component {} (nor {} <op> entries to take its count from)", name, name));
  }
  *rule = family_rule;
  return count;
}

// The count ratio of a whole domain (the "components" constant-term rule).
double DomainCount(const GpuDescription& gpu, const std::string& domain, std::string* rule) {
  if (domain == "mem") {
    if (gpu.memory_bus_width_bits <= 0) {
      throw InputError(gpu.path, 0, "memory_bus_width_bits",
                       "missing: the memory domain's terms scale with the bus width");
    }
    *rule = "memory_bus";
    return gpu.memory_bus_width_bits;
  }
  *rule = "sms";
  return gpu.sm_count;
}

}  // namespace

const char* ConstantScalingName(ConstantScaling v) {
  switch (v) {
    case ConstantScaling::kIdlePower: return "idle-power";
    case ConstantScaling::kComponentCounts: return "components";
    case ConstantScaling::kNone: return "none";
  }
  return "?";
}

bool GpuPortOptions::Check(std::string* error) const {
  if (constant_scaling != ConstantScaling::kIdlePower) return true;
  if (!std::isfinite(base_idle_w) || base_idle_w <= 0.0)
    return RejectOption(error,
                        "base_idle_w = {} must be a measured idle power > 0 W (constant_scaling "
                        "idle-power, TPDS Eq. 11)",
                        base_idle_w);
  if (!std::isfinite(target_idle_w) || target_idle_w <= 0.0)
    return RejectOption(error,
                        "target_idle_w = {} must be a measured idle power > 0 W "
                        "(constant_scaling idle-power, TPDS Eq. 11)",
                        target_idle_w);
  return true;
}

std::string ScalesWith(const ComponentCounters& c) {
  if (!c.scales_with.empty()) return c.scales_with;
  if (c.kind == UtilisationKind::kComputeUnit) return "units";
  if (c.domain == "mem") return "memory_bus";
  if (CanonicalComponentName(c.component) == "L2") return "l2_banks";
  return "sms";
}

double ComponentCount(const GpuDescription& gpu, const ComponentCounters& c, std::string* rule) {
  *rule = ScalesWith(c);
  if (*rule == "units") return gpu.sm_count * c.units_per_sm;
  if (*rule == "sms") return gpu.sm_count;
  if (*rule == "l2_banks") {
    if (gpu.l2_banks <= 0) {
      throw InputError(gpu.path, 0, "l2_banks",
                       fmt::format("missing: component {} scales with the L2 banks", c.component));
    }
    return gpu.l2_banks;
  }
  if (gpu.memory_bus_width_bits <= 0) {
    throw InputError(
        gpu.path, 0, "memory_bus_width_bits",
        fmt::format("missing: component {} scales with the memory bus width", c.component));
  }
  return gpu.memory_bus_width_bits;
}

namespace {

// `gpu` without its optional components that the model lacks (left out when the model was
// ingested, its counters not having them); their names are added to `left_out`.
GpuDescription WithoutAbsentOptional(const GpuDescription& gpu, const PowerModel& model,
                                     std::vector<std::string>* left_out) {
  std::vector<std::string> absent;
  for (const ComponentCounters& c : gpu.components) {
    if (c.optional && FindComponent(model.layout, c.component) < 0) absent.push_back(c.component);
  }
  for (const std::string& a : absent) {
    if (std::find(left_out->begin(), left_out->end(), a) == left_out->end()) left_out->push_back(a);
  }
  return absent.empty() ? gpu : gpu.Without(absent);
}

// The target's layout, at the base model's default pair (which the target must share).
Layout TargetLayout(const PowerModel& base, const GpuDescription& target_gpu) {
  Layout layout = target_gpu.ToLayout();
  for (FrequencyDomain& domain : layout.domains) {
    const int d = FindDomain(base.layout, domain.name);
    if (d < 0) {
      throw InputError(
          target_gpu.path, 0, "components",
          fmt::format("the target has a {} domain, the base model has none", domain.name));
    }
    const double base_default = base.layout.domains[d].default_freq_mhz;
    // A fixed-frequency model (one level per domain, voltage 1) carries over to another default
    // clock: its coefficients are W per MHz at v = 1, so at the target's clock a component at
    // the same utilisation (a share of the target's peak) draws power in proportion to that
    // clock, e.g. H100 HBM3 at 2619 MHz -> H200 HBM3e at 3201 MHz. A DVFS model's voltages are
    // normalised at its default pair: the target must share it.
    const bool single_level = base.freq_levels_mhz[d].size() == 1;
    if (domain.default_freq_mhz != base_default && !single_level) {
      throw InputError(target_gpu.path, 0, "default_" + domain.name + "_mhz",
                       fmt::format("= {} MHz differs from the base model's default {} MHz; the "
                                   "model's voltages are normalised at its default pair, so the "
                                   "target must share it (only a fixed-frequency model moves to "
                                   "another clock)",
                                   domain.default_freq_mhz, base_default));
    }
  }
  return layout;
}

// The ported model's V-F levels per domain of `layout`: the base model's, but a fixed-frequency
// domain moves to the target's default clock at voltage 1.
void PortFrequencyLevels(const PowerModel& base, const Layout& layout, PowerModel* out) {
  for (const FrequencyDomain& domain : layout.domains) {
    const int d = FindDomain(base.layout, domain.name);
    if (base.freq_levels_mhz[d].size() == 1 &&
        domain.default_freq_mhz != base.layout.domains[d].default_freq_mhz) {
      out->freq_levels_mhz.push_back({domain.default_freq_mhz});
      out->voltage_rel.push_back({1.0});
    } else {
      out->freq_levels_mhz.push_back(base.freq_levels_mhz[d]);
      out->voltage_rel.push_back(base.voltage_rel[d]);
    }
  }
}

// Component c's coefficient on the target: the base model's, scaled by the ratio of the
// component's unit counts on the two GPUs (TPDS §4.6), which must scale by the same rule.
PortedCoefficient PortComponent(const PowerModel& base, const GpuDescription& base_gpu,
                                const GpuDescription& target_gpu, const ComponentCounters& c) {
  const int i = FindComponent(base.layout, c.component);
  if (i < 0) {
    throw InputError(target_gpu.path, 0, "components",
                     fmt::format("the base model (trained on {}) has no component {}; train it "
                                 "on the target's components (wattcal-port project)",
                                 base.trained_on, c.component));
  }
  const std::vector<int> base_domains = base.layout.ComponentDomains();
  const std::string& base_domain = base.layout.domains[base_domains[i]].name;
  if (base_domain != c.domain) {
    throw InputError(target_gpu.path, 0, "components",
                     fmt::format("component {} is in the {} domain here but in the {} domain "
                                 "of the base model",
                                 c.component, c.domain, base_domain));
  }
  PortedCoefficient p;
  p.name = c.component;
  p.domain = c.domain;
  std::string base_rule;
  p.target_count = ComponentCount(target_gpu, c, &p.scales_with);
  p.base_count = CountOnGpu(base_gpu, c.component, &base_rule);
  if (base_rule != p.scales_with) {
    throw InputError(base_gpu.path, 0, "components",
                     fmt::format("component {} scales with {} on {} but with {} on {}", c.component,
                                 base_rule, base_gpu.name, p.scales_with, target_gpu.name));
  }
  p.factor = p.target_count / p.base_count;
  p.base_value = base.component_w_per_mhz[i];
  p.target_value = p.base_value * p.factor;
  return p;
}

// alpha0 (term 0, static) or alpha1 (term 1, component-independent dynamic) of one domain on the
// target, scaled as options.constant_scaling says.
PortedCoefficient PortConstantTerm(int term, const FrequencyDomain& domain, const PowerModel& base,
                                   const GpuDescription& base_gpu, const GpuDescription& target_gpu,
                                   const GpuPortOptions& options) {
  const int d = FindDomain(base.layout, domain.name);
  PortedCoefficient p;
  p.name = fmt::format("alpha{}:{}", term, domain.name);
  p.domain = domain.name;
  switch (options.constant_scaling) {
    case ConstantScaling::kIdlePower:
      p.scales_with = "idle_power";
      p.base_count = options.base_idle_w;
      p.target_count = options.target_idle_w;
      break;
    case ConstantScaling::kComponentCounts: {
      std::string base_rule;
      p.base_count = DomainCount(base_gpu, domain.name, &base_rule);
      p.target_count = DomainCount(target_gpu, domain.name, &p.scales_with);
      break;
    }
    case ConstantScaling::kNone: p.scales_with = "none"; break;
  }
  p.factor = p.target_count / p.base_count;
  p.base_value = term == 0 ? base.static_w[d] : base.idle_dyn_w_per_mhz[d];
  p.target_value = p.base_value * p.factor;
  return p;
}

}  // namespace

PowerModel PortModelToGpu(const PowerModel& base, const GpuDescription& base_gpu_in,
                          const GpuDescription& target_gpu_in, const GpuPortOptions& options,
                          GpuPortReport* report) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  GpuPortReport r;
  const GpuDescription base_gpu = WithoutAbsentOptional(base_gpu_in, base, &r.left_out_optional);
  const GpuDescription target_gpu =
      WithoutAbsentOptional(target_gpu_in, base, &r.left_out_optional);
  r.base_gpu = base_gpu.name;
  r.target_gpu = target_gpu.name;
  r.constant_scaling = options.constant_scaling;
  if (options.constant_scaling == ConstantScaling::kIdlePower) {
    r.base_idle_w = options.base_idle_w;
    r.target_idle_w = options.target_idle_w;
  }
  const Layout layout = TargetLayout(base, target_gpu);

  PowerModel out;
  out.method = base.method;
  out.layout = layout;
  out.fit = base.fit;
  // The board limit and the training range travel with the model (the target's measured
  // table, when it records a limit, takes precedence at prediction).
  out.power_limit_w = base.power_limit_w;
  out.training_range = base.training_range;
  out.trained_on = fmt::format("{}{}{} to {}, TPDS §4.6, constant terms: {})", base.trained_on,
                               PowerModel::kPortedMarker, base_gpu.name, target_gpu.name,
                               ConstantScalingName(options.constant_scaling));
  PortFrequencyLevels(base, layout, &out);

  // Component coefficients.
  for (const ComponentCounters& c : target_gpu.components) {
    const PortedCoefficient p = PortComponent(base, base_gpu, target_gpu, c);
    out.component_w_per_mhz.push_back(p.target_value);
    r.components.push_back(p);
  }
  for (const std::string& name : base.layout.ComponentNames()) {
    bool kept = false;
    for (const ComponentCounters& c : target_gpu.components) {
      kept = kept || CanonicalComponentName(c.component) == CanonicalComponentName(name);
    }
    if (!kept) r.dropped_components.push_back(name);
  }

  // alpha0 (static) and alpha1 (component-independent dynamic) of each domain.
  for (int term = 0; term < 2; ++term) {
    for (const FrequencyDomain& domain : layout.domains) {
      const PortedCoefficient p =
          PortConstantTerm(term, domain, base, base_gpu, target_gpu, options);
      (term == 0 ? out.static_w : out.idle_dyn_w_per_mhz).push_back(p.target_value);
      r.constant_terms.push_back(p);
    }
  }
  if (report != nullptr) *report = r;
  return out;
}

double IdlePowerAtDefaultW(const Corpus& corpus) {
  if (!corpus.has_power()) {
    throw InputError(corpus.path, 0, "", "has no power column, so no measured idle power");
  }
  double sum = 0.0;
  int n = 0;
  for (int row : corpus.RowsAtDefault()) {
    if (corpus.util_frac.row(row).cwiseAbs().maxCoeff() != 0.0) continue;
    sum += corpus.power_w[row];
    ++n;
  }
  if (n == 0) {
    std::string pair;
    for (const FrequencyDomain& d : corpus.layout.domains) {
      pair += fmt::format("{}{}", pair.empty() ? "" : "/", d.default_freq_mhz);
    }
    throw InputError(corpus.path, 0, "",
                     fmt::format("no idle benchmark (a row with every utilisation 0) at the "
                                 "default pair {} MHz; give the idle power in W instead",
                                 pair));
  }
  return sum / n;
}

Corpus ProjectCorpus(const Corpus& corpus, const Layout& target,
                     std::vector<std::string>* dropped) {
  if (corpus.layout.num_domains() != target.num_domains()) {
    throw InputError(corpus.path, corpus.components_line, "",
                     fmt::format("{} frequency domain(s) here, {} on the target",
                                 corpus.layout.num_domains(), target.num_domains()));
  }
  const std::vector<int> corpus_domains = corpus.layout.ComponentDomains();
  std::vector<int> columns;
  for (int d = 0; d < target.num_domains(); ++d) {
    if (corpus.layout.domains[d].default_freq_mhz != target.domains[d].default_freq_mhz) {
      throw InputError(
          corpus.path, corpus.defaults_line, "",
          fmt::format("default {} frequency {} MHz here, {} MHz on the target",
                      target.domains[d].name, corpus.layout.domains[d].default_freq_mhz,
                      target.domains[d].default_freq_mhz));
    }
    for (const std::string& name : target.domains[d].components) {
      const int i = FindComponent(corpus.layout, name);
      if (i < 0 || corpus_domains[i] != d) {
        throw InputError(corpus.path, corpus.components_line, "",
                         fmt::format("no component {} in the {} domain (the target's {} "
                                     "components must all be measured here)",
                                     name, target.domains[d].name, target.domains[d].name));
      }
      columns.push_back(i);
    }
  }
  if (dropped != nullptr) {
    dropped->clear();
    const std::vector<std::string> names = corpus.layout.ComponentNames();
    for (size_t i = 0; i < names.size(); ++i) {
      if (std::find(columns.begin(), columns.end(), static_cast<int>(i)) == columns.end()) {
        dropped->push_back(names[i]);
      }
    }
  }
  Corpus out = corpus;
  out.layout = target;
  // Keep the corpus's own spelling of the kept components.
  const std::vector<std::string> names = corpus.layout.ComponentNames();
  int k = 0;
  for (FrequencyDomain& domain : out.layout.domains) {
    for (std::string& name : domain.components) name = names[columns[k++]];
  }
  out.util_frac.resize(corpus.rows(), static_cast<Eigen::Index>(columns.size()));
  for (size_t j = 0; j < columns.size(); ++j)
    out.util_frac.col(j) = corpus.util_frac.col(columns[j]);
  return out;
}

void to_json(nlohmann::ordered_json& j, const PortedCoefficient& p) {
  j = nlohmann::ordered_json::object();
  j["name"] = p.name;
  j["domain"] = p.domain;
  j["scales_with"] = p.scales_with;
  j["base_count"] = p.base_count;
  j["target_count"] = p.target_count;
  j["factor"] = p.factor;
  j["base_value"] = p.base_value;
  j["target_value"] = p.target_value;
}

void to_json(nlohmann::ordered_json& j, const GpuPortReport& report) {
  j = nlohmann::ordered_json::object();
  j["base_gpu"] = report.base_gpu;
  j["target_gpu"] = report.target_gpu;
  j["constant_scaling"] = ConstantScalingName(report.constant_scaling);
  if (report.constant_scaling == ConstantScaling::kIdlePower) {
    j["base_idle_w"] = report.base_idle_w;
    j["target_idle_w"] = report.target_idle_w;
  }
  j["components_w_per_mhz"] = report.components;
  j["constant_terms"] = report.constant_terms;
  j["dropped_components"] = report.dropped_components;
  if (!report.left_out_optional.empty())
    j["left_out_optional_components"] = report.left_out_optional;
}

std::string FormatGpuPortReport(const GpuPortReport& report) {
  std::string out = fmt::format("ported {} -> {}:", report.base_gpu, report.target_gpu);
  for (const PortedCoefficient& p : report.components) {
    out += fmt::format(" {} x{:.4g} ({} {:g}->{:g});", p.name, p.factor, p.scales_with,
                       p.base_count, p.target_count);
  }
  out += fmt::format(" constant terms ({}", ConstantScalingName(report.constant_scaling));
  if (report.constant_scaling == ConstantScaling::kIdlePower) {
    out += fmt::format(", idle {:g} W -> {:g} W", report.base_idle_w, report.target_idle_w);
  }
  out += "):";
  for (const PortedCoefficient& p : report.constant_terms) {
    out += fmt::format(" {} x{:.4g}", p.name, p.factor);
  }
  if (!report.dropped_components.empty()) {
    std::string list;
    for (const std::string& name : report.dropped_components)
      list += (list.empty() ? "" : ", ") + name;
    out += "; dropped (not on the target): " + list;
  }
  if (!report.left_out_optional.empty()) {
    std::string list;
    for (const std::string& name : report.left_out_optional)
      list += (list.empty() ? "" : ", ") + name;
    out += "; left out (optional components the base model was trained without): " + list;
  }
  return out;
}

}  // namespace wattcal
