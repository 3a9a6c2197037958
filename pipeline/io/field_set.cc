// Field sets (io/field_set.h): the known DCGM and GPM fields, and the JSON reader.
#include "io/field_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "util/errors.h"
#include "util/json_file.h"

namespace wattcal {

const char* FieldSourceName(FieldSource source) {
  return source == FieldSource::kDcgm ? "dcgm" : "gpm";
}

const std::vector<KnownField>& KnownFields() {
  using S = FieldScale;
  constexpr FieldSource kD = FieldSource::kDcgm;
  constexpr FieldSource kG = FieldSource::kGpm;
  // dcgm_fields.h (DCGM 3.x/4.x, "Profiling Fields") and nvml.h (nvmlGpmMetricId_t, CUDA 12+).
  static const std::vector<KnownField> kFields = {
      {kD, 100, "DCGM_FI_DEV_SM_CLOCK", "SMCLK", S::kDevice, "SM clock, MHz"},
      {kD, 101, "DCGM_FI_DEV_MEM_CLOCK", "MMCLK", S::kDevice, "memory clock, MHz"},
      {kD, 150, "DCGM_FI_DEV_GPU_TEMP", "TMPTR", S::kDevice, "GPU temperature, C"},
      {kD, 155, "DCGM_FI_DEV_POWER_USAGE", "POWER", S::kDevice, "board power, W (averaged)"},
      {kD, 157, "DCGM_FI_DEV_POWER_USAGE_INSTANT", "POWINST", S::kDevice,
       "board power, W (instantaneous)"},
      {kD, 1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "GRACT", S::kRatio,
       "ratio of time the graphics engine is active"},
      {kD, 1002, "DCGM_FI_PROF_SM_ACTIVE", "SMACT", S::kRatio,
       "ratio of cycles an SM has at least 1 warp assigned"},
      {kD, 1003, "DCGM_FI_PROF_SM_OCCUPANCY", "SMOCC", S::kRatio,
       "resident warps as a ratio of the theoretical maximum per elapsed cycle"},
      {kD, 1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "TENSO", S::kRatio,
       "ratio of cycles any tensor pipe is active (off the peak sustained elapsed cycles)"},
      {kD, 1005, "DCGM_FI_PROF_DRAM_ACTIVE", "DRAMA", S::kRatio,
       "ratio of cycles the device memory interface is active sending or receiving data"},
      {kD, 1006, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "FP64A", S::kRatio,
       "ratio of cycles the fp64 pipe is active"},
      {kD, 1007, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "FP32A", S::kRatio,
       "ratio of cycles the fp32 pipe is active"},
      {kD, 1008, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "FP16A", S::kRatio,
       "ratio of cycles the fp16 pipe is active (not HMMA)"},
      {kD, 1009, "DCGM_FI_PROF_PCIE_TX_BYTES", "PCITX", S::kRate,
       "active PCIe transmit bytes (header and payload) per second"},
      {kD, 1010, "DCGM_FI_PROF_PCIE_RX_BYTES", "PCIRX", S::kRate,
       "active PCIe receive bytes (header and payload) per second"},
      {kD, 1011, "DCGM_FI_PROF_NVLINK_TX_BYTES", "NVLTX", S::kRate,
       "active NVLink transmit bytes (header and payload) per second"},
      {kD, 1012, "DCGM_FI_PROF_NVLINK_RX_BYTES", "NVLRX", S::kRate,
       "active NVLink receive bytes (header and payload) per second"},
      {kD, 1013, "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "TIMMA", S::kRatio,
       "ratio of cycles the IMMA tensor pipe is active"},
      {kD, 1014, "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "THMMA", S::kRatio,
       "ratio of cycles the HMMA tensor pipe is active"},
      {kD, 1015, "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "TDFMA", S::kRatio,
       "ratio of cycles the DFMA (FP64) tensor pipe is active"},
      {kD, 1016, "DCGM_FI_PROF_PIPE_INT_ACTIVE", "INTAC", S::kRatio,
       "ratio of cycles the integer pipe is active"},
      {kG, 1, "NVML_GPM_METRIC_GRAPHICS_UTIL", "", S::kPercent, "graphics engine utilisation, %"},
      {kG, 2, "NVML_GPM_METRIC_SM_UTIL", "", S::kPercent, "SM utilisation (SMs busy), %"},
      {kG, 3, "NVML_GPM_METRIC_SM_OCCUPANCY", "", S::kPercent,
       "active warps against the theoretical maximum, %"},
      {kG, 4, "NVML_GPM_METRIC_INTEGER_UTIL", "", S::kPercent,
       "time the SMs did integer operations, %"},
      {kG, 5, "NVML_GPM_METRIC_ANY_TENSOR_UTIL", "", S::kPercent,
       "time the SMs did any tensor operation, %"},
      {kG, 6, "NVML_GPM_METRIC_DFMA_TENSOR_UTIL", "", S::kPercent,
       "time the SMs did DFMA tensor operations, %"},
      {kG, 7, "NVML_GPM_METRIC_HMMA_TENSOR_UTIL", "", S::kPercent,
       "time the SMs did HMMA tensor operations, %"},
      {kG, 9, "NVML_GPM_METRIC_IMMA_TENSOR_UTIL", "", S::kPercent,
       "time the SMs did IMMA tensor operations, %"},
      {kG, 10, "NVML_GPM_METRIC_DRAM_BW_UTIL", "", S::kPercent,
       "DRAM bandwidth against the theoretical maximum, %"},
      {kG, 11, "NVML_GPM_METRIC_FP64_UTIL", "", S::kPercent,
       "time the SMs did non-tensor FP64 math, %"},
      {kG, 12, "NVML_GPM_METRIC_FP32_UTIL", "", S::kPercent,
       "time the SMs did non-tensor FP32 math, %"},
      {kG, 13, "NVML_GPM_METRIC_FP16_UTIL", "", S::kPercent,
       "time the SMs did non-tensor FP16 math, %"},
      {kG, 20, "NVML_GPM_METRIC_PCIE_TX_PER_SEC", "", S::kRateMib,
       "PCIe traffic from the GPU, MiB/s"},
      {kG, 21, "NVML_GPM_METRIC_PCIE_RX_PER_SEC", "", S::kRateMib,
       "PCIe traffic to the GPU, MiB/s"},
      {kG, 60, "NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC", "", S::kRateMib,
       "NVLink read bandwidth of all links, MiB/s"},
      {kG, 61, "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC", "", S::kRateMib,
       "NVLink write bandwidth of all links, MiB/s"},
  };
  return kFields;
}

namespace {

bool SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// "1002" -> 1002; -1 when `text` is not a whole number of at most 6 digits.
int IdOf(std::string_view text) {
  if (text.empty() || text.size() > 6) return -1;
  int id = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    id = id * 10 + (c - '0');
  }
  return id;
}

}  // namespace

const KnownField* FindKnownField(std::string_view text) {
  FieldSource source = FieldSource::kDcgm;
  if (text.size() > 4 && SameText(text.substr(0, 4), "gpm:")) {
    source = FieldSource::kGpm;
    text.remove_prefix(4);
  }
  const int id = IdOf(text);
  for (const KnownField& f : KnownFields()) {
    if (id >= 0 ? (f.source == source && f.id == id)
                : (SameText(text, f.name) || (f.dmon_tag[0] != '\0' && SameText(text, f.dmon_tag))))
      return &f;
  }
  return nullptr;
}

Layout FieldSet::ToLayout() const {
  Layout layout;
  FrequencyDomain core{"core", default_core_mhz, {}};
  FrequencyDomain mem{"mem", default_mem_mhz, {}};
  for (const FieldComponent& c : components) {
    (c.domain == "mem" ? mem : core).components.push_back(c.component);
  }
  layout.domains.push_back(core);
  if (!mem.components.empty()) layout.domains.push_back(mem);
  return layout;
}

std::vector<std::string> FieldSet::Fields() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const FieldComponent& c : components) {
    for (const std::string& f : c.fields) {
      if (seen.insert(f).second) out.push_back(f);
    }
  }
  return out;
}

namespace {

bool IsRate(FieldScale scale) {
  return scale == FieldScale::kRate || scale == FieldScale::kRateMib;
}

// The first problem of one component ("" when none); `owner` maps each field to its component.
std::string ComponentProblem(const FieldSet& set, size_t i, std::set<std::string>* names,
                             std::map<std::string, std::string>* owner, bool* seen_mem) {
  const FieldComponent& c = set.components[i];
  const std::string at = fmt::format("components[{}]", i);
  if (c.component.empty()) return at + ".component: must not be empty";
  if (!names->insert(CanonicalComponentName(c.component)).second)
    return fmt::format("{}.component = \"{}\" appears twice", at, c.component);
  if (c.domain != "core" && c.domain != "mem")
    return fmt::format("{}.domain = \"{}\" must be \"core\" or \"mem\"", at, c.domain);
  if (c.domain == "core" && *seen_mem)
    return fmt::format("{}.domain: {} (core) follows a mem component; list core first", at,
                       c.component);
  *seen_mem = *seen_mem || c.domain == "mem";
  if (c.fields.empty()) return at + ".fields: must list at least one field";
  bool any_rate = false, any_ratio = false;
  for (size_t k = 0; k < c.fields.size(); ++k) {
    const KnownField* f = FindKnownField(c.fields[k]);
    const std::string field_at = fmt::format("{}.fields[{}]", at, k);
    if (f == nullptr || f->source != set.source || f->scale == FieldScale::kDevice) {
      return fmt::format("{} = \"{}\" is not a {} field wattcal knows (docs/fields.md)", field_at,
                         c.fields[k], FieldSourceName(set.source));
    }
    const auto [it, inserted] = owner->emplace(f->name, c.component);
    if (!inserted)
      return fmt::format("{} = \"{}\" already feeds component {}", field_at, c.fields[k],
                         it->second);
    (IsRate(f->scale) ? any_rate : any_ratio) = true;
  }
  if (any_rate && any_ratio)
    return at + ".fields: a component sums either utilisations or byte rates, not both";
  if (any_rate && !(std::isfinite(c.peak_bytes_per_s) && c.peak_bytes_per_s > 0))
    return fmt::format("{}.peak_bytes_per_s = {} must be > 0 for the byte-rate component {}", at,
                       c.peak_bytes_per_s, c.component);
  return "";
}

std::string FindProblem(const FieldSet& set) {
  if (set.name.empty()) return "name: must not be empty";
  if (!(std::isfinite(set.default_core_mhz) && set.default_core_mhz > 0))
    return fmt::format("default_core_mhz = {} must be a finite frequency > 0 MHz",
                       set.default_core_mhz);
  if (set.components.empty()) return "components: must list at least one component";
  std::set<std::string> names;
  std::map<std::string, std::string> owner;
  bool seen_mem = false;
  for (size_t i = 0; i < set.components.size(); ++i) {
    const std::string problem = ComponentProblem(set, i, &names, &owner, &seen_mem);
    if (!problem.empty()) return problem;
  }
  if (seen_mem && !(std::isfinite(set.default_mem_mhz) && set.default_mem_mhz > 0))
    return fmt::format("default_mem_mhz = {} must be > 0 MHz when there are mem components",
                       set.default_mem_mhz);
  return "";
}

using Json = nlohmann::json;

class FieldSetReader {
 public:
  explicit FieldSetReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void Fail(const std::string& field, const std::string& message) const {
    throw InputError(path_, 0, field, message);
  }

  void CheckKeys(const Json& object, const std::string& at, const std::set<std::string>& allowed) {
    for (const auto& item : object.items()) {
      if (allowed.count(item.key()) == 0)
        Fail(at.empty() ? item.key() : at + "." + item.key(), "unknown field");
    }
  }

  const Json* Get(const Json& object, const std::string& key, const std::string& field,
                  bool required) {
    if (!object.contains(key)) {
      if (required) Fail(field, "missing");
      return nullptr;
    }
    return &object.at(key);
  }

  std::string String(const Json& object, const std::string& key, const std::string& field,
                     bool required, const std::string& fallback = "") {
    const Json* v = Get(object, key, field, required);
    if (v == nullptr) return fallback;
    if (!v->is_string()) Fail(field, fmt::format("expected a string, got {}", v->dump()));
    return v->get<std::string>();
  }

  double Number(const Json& object, const std::string& key, const std::string& field,
                bool required) {
    const Json* v = Get(object, key, field, required);
    if (v == nullptr) return 0.0;
    if (!v->is_number()) Fail(field, fmt::format("expected a number, got {}", v->dump()));
    return v->get<double>();
  }

  FieldComponent Component(const Json& c, const std::string& at) {
    if (!c.is_object()) Fail(at, fmt::format("expected an object, got {}", c.dump()));
    CheckKeys(c, at, {"component", "about", "domain", "fields", "peak_bytes_per_s"});
    FieldComponent out;
    out.component = String(c, "component", at + ".component", true);
    out.domain = String(c, "domain", at + ".domain", false, out.domain);
    out.peak_bytes_per_s = Number(c, "peak_bytes_per_s", at + ".peak_bytes_per_s", false);
    const Json* fields = Get(c, "fields", at + ".fields", true);
    if (!fields->is_array()) Fail(at + ".fields", "expected an array of field names or ids");
    for (size_t k = 0; k < fields->size(); ++k) {
      const Json& f = (*fields)[k];
      const std::string field_at = fmt::format("{}.fields[{}]", at, k);
      std::string text;
      if (f.is_number_integer()) {
        text = (source_ == FieldSource::kGpm ? "gpm:" : "") + std::to_string(f.get<int>());
      } else if (f.is_string()) {
        text = f.get<std::string>();
      } else {
        Fail(field_at, fmt::format("expected a field name or id, got {}", f.dump()));
      }
      const KnownField* known = FindKnownField(text);
      out.fields.push_back(known != nullptr ? known->name : text);  // Check() names unknown ones
    }
    return out;
  }

  FieldSet Read(const Json& root) {
    if (!root.is_object()) Fail("", "expected a JSON object at the top level");
    CheckKeys(root, "",
              {"name", "about", "source", "default_core_mhz", "default_mem_mhz", "components",
               "sources"});
    FieldSet set;
    set.name = String(root, "name", "name", true);
    const std::string source = String(root, "source", "source", true);
    if (source != "dcgm" && source != "gpm") {
      Fail("source", fmt::format("= \"{}\" must be \"dcgm\" or \"gpm\"", source));
    }
    set.source = source_ = source == "dcgm" ? FieldSource::kDcgm : FieldSource::kGpm;
    set.default_core_mhz = Number(root, "default_core_mhz", "default_core_mhz", true);
    set.default_mem_mhz = Number(root, "default_mem_mhz", "default_mem_mhz", false);
    const Json* components = Get(root, "components", "components", true);
    if (!components->is_array()) Fail("components", "expected an array of components");
    for (size_t i = 0; i < components->size(); ++i) {
      set.components.push_back(Component((*components)[i], fmt::format("components[{}]", i)));
    }
    if (const Json* sources = Get(root, "sources", "sources", false)) {
      if (!sources->is_object()) Fail("sources", "expected an object (field -> citation)");
      for (const auto& item : sources->items()) {
        if (!item.value().is_string()) Fail("sources." + item.key(), "expected a citation");
        set.sources[item.key()] = item.value().get<std::string>();
      }
    }
    const std::string problem = FindProblem(set);
    if (!problem.empty()) Fail("", problem);
    return set;
  }

 private:
  std::string path_;
  FieldSource source_ = FieldSource::kDcgm;
};

}  // namespace

bool FieldSet::Check(std::string* error) const {
  const std::string problem = FindProblem(*this);
  if (problem.empty()) return true;
  *error = problem;
  return false;
}

FieldSet ReadFieldSet(const std::string& path) {
  FieldSet set = FieldSetReader(path).Read(ParseJsonText(path, ReadFileText(path, "field set")));
  set.path = path;
  return set;
}

std::string FieldSetGpuName(const FieldSet& set) {
  static const std::set<std::string> kSourceWords = {"gpm", "dcgm", "from", "ncu", "instr"};
  std::string out;
  std::stringstream words(set.name);
  for (std::string w; std::getline(words, w, '-');) {
    if (w.empty() || kSourceWords.count(w) > 0) continue;
    out += (out.empty() ? "" : "-") + w;
  }
  return out;
}

bool IsFieldSetFile(const std::string& path) {
  const nlohmann::json j = ParseJsonText(path, ReadFileText(path, "GPU description"));
  return j.is_object() && j.contains("source");
}

std::vector<double> FieldUtilisations(const FieldSet& set,
                                      const std::map<std::string, double>& means,
                                      std::vector<std::string>* missing) {
  std::vector<double> util;
  for (const FieldComponent& c : set.components) {
    double u = 0.0;
    for (const std::string& name : c.fields) {
      const auto it = means.find(name);
      const KnownField* f = FindKnownField(name);
      if (it == means.end() || std::isnan(it->second) || f == nullptr) {
        if (std::find(missing->begin(), missing->end(), name) == missing->end())
          missing->push_back(name);
        u = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      switch (f->scale) {
        case FieldScale::kRatio: u += it->second; break;
        case FieldScale::kPercent: u += it->second / 100.0; break;
        case FieldScale::kRate: u += it->second / c.peak_bytes_per_s; break;
        case FieldScale::kRateMib: u += it->second * 1048576.0 / c.peak_bytes_per_s; break;
        case FieldScale::kDevice: u = std::numeric_limits<double>::quiet_NaN(); break;
      }
    }
    util.push_back(u);
  }
  return util;
}

}  // namespace wattcal
