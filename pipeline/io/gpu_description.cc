#include "io/gpu_description.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "io/json_lines.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using Json = nlohmann::json;

// The first problem of a description: the field (JSON path), the offending value as text
// (empty when the rule is not about one value) and the rule it breaks.
struct Problem {
  std::string field;
  std::string value;
  std::string rule;
  bool ok() const { return field.empty(); }
  // "sm_count = 0 must be > 0" or "components[0].thread_metrics: a compute component ...".
  std::string Sentence() const {
    return value.empty() ? field + ": " + rule : field + " = " + value + " " + rule;
  }
  // The InputError message, the field being named separately: "0 must be > 0".
  std::string Message() const { return value.empty() ? rule : value + " " + rule; }
};

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

Problem Bad(std::string field, std::string value, std::string rule) {
  return Problem{std::move(field), std::move(value), std::move(rule)};
}

// The first problem of the description's scalar fields and its component count.
Problem ScalarProblem(const GpuDescription& gpu) {
  if (gpu.name.empty()) return Bad("name", "", "must not be empty");
  if (gpu.sm_count <= 0) return Bad("sm_count", std::to_string(gpu.sm_count), "must be > 0");
  if (gpu.warp_size <= 0) return Bad("warp_size", std::to_string(gpu.warp_size), "must be > 0");
  if (!std::isfinite(gpu.default_core_mhz) || gpu.default_core_mhz <= 0) {
    return Bad("default_core_mhz", fmt::format("{}", gpu.default_core_mhz),
               "must be a finite frequency > 0 MHz");
  }
  if (!std::isfinite(gpu.default_mem_mhz) || gpu.default_mem_mhz < 0) {
    return Bad("default_mem_mhz", fmt::format("{}", gpu.default_mem_mhz),
               "must be a finite frequency >= 0 MHz");
  }
  if (gpu.l2_banks < 0) {
    return Bad("l2_banks", std::to_string(gpu.l2_banks), "must be >= 0 (0: not given)");
  }
  if (gpu.memory_bus_width_bits < 0) {
    return Bad("memory_bus_width_bits", std::to_string(gpu.memory_bus_width_bits),
               "must be >= 0 (0: not given)");
  }
  if (gpu.components.empty()) return Bad("components", "", "must list at least one component");
  return {};
}

// The first problem of component c's name (unique among `names`), domain (core ones before
// the mem ones: `seen_mem` says one came) and scaling.
Problem NameDomainProblem(const ComponentCounters& c, const std::string& at,
                          std::set<std::string>* names, bool* seen_mem) {
  if (c.component.empty()) return Bad(at + ".component", "", "must not be empty");
  if (!names->insert(CanonicalComponentName(c.component)).second) {
    return Bad(at + ".component", Quoted(c.component), "appears twice");
  }
  if (c.domain != "core" && c.domain != "mem") {
    return Bad(at + ".domain", Quoted(c.domain), "must be \"core\" or \"mem\"");
  }
  if (c.domain == "mem") {
    *seen_mem = true;
  } else if (*seen_mem) {
    return Bad(at + ".domain", Quoted(c.domain),
               fmt::format("({}) follows a mem component; list the core components first "
                           "(model order)",
                           c.component));
  }
  if (!c.scales_with.empty() && c.scales_with != "units" && c.scales_with != "sms" &&
      c.scales_with != "l2_banks" && c.scales_with != "memory_bus") {
    return Bad(at + ".scales_with", Quoted(c.scales_with),
               "must be \"units\", \"sms\", \"l2_banks\" or \"memory_bus\"");
  }
  if (c.scales_with == "units" && c.kind != UtilisationKind::kComputeUnit) {
    return Bad(at + ".scales_with", Quoted(c.scales_with),
               fmt::format("needs units_per_sm, which only compute components have ({} is "
                           "a bandwidth component)",
                           c.component));
  }
  return {};
}

// The first problem of component c as its kind needs it: a compute component counts operations
// against its units (TPDS Eq. 7), a bandwidth one bytes against its peak (TPDS Eq. 8).
Problem KindProblem(const ComponentCounters& c, const std::string& at) {
  const bool counts_ops = !c.thread_metrics.empty() || !c.warp_metrics.empty();
  const bool counts_bytes = !c.byte_metrics.empty() || !c.access_metrics.empty();
  if (c.kind == UtilisationKind::kComputeUnit) {
    if (!std::isfinite(c.units_per_sm) || c.units_per_sm <= 0) {
      return Bad(at + ".units_per_sm", fmt::format("{}", c.units_per_sm),
                 fmt::format("must be > 0 for the compute component {}", c.component));
    }
    if (!counts_ops) {
      return Bad(at + ".thread_metrics", "",
                 fmt::format("the compute component {} needs thread_metrics or warp_metrics",
                             c.component));
    }
    if (counts_bytes) {
      return Bad(at + ".byte_metrics", "",
                 fmt::format("the compute component {} cannot have byte_metrics or "
                             "access_metrics (TPDS Eq. 7 counts operations)",
                             c.component));
    }
    return {};
  }
  if (!std::isfinite(c.peak_bytes_per_s) || c.peak_bytes_per_s <= 0) {
    return Bad(at + ".peak_bytes_per_s", fmt::format("{}", c.peak_bytes_per_s),
               fmt::format("must be > 0 for the bandwidth component {}", c.component));
  }
  if (!counts_bytes) {
    return Bad(at + ".byte_metrics", "",
               fmt::format("the bandwidth component {} needs byte_metrics or "
                           "access_metrics",
                           c.component));
  }
  if (counts_ops) {
    return Bad(at + ".thread_metrics", "",
               fmt::format("the bandwidth component {} cannot have thread_metrics or "
                           "warp_metrics (TPDS Eq. 8 counts bytes)",
                           c.component));
  }
  if (!c.access_metrics.empty() &&
      (!std::isfinite(c.bytes_per_access) || c.bytes_per_access <= 0)) {
    return Bad(at + ".bytes_per_access", fmt::format("{}", c.bytes_per_access),
               fmt::format("must be > 0 when {} lists access_metrics", c.component));
  }
  return {};
}

// The first problem of component c's metric lists; `owner` maps each metric to the
// "COMPONENT/list" using it.
Problem MetricListProblem(const ComponentCounters& c, const std::string& at,
                          std::map<std::string, std::string>* owner) {
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {
      {"thread_metrics", &c.thread_metrics},
      {"warp_metrics", &c.warp_metrics},
      {"byte_metrics", &c.byte_metrics},
      {"access_metrics", &c.access_metrics}};
  for (const auto& [list_name, list] : lists) {
    for (size_t m = 0; m < list->size(); ++m) {
      const std::string& metric = (*list)[m];
      const std::string field = fmt::format("{}.{}[{}]", at, list_name, m);
      if (metric.empty()) return Bad(field, "", "empty metric name");
      // A metric repeated in the same list of the same component is a weight (FFMA listed
      // twice counts two FLOPs); in another list or component it is an error.
      const std::string where = c.component + "/" + list_name;
      const auto [it, inserted] = owner->emplace(metric, where);
      if (!inserted && it->second == where) continue;
      if (!inserted) {
        return Bad(field, Quoted(metric),
                   fmt::format("is already a counter of component {}; each counter feeds "
                               "one component (listed twice in one list, it counts twice)",
                               it->second.substr(0, it->second.rfind('/'))));
      }
    }
  }
  return {};
}

// The first problem of the time bases the components need: TPDS Eq. 7's active cycles for
// compute components, the kernel duration for bandwidth ones (TPDS Eq. 8); neither may be a
// component's counter.
Problem TimeBaseProblem(const GpuDescription& gpu, bool any_compute, bool any_bandwidth,
                        std::map<std::string, std::string>& owner) {
  if (any_compute) {
    if (gpu.active_cycles_metric.empty()) {
      return Bad("active_cycles_metric", "",
                 "must name a metric (compute components need TPDS Eq. 7's active cycles per SM)");
    }
    if (owner.count(gpu.active_cycles_metric) > 0) {
      return Bad(
          "active_cycles_metric", Quoted(gpu.active_cycles_metric),
          "is also a counter of component " + owner[gpu.active_cycles_metric].substr(
                                                  0, owner[gpu.active_cycles_metric].rfind('/')));
    }
  }
  if (any_bandwidth) {
    if (gpu.duration_metric.empty()) {
      return Bad("duration_metric", "",
                 "must name a metric (bandwidth components need the kernel duration, TPDS Eq. 8)");
    }
    if (owner.count(gpu.duration_metric) > 0) {
      return Bad("duration_metric", Quoted(gpu.duration_metric),
                 "is also a counter of component " +
                     owner[gpu.duration_metric].substr(0, owner[gpu.duration_metric].rfind('/')));
    }
  }
  return {};
}

Problem FindProblem(const GpuDescription& gpu) {
  if (Problem p = ScalarProblem(gpu); !p.ok()) return p;
  bool any_compute = false, any_bandwidth = false, seen_mem = false;
  std::map<std::string, std::string> owner;  // metric -> "COMPONENT/list" using it
  std::set<std::string> names;
  for (size_t i = 0; i < gpu.components.size(); ++i) {
    const ComponentCounters& c = gpu.components[i];
    const std::string at = fmt::format("components[{}]", i);
    if (Problem p = NameDomainProblem(c, at, &names, &seen_mem); !p.ok()) return p;
    if (c.kind == UtilisationKind::kComputeUnit) {
      any_compute = true;
    } else {
      any_bandwidth = true;
    }
    if (Problem p = KindProblem(c, at); !p.ok()) return p;
    if (Problem p = MetricListProblem(c, at, &owner); !p.ok()) return p;
  }
  if (Problem p = TimeBaseProblem(gpu, any_compute, any_bandwidth, owner); !p.ok()) return p;
  if (seen_mem && gpu.default_mem_mhz <= 0) {
    return Bad("default_mem_mhz", fmt::format("{}", gpu.default_mem_mhz),
               "must be > 0 MHz when there are mem components");
  }
  return {};
}

// ---- JSON reading: every problem names the field.

class DescriptionReader {
 public:
  explicit DescriptionReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void Fail(const std::string& field, const std::string& message) const {
    throw InputError(path_, 0, field, message);
  }

  void CheckKeys(const Json& object, const std::string& at, const std::set<std::string>& allowed) {
    for (const auto& item : object.items()) {
      if (allowed.count(item.key()) > 0) continue;
      std::string list;
      for (const std::string& key : allowed) list += (list.empty() ? "" : ", ") + key;
      Fail(at.empty() ? item.key() : at + "." + item.key(),
           fmt::format("unknown field; the fields here are {}", list));
    }
  }

  std::string String(const Json& object, const std::string& key, const std::string& at,
                     bool required, const std::string& fallback = "") {
    const std::string field = at.empty() ? key : at + "." + key;
    if (!object.contains(key)) {
      if (required) Fail(field, "missing (a string is required)");
      return fallback;
    }
    const Json& v = object.at(key);
    if (!v.is_string()) Fail(field, fmt::format("expected a string, got {}", v.dump()));
    return v.get<std::string>();
  }

  double Number(const Json& object, const std::string& key, const std::string& at, bool required,
                double fallback = 0.0) {
    const std::string field = at.empty() ? key : at + "." + key;
    if (!object.contains(key)) {
      if (required) Fail(field, "missing (a number is required)");
      return fallback;
    }
    const Json& v = object.at(key);
    if (!v.is_number()) Fail(field, fmt::format("expected a number, got {}", v.dump()));
    return v.get<double>();
  }

  int Integer(const Json& object, const std::string& key, const std::string& at, bool required,
              int fallback = 0) {
    const double value = Number(object, key, at, required, fallback);
    if (value != std::floor(value) || std::fabs(value) > 1e9) {
      Fail(at.empty() ? key : at + "." + key, fmt::format("= {} must be a whole number", value));
    }
    return static_cast<int>(value);
  }

  std::vector<std::string> Strings(const Json& object, const std::string& key,
                                   const std::string& at) {
    const std::string field = at + "." + key;
    std::vector<std::string> out;
    if (!object.contains(key)) return out;
    const Json& v = object.at(key);
    if (!v.is_array())
      Fail(field, fmt::format("expected an array of metric names, got {}", v.dump()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        Fail(fmt::format("{}[{}]", field, i),
             fmt::format("expected a string, got {}", v[i].dump()));
      }
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  GpuDescription Read(const Json& root) {
    if (!root.is_object()) Fail("", "expected a JSON object at the top level");
    CheckKeys(root, "",
              {"name", "about", "sm_count", "warp_size", "default_core_mhz", "default_mem_mhz",
               "active_cycles_metric", "duration_metric", "l2_banks", "memory_bus_width_bits",
               "components", "sources"});
    GpuDescription gpu;
    gpu.name = String(root, "name", "", true);
    gpu.sm_count = Integer(root, "sm_count", "", true);
    gpu.warp_size = Integer(root, "warp_size", "", false, gpu.warp_size);
    gpu.default_core_mhz = Number(root, "default_core_mhz", "", true);
    gpu.default_mem_mhz = Number(root, "default_mem_mhz", "", false, 0.0);
    gpu.active_cycles_metric =
        String(root, "active_cycles_metric", "", false, gpu.active_cycles_metric);
    gpu.duration_metric = String(root, "duration_metric", "", false, gpu.duration_metric);
    gpu.l2_banks = Integer(root, "l2_banks", "", false, 0);
    gpu.memory_bus_width_bits = Integer(root, "memory_bus_width_bits", "", false, 0);
    if (!root.contains("components")) Fail("components", "missing (an array is required)");
    const Json& components = root.at("components");
    if (!components.is_array()) {
      Fail("components", fmt::format("expected an array of components, got {}", components.dump()));
    }
    for (size_t i = 0; i < components.size(); ++i) {
      const Json& c = components[i];
      const std::string at = fmt::format("components[{}]", i);
      if (!c.is_object()) Fail(at, fmt::format("expected an object, got {}", c.dump()));
      CheckKeys(c, at,
                {"component", "about", "domain", "kind", "units_per_sm", "peak_bytes_per_s",
                 "bytes_per_access", "thread_metrics", "warp_metrics", "byte_metrics",
                 "access_metrics", "scales_with", "optional"});
      ComponentCounters component;
      component.component = String(c, "component", at, true);
      component.domain = String(c, "domain", at, false, component.domain);
      const std::string kind = String(c, "kind", at, true);
      if (kind == "compute") {
        component.kind = UtilisationKind::kComputeUnit;
      } else if (kind == "bandwidth") {
        component.kind = UtilisationKind::kBandwidth;
      } else {
        Fail(at + ".kind", fmt::format("= \"{}\" must be \"compute\" (TPDS Eq. 7) or "
                                       "\"bandwidth\" (Eq. 8)",
                                       kind));
      }
      component.units_per_sm = Number(c, "units_per_sm", at, false, 0.0);
      component.peak_bytes_per_s = Number(c, "peak_bytes_per_s", at, false, 0.0);
      component.bytes_per_access = Number(c, "bytes_per_access", at, false, 0.0);
      component.thread_metrics = Strings(c, "thread_metrics", at);
      component.warp_metrics = Strings(c, "warp_metrics", at);
      component.byte_metrics = Strings(c, "byte_metrics", at);
      component.access_metrics = Strings(c, "access_metrics", at);
      component.scales_with = String(c, "scales_with", at, false, "");
      if (c.contains("optional")) {
        if (!c.at("optional").is_boolean()) {
          Fail(at + ".optional",
               fmt::format("expected true or false, got {}", c.at("optional").dump()));
        }
        component.optional = c.at("optional").get<bool>();
      }
      gpu.components.push_back(std::move(component));
    }
    if (root.contains("sources")) {
      const Json& sources = root.at("sources");
      if (!sources.is_object()) {
        Fail("sources",
             fmt::format("expected an object (field -> citation), got {}", sources.dump()));
      }
      for (const auto& item : sources.items()) {
        if (!item.value().is_string()) {
          Fail("sources." + item.key(),
               fmt::format("expected a citation string, got {}", item.value().dump()));
        }
        gpu.sources[item.key()] = item.value().get<std::string>();
      }
    }
    const Problem problem = FindProblem(gpu);
    if (!problem.ok()) Fail(problem.field, problem.Message());
    return gpu;
  }

 private:
  std::string path_;
};

}  // namespace

Layout GpuDescription::ToLayout() const {
  Layout layout;
  FrequencyDomain core;
  core.name = "core";
  core.default_freq_mhz = default_core_mhz;
  FrequencyDomain mem;
  mem.name = "mem";
  mem.default_freq_mhz = default_mem_mhz;
  for (const ComponentCounters& c : components) {
    (c.domain == "mem" ? mem : core).components.push_back(c.component);
  }
  layout.domains.push_back(core);
  if (!mem.components.empty()) layout.domains.push_back(mem);
  return layout;
}

bool GpuDescription::Check(std::string* error) const {
  const Problem problem = FindProblem(*this);
  if (problem.ok()) return true;
  *error = problem.Sentence();
  return false;
}

GpuDescription ReadGpuDescription(const std::string& path) {
  const Json root = ParseJsonText(path, ReadFileText(path, "GPU description"));
  GpuDescription gpu = DescriptionReader(path).Read(root);
  gpu.path = path;
  return gpu;
}

namespace {

// The time bases, then the metrics of each component (the optional ones' too when asked), once
// each, in file order.
std::vector<std::string> DescriptionMetrics(const GpuDescription& d, bool with_optional) {
  std::vector<std::string> all = {d.duration_metric, d.active_cycles_metric};
  for (const ComponentCounters& c : d.components) {
    if (c.optional && !with_optional) continue;
    for (const auto* list :
         {&c.thread_metrics, &c.warp_metrics, &c.byte_metrics, &c.access_metrics}) {
      all.insert(all.end(), list->begin(), list->end());
    }
  }
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& m : all) {
    if (!m.empty() && seen.insert(m).second) unique.push_back(m);
  }
  return unique;
}

}  // namespace

std::vector<std::string> GpuDescription::Metrics() const { return DescriptionMetrics(*this, true); }

std::vector<std::string> GpuDescription::RequiredMetrics() const {
  return DescriptionMetrics(*this, false);
}

GpuDescription GpuDescription::Without(const std::vector<std::string>& left_out) const {
  GpuDescription reduced = *this;
  reduced.components.clear();
  for (const ComponentCounters& c : components) {
    if (std::find(left_out.begin(), left_out.end(), c.component) == left_out.end())
      reduced.components.push_back(c);
  }
  return reduced;
}

std::vector<std::string> GpuNameWords(const std::string& name) {
  std::vector<std::string> words(1);
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      words.back() += static_cast<char>(std::tolower(u));
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

namespace {

std::set<std::string> WordsBut(const std::string& name, const std::string& left_out) {
  std::set<std::string> words;
  for (const std::string& w : GpuNameWords(name)) {
    if (w != left_out) words.insert(w);
  }
  return words;
}

bool IsFormFactor(const std::string& word) {
  static const std::set<std::string> kForms = {"sxm",  "sxm2", "sxm3", "sxm4",
                                               "sxm5", "pcie", "nvl"};
  return kForms.count(word) > 0;
}

}  // namespace

bool SameGpuProduct(const std::string& a, const std::string& b) {
  return WordsBut(a, "nvidia") == WordsBut(b, "nvidia");
}

bool DescriptionDescribes(const GpuDescription& description, const std::string& product) {
  const std::set<std::string> words = WordsBut(product, "nvidia");
  const bool product_states_form = std::any_of(words.begin(), words.end(), IsFormFactor);
  const std::vector<std::string> described = GpuNameWords(description.name);
  if (described.empty()) return false;
  for (const std::string& w : described) {
    if (words.count(w) > 0 || (IsFormFactor(w) && !product_states_form)) continue;
    return false;
  }
  return true;
}

}  // namespace wattcal
