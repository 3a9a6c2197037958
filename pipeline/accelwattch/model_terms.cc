#include "accelwattch/model_terms.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "accelwattch/static_power.h"
#include "io/sweep.h"
#include "io/csv_reader.h"
#include "io/json_lines.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Typed reads of the energies and fixed-term objects, errors naming FILE:LINE.
class TermsReader : public JsonFieldReader {
 public:
  TermsReader(const std::string& path, const std::string& text) : JsonFieldReader(path, text) {}
  using JsonFieldReader::CheckFormatAndVersion;

  // `object` holds reference_f_core_mhz and components; `parent` is its path.
  AccelWattchEnergies Energies(const Json& object, const std::string& parent) const {
    AccelWattchEnergies e;
    e.reference_f_core_mhz = Number(object, parent, "reference_f_core_mhz");
    if (!(e.reference_f_core_mhz > 0.0)) {
      Fail(Join(parent, "reference_f_core_mhz"),
           fmt::format("must be > 0, got {}", e.reference_f_core_mhz));
    }
    const Json& components = Array(object, parent, "components");
    const std::string cp = Join(parent, "components");
    if (components.empty()) Fail(cp, "expected at least one component");
    std::set<std::string> names;
    std::map<std::string, std::string> event_owner;
    for (size_t i = 0; i < components.size(); ++i) {
      const std::string p = fmt::format("{}[{}]", cp, i);
      EnergyComponent c;
      c.component = String(components[i], p, "component");
      if (c.component.empty()) Fail(p + ".component", "empty component name");
      if (!names.insert(c.component).second) {
        Fail(p + ".component", fmt::format("component '{}' is named twice", c.component));
      }
      const Json& events = Array(components[i], p, "events");
      if (events.empty()) Fail(p + ".events", "expected at least one counter name");
      for (size_t k = 0; k < events.size(); ++k) {
        const std::string ep = fmt::format("{}.events[{}]", p, k);
        if (!events[k].is_string() || events[k].get<std::string>().empty())
          Fail(ep, "expected a counter name");
        const std::string name = events[k].get<std::string>();
        const auto [it, inserted] = event_owner.emplace(name, c.component);
        if (!inserted) {
          Fail(ep,
               fmt::format("counter '{}' is already counted by component '{}'", name, it->second));
        }
        c.events.push_back(name);
      }
      c.energy_per_event_pj = Number(components[i], p, "energy_per_event_pj");
      if (!(c.energy_per_event_pj > 0.0)) {
        Fail(p + ".energy_per_event_pj", fmt::format("must be > 0, got {}", c.energy_per_event_pj));
      }
      c.clock = String(components[i], p, "clock");
      if (c.clock != "core" && c.clock != "memory") {
        Fail(p + ".clock", fmt::format("expected \"core\" or \"memory\", got \"{}\"", c.clock));
      }
      c.voltage_scaled = Bool(components[i], p, "voltage_scaled");
      e.components.push_back(c);
    }
    return e;
  }

  AccelWattchFixedTerms Fixed(const Json& object, const std::string& parent) const {
    AccelWattchFixedTerms t;
    const std::string voltage = String(object, parent, "voltage_model");
    if (voltage != kVoltageModel && voltage != kVoltageCurve) {
      Fail(Join(parent, "voltage_model"), fmt::format("expected \"{}\" or \"{}\", got \"{}\"",
                                                      kVoltageModel, kVoltageCurve, voltage));
    }
    if (voltage == kVoltageCurve) {
      const std::string vp = Join(parent, "voltage_curve");
      const Json& curve = Get(object, parent, "voltage_curve");
      t.voltage_source = String(curve, vp, "source");
      const Json& f = Array(curve, vp, "f_core_mhz");
      const Json& v = Array(curve, vp, "voltage", static_cast<int64_t>(f.size()));
      if (f.size() < 2) Fail(vp + ".f_core_mhz", "a curve needs at least two points");
      for (size_t i = 0; i < f.size(); ++i) {
        const double fi = NumberValue(f[i], fmt::format("{}.f_core_mhz[{}]", vp, i));
        const double vi = NumberValue(v[i], fmt::format("{}.voltage[{}]", vp, i));
        if (!(fi > 0.0) || (i > 0 && !(fi > t.voltage_f_core_mhz.back()))) {
          Fail(fmt::format("{}.f_core_mhz[{}]", vp, i), "clocks must be > 0 and ascending");
        }
        if (!(vi > 0.0))
          Fail(fmt::format("{}.voltage[{}]", vp, i), fmt::format("must be > 0, got {}", vi));
        t.voltage_f_core_mhz.push_back(fi);
        t.voltage_v.push_back(vi);
      }
    }
    const std::string cp = Join(parent, "constant");
    const Json& c = Get(object, parent, "constant");
    t.constant_source = String(c, cp, "source");
    t.p_const_w = NonNegative(c, cp, "p_const_w");

    const std::string sp = Join(parent, "static");
    const Json& s = Get(object, parent, "static");
    t.static_source = String(s, sp, "source");
    t.static_f_core_mhz = Positive(s, sp, "reference_f_core_mhz");
    t.num_sms = Int(s, sp, "num_sms");
    t.warp_size = Int(s, sp, "warp_size");
    t.half_warp_lanes = Int(s, sp, "half_warp_lanes");
    if (t.num_sms < 1) Fail(Join(sp, "num_sms"), fmt::format("must be >= 1, got {}", t.num_sms));
    if (t.warp_size < 2)
      Fail(Join(sp, "warp_size"), fmt::format("must be >= 2, got {}", t.warp_size));
    if (t.half_warp_lanes < 1 || t.half_warp_lanes >= t.warp_size) {
      Fail(Join(sp, "half_warp_lanes"),
           fmt::format("must lie in [1, warp_size), got {}", t.half_warp_lanes));
    }
    t.default_category = String(s, sp, "default_category");
    const Json& categories = Array(s, sp, "categories");
    for (size_t i = 0; i < categories.size(); ++i) {
      const std::string p = fmt::format("{}.categories[{}]", sp, i);
      CategoryStaticTerm term;
      term.category = String(categories[i], p, "category");
      if (!IsMixCategory(term.category)) {
        Fail(p + ".category",
             fmt::format("'{}' is not one of AccelWattch's nine categories", term.category));
      }
      if (t.FindCategory(term.category) != nullptr) {
        Fail(p + ".category", fmt::format("category '{}' is given twice", term.category));
      }
      term.model = String(categories[i], p, "model");
      if (term.model != "linear" && term.model != "half_warp") {
        Fail(p + ".model",
             fmt::format("expected \"linear\" or \"half_warp\", got \"{}\"", term.model));
      }
      term.p_static_first_lane_w = Number(categories[i], p, "p_static_first_lane_w");
      term.p_static_add_lane_w = Number(categories[i], p, "p_static_add_lane_w");
      t.categories.push_back(term);
    }
    if (!t.default_category.empty() && t.FindCategory(t.default_category) == nullptr) {
      Fail(Join(sp, "default_category"),
           fmt::format("'{}' is not one of the model's categories", t.default_category));
    }

    const std::string ip = Join(parent, "idle");
    const Json& idle = Get(object, parent, "idle");
    t.idle_source = String(idle, ip, "source");
    t.idle_f_core_mhz = Positive(idle, ip, "f_core_mhz");
    t.p_idle_sm_w = NonNegative(idle, ip, "p_idle_sm_w");
    return t;
  }

  // The outputs of the stages.
  double StageNumber(const Json& root, const std::string& key) const {
    if (!root.is_object()) Fail("", "expected a JSON object at the top level");
    if (!root.contains(key) || root[key].is_null()) {
      Fail(key, "missing or null (did the stage find no estimate? see its status)");
    }
    return Number(root, "", key);
  }
  // The base's typed reads, for the stage outputs read outside the class.
  using JsonFieldReader::Fail;
  using JsonFieldReader::Get;
  using JsonFieldReader::Int;
  using JsonFieldReader::Number;
  using JsonFieldReader::String;

  static constexpr const char* kVoltageModel =
      "V proportional to f_core (AccelWattch §4.2, V ~ k f)";
  static constexpr const char* kVoltageCurve =
      "measured V-f curve, linear interpolation (Eq. 2: static ~ V, energy ~ V^2)";

 private:
  double Positive(const Json& o, const std::string& parent, const std::string& key) const {
    const double v = Number(o, parent, key);
    if (!(v > 0.0)) Fail(Join(parent, key), fmt::format("must be > 0, got {}", v));
    return v;
  }
  double NonNegative(const Json& o, const std::string& parent, const std::string& key) const {
    const double v = Number(o, parent, key);
    if (!(v >= 0.0)) Fail(Join(parent, key), fmt::format("must be >= 0, got {}", v));
    return v;
  }
};

}  // namespace

int AccelWattchEnergies::FindComponent(const std::string& name) const {
  for (size_t i = 0; i < components.size(); ++i) {
    if (components[i].component == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> AccelWattchEnergies::ComponentNames() const {
  std::vector<std::string> names;
  for (const EnergyComponent& c : components) names.push_back(c.component);
  return names;
}

const CategoryStaticTerm* AccelWattchFixedTerms::FindCategory(const std::string& category) const {
  for (const CategoryStaticTerm& t : categories) {
    if (t.category == category) return &t;
  }
  return nullptr;
}

const CategoryStaticTerm* AccelWattchFixedTerms::StaticFor(const std::string& category) const {
  return FindCategory(category.empty() ? default_category : category);
}

bool AccelWattchFixedTerms::VoltageDefinedAt(double f_core_mhz) const {
  if (voltage_v.empty()) return f_core_mhz > 0.0;
  return f_core_mhz >= voltage_f_core_mhz.front() && f_core_mhz <= voltage_f_core_mhz.back();
}

namespace {

double InterpolateVoltage(const std::vector<double>& f, const std::vector<double>& v, double at) {
  const size_t hi = std::lower_bound(f.begin(), f.end(), at) - f.begin();
  if (hi == 0) return v.front();
  if (hi >= f.size()) return v.back();
  const double w = (at - f[hi - 1]) / (f[hi] - f[hi - 1]);
  return v[hi - 1] + w * (v[hi] - v[hi - 1]);
}

}  // namespace

double AccelWattchFixedTerms::VoltageRatio(double f_to_mhz, double f_from_mhz) const {
  if (voltage_v.empty()) return f_to_mhz / f_from_mhz;  // AccelWattch §4.2: V ~ f
  return InterpolateVoltage(voltage_f_core_mhz, voltage_v, f_to_mhz) /
         InterpolateVoltage(voltage_f_core_mhz, voltage_v, f_from_mhz);
}

std::string AccelWattchFixedTerms::VoltageModelName() const {
  return voltage_v.empty() ? TermsReader::kVoltageModel : TermsReader::kVoltageCurve;
}

void ReadVoltageCurve(const std::string& path, AccelWattchFixedTerms* fixed) {
  CsvReader reader(path);
  std::vector<std::string> header;
  if (!reader.Next(&header))
    throw InputError(path, 1, "", "empty file: expected f_core_mhz,voltage_v");
  int fc = -1, vc = -1;
  double scale = 1.0;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "f_core_mhz") fc = static_cast<int>(i);
    if (header[i] == "voltage_v") vc = static_cast<int>(i);
    if (header[i] == "voltage_mv") {
      vc = static_cast<int>(i);
      scale = 1e-3;
    }
  }
  if (fc < 0)
    reader.Fail("f_core_mhz",
                "missing column (a V-f curve has f_core_mhz and voltage_v or voltage_mv)");
  if (vc < 0)
    reader.Fail("voltage_v",
                "missing column (a V-f curve has f_core_mhz and voltage_v or voltage_mv)");
  std::vector<double> f, v;
  std::vector<std::string> row;
  while (reader.Next(&row)) {
    if (row.size() != header.size()) {
      reader.Fail(
          "", fmt::format("expected {} fields (as the header), got {}", header.size(), row.size()));
    }
    const double fi = reader.ParseNumber(row[fc], "f_core_mhz");
    const double vi = reader.ParseNumber(row[vc], header[vc]) * scale;
    if (!(fi > 0.0) || (!f.empty() && !(fi > f.back()))) {
      reader.Fail("f_core_mhz", fmt::format("{} MHz: clocks must be > 0 and ascending", fi));
    }
    if (!(vi > 0.0)) reader.Fail(header[vc], fmt::format("a voltage must be > 0, got {}", row[vc]));
    f.push_back(fi);
    v.push_back(vi);
  }
  if (f.size() < 2)
    throw InputError(path, reader.line() + 1, "", "a V-f curve needs at least two rows");
  fixed->voltage_source = path;
  fixed->voltage_f_core_mhz = f;
  fixed->voltage_v = v;
  for (const auto& [what, clock] :
       {std::pair<const char*, double>{"the static power", fixed->static_f_core_mhz},
        std::pair<const char*, double>{"the idle-SM power", fixed->idle_f_core_mhz}}) {
    if (!fixed->VoltageDefinedAt(clock)) {
      throw OptionError(fmt::format(
          "--voltage-curve {}: {} was measured at {} MHz, outside the curve's {}-{} MHz", path,
          what, clock, f.front(), f.back()));
    }
  }
}

double AccelWattchFixedTerms::StaticAllSmsW(const CategoryStaticTerm& term, int lanes,
                                            int half_warp_lanes) {
  // AccelWattch Eq. 4: P_first + P_add (y - 1); AccelWattch Eq. 5: the half-warp basis above
  // H lanes.
  const double basis =
      term.model == "half_warp" ? HalfWarpBasis(lanes, half_warp_lanes) : lanes - 1.0;
  return term.p_static_first_lane_w + term.p_static_add_lane_w * basis;
}

AccelWattchEnergies ReadAccelWattchEnergies(const std::string& path) {
  const std::string text = ReadFileText(path, "the energy-estimate file");
  const Json root = ParseJsonText(path, text);
  TermsReader reader(path, text);
  reader.CheckFormatAndVersion(root, kAccelWattchEnergiesFormat, 1);
  AccelWattchEnergies e = reader.Energies(root, "");
  e.source = path;
  return e;
}

AccelWattchFixedTerms ReadAccelWattchFixedTerms(const std::string& constant_path,
                                                const std::string& static_path,
                                                const std::string& idle_path,
                                                const std::string& default_category) {
  AccelWattchFixedTerms t;
  {
    const std::string text =
        ReadFileText(constant_path, "the constant-power file (wattcal-constant's output)");
    const Json root = ParseJsonText(constant_path, text);
    TermsReader r(constant_path, text);
    t.constant_source = constant_path;
    t.p_const_w = r.StageNumber(root, "p_const_w");
    if (t.p_const_w < 0.0) r.Fail("p_const_w", fmt::format("must be >= 0, got {}", t.p_const_w));
  }
  {
    const std::string text =
        ReadFileText(static_path, "the static-power file (wattcal-static's output)");
    const Json root = ParseJsonText(static_path, text);
    TermsReader r(static_path, text);
    t.static_source = static_path;
    t.static_f_core_mhz = r.StageNumber(root, "reference_f_core_mhz");
    t.num_sms = r.Int(root, "", "num_sms");
    t.warp_size = r.Int(root, "", "warp_size");
    t.half_warp_lanes = r.Int(root, "", "half_warp_lanes");
    if (t.num_sms < 1 || t.warp_size < 2 || t.half_warp_lanes < 1 ||
        t.half_warp_lanes >= t.warp_size) {
      r.Fail("num_sms", fmt::format("num_sms {}, warp_size {}, half_warp_lanes {} are not a GPU",
                                    t.num_sms, t.warp_size, t.half_warp_lanes));
    }
    const Json& categories = r.Get(root, "", "categories");
    for (const std::string& name : MixCategories()) {
      if (!categories.is_object() || !categories.contains(name)) continue;
      const std::string p = "categories." + name;
      const Json& c = categories[name];
      if (r.String(c, p, "status") != "ok") continue;
      CategoryStaticTerm term;
      term.category = name;
      term.model = r.String(c, p, "chosen_model");
      if (term.model != "linear" && term.model != "half_warp") {
        r.Fail(p + ".chosen_model",
               fmt::format("expected linear or half_warp, got \"{}\"", term.model));
      }
      const Json& m = r.Get(c, p, term.model);
      term.p_static_first_lane_w = r.Number(m, p + "." + term.model, "p_static_first_lane_w");
      term.p_static_add_lane_w = r.Number(m, p + "." + term.model, "p_static_add_lane_w");
      t.categories.push_back(term);
    }
    if (t.categories.empty()) {
      r.Fail("categories", "no category has a fitted static model (status \"ok\")");
    }
  }
  {
    const std::string text = ReadFileText(idle_path, "the idle-power file (wattcal-idle's output)");
    const Json root = ParseJsonText(idle_path, text);
    TermsReader r(idle_path, text);
    t.idle_source = idle_path;
    t.idle_f_core_mhz = r.StageNumber(root, "f_core_mhz");
    t.p_idle_sm_w = r.StageNumber(root, "p_idle_sm_w");
    if (!(t.idle_f_core_mhz > 0.0)) r.Fail("f_core_mhz", "must be > 0");
    if (t.p_idle_sm_w < 0.0)
      r.Fail("p_idle_sm_w", fmt::format("must be >= 0, got {}", t.p_idle_sm_w));
  }
  if (!default_category.empty() && t.FindCategory(default_category) == nullptr) {
    std::vector<std::string> names;
    for (const CategoryStaticTerm& c : t.categories) names.push_back(c.category);
    throw OptionError(
        fmt::format("--default-category {}: {} has no fitted static model for it (it has {})",
                    default_category, static_path, fmt::join(names, ", ")));
  }
  t.default_category = default_category;
  return t;
}

void to_json(nlohmann::ordered_json& j, const AccelWattchEnergies& e) {
  j = OrderedJson::object();
  j["source"] = e.source;
  j["reference_f_core_mhz"] = e.reference_f_core_mhz;
  OrderedJson components = OrderedJson::array();
  for (const EnergyComponent& c : e.components) {
    OrderedJson o;
    o["component"] = c.component;
    o["events"] = c.events;
    o["energy_per_event_pj"] = c.energy_per_event_pj;
    o["clock"] = c.clock;
    o["voltage_scaled"] = c.voltage_scaled;
    components.push_back(o);
  }
  j["components"] = components;
}

void to_json(nlohmann::ordered_json& j, const AccelWattchFixedTerms& t) {
  j = OrderedJson::object();
  j["voltage_model"] = t.VoltageModelName();
  if (!t.voltage_v.empty()) {
    OrderedJson curve;
    curve["source"] = t.voltage_source;
    curve["f_core_mhz"] = t.voltage_f_core_mhz;
    curve["voltage"] = t.voltage_v;
    j["voltage_curve"] = curve;
  }
  OrderedJson c;
  c["source"] = t.constant_source;
  c["p_const_w"] = t.p_const_w;
  j["constant"] = c;
  OrderedJson s;
  s["source"] = t.static_source;
  s["reference_f_core_mhz"] = t.static_f_core_mhz;
  s["num_sms"] = t.num_sms;
  s["warp_size"] = t.warp_size;
  s["half_warp_lanes"] = t.half_warp_lanes;
  s["default_category"] = t.default_category;
  OrderedJson categories = OrderedJson::array();
  for (const CategoryStaticTerm& term : t.categories) {
    OrderedJson o;
    o["category"] = term.category;
    o["model"] = term.model;
    o["p_static_first_lane_w"] = term.p_static_first_lane_w;
    o["p_static_add_lane_w"] = term.p_static_add_lane_w;
    categories.push_back(o);
  }
  s["categories"] = categories;
  j["static"] = s;
  OrderedJson idle;
  idle["source"] = t.idle_source;
  idle["f_core_mhz"] = t.idle_f_core_mhz;
  idle["p_idle_sm_w"] = t.p_idle_sm_w;
  j["idle"] = idle;
}

AccelWattchEnergies EnergiesFromJson(const std::string& path, const std::string& text,
                                     const nlohmann::json& object, const std::string& key) {
  TermsReader reader(path, text);
  AccelWattchEnergies e = reader.Energies(object, key);
  e.source = reader.String(object, key, "source");
  return e;
}

AccelWattchFixedTerms FixedTermsFromJson(const std::string& path, const std::string& text,
                                         const nlohmann::json& object, const std::string& key) {
  return TermsReader(path, text).Fixed(object, key);
}

}  // namespace wattcal
