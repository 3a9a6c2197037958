#include "model/model_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "io/corpus_io.h"
#include "io/csv_reader.h"
#include "io/json_lines.h"
#include "model/component_trust.h"
#include "util/bounds.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/output.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kDomainNames[2] = {"core", "mem"};

// ---------------------------------------------------------------------------------------
// Checks shared by both formats.

// "" when `levels` are positive and strictly increasing, else what is wrong.
std::string CheckLevels(const std::vector<double>& levels) {
  if (levels.empty()) return "no frequency levels";
  for (size_t j = 0; j < levels.size(); ++j) {
    if (!(levels[j] > 0))
      return fmt::format("frequency level {} is {}, must be > 0", j + 1, levels[j]);
    const std::string violation = BoundViolation(PhysicalQuantity::kFrequency, levels[j]);
    if (!violation.empty()) return fmt::format("frequency level {}: {}", j + 1, violation);
    if (j > 0 && !(levels[j] > levels[j - 1])) {
      return fmt::format(
          "frequency levels must be strictly increasing: level {} is {} MHz after "
          "{} MHz",
          j + 1, levels[j], levels[j - 1]);
    }
  }
  return "";
}

// "" when `voltages` fit `levels` and are positive, else what is wrong.
std::string CheckVoltages(const std::vector<double>& voltages, const std::vector<double>& levels) {
  if (voltages.size() != levels.size()) {
    return fmt::format("{} voltages for {} frequency levels", voltages.size(), levels.size());
  }
  for (size_t j = 0; j < voltages.size(); ++j) {
    if (!(voltages[j] > 0)) return fmt::format("voltage {} is {}, must be > 0", j + 1, voltages[j]);
    const std::string violation = BoundViolation(PhysicalQuantity::kVoltage, voltages[j]);
    if (!violation.empty()) return fmt::format("voltage {}: {}", j + 1, violation);
  }
  return "";
}

// "" when `value` (a coefficient: W, W/MHz) is within kMaxAbsCoefficient, else what is wrong.
std::string CheckCoefficient(double value) {
  return BoundViolation(PhysicalQuantity::kCoefficient, value);
}

// ---------------------------------------------------------------------------------------
// gpmTOOL CSV.

std::string FormatNumber(double x) { return fmt::format("{}", x); }

std::string FormatFrequency(double f_mhz) {
  if (f_mhz == std::floor(f_mhz) && std::fabs(f_mhz) < 1e15) return fmt::format("{:.0f}", f_mhz);
  return FormatNumber(f_mhz);
}

template <typename T, typename Format>
std::string JoinLine(const std::vector<T>& values, Format format) {
  std::string line;
  for (size_t i = 0; i < values.size(); ++i) line += (i > 0 ? "," : "") + format(values[i]);
  return line + "\n";
}

PowerModel ReadGpmtoolModel(const std::string& path) {
  CsvReader reader(path);
  PowerModel model;
  model.layout = ReadGpmtoolHeader(&reader);
  const int num_domains = model.layout.num_domains();
  const std::vector<std::string> names = model.layout.ComponentNames();

  std::vector<std::string> fields;
  // Reads the next line; one trailing empty field (a trailing comma) is dropped.
  auto next_line = [&](const std::string& field, const std::string& what) {
    if (!reader.Next(&fields)) {
      throw InputError(path, reader.line(), field,
                       fmt::format("the file ends after this line; expected a line with {}", what));
    }
    if (fields.size() > 1 && fields.back().empty()) fields.pop_back();
  };
  auto read_numbers = [&](const std::vector<std::string>& field_names) {
    std::vector<double> values;
    for (size_t i = 0; i < fields.size(); ++i) {
      values.push_back(
          reader.ParseNumber(fields[i], field_names[std::min(i, field_names.size() - 1)]));
    }
    return values;
  };

  model.freq_levels_mhz.resize(num_domains);
  for (int d = 0; d < num_domains; ++d) {
    const std::string field = fmt::format("freq_levels_mhz[{}]", kDomainNames[d]);
    next_line(field, fmt::format("the {} frequency levels (MHz)", kDomainNames[d]));
    model.freq_levels_mhz[d] = read_numbers({field});
    const std::string problem = CheckLevels(model.freq_levels_mhz[d]);
    if (!problem.empty()) reader.Fail(field, problem);
  }

  // Coefficients: [alpha0_k..., alpha1_k..., gamma_i...] (gpmTOOL: beta0..beta3, omega_i).
  std::vector<std::string> coefficient_fields;
  for (int d = 0; d < num_domains; ++d) {
    coefficient_fields.push_back(fmt::format("static_w[{}]", kDomainNames[d]));
  }
  for (int d = 0; d < num_domains; ++d) {
    coefficient_fields.push_back(fmt::format("idle_dyn_w_per_mhz[{}]", kDomainNames[d]));
  }
  for (const std::string& name : names) {
    coefficient_fields.push_back(fmt::format("component_w_per_mhz[{}]", name));
  }
  next_line("coefficients", "the model coefficients");
  if (static_cast<int>(fields.size()) != model.num_coefficients()) {
    reader.Fail("coefficients",
                fmt::format("expected {} coefficients (2 per domain for {} domain(s) + {} "
                            "components), got {}",
                            model.num_coefficients(), num_domains, names.size(), fields.size()));
  }
  const std::vector<double> coefficients = read_numbers(coefficient_fields);
  for (size_t i = 0; i < coefficients.size(); ++i) {
    const std::string problem = CheckCoefficient(coefficients[i]);
    if (!problem.empty()) reader.Fail(coefficient_fields[i], problem);
  }
  model.SetCoefficients(coefficients);

  model.voltage_rel.resize(num_domains);
  for (int d = 0; d < num_domains; ++d) {
    const std::string field = fmt::format("voltage_rel[{}]", kDomainNames[d]);
    next_line(field, fmt::format("the {} relative voltages", kDomainNames[d]));
    model.voltage_rel[d] = read_numbers({field});
    const std::string problem = CheckVoltages(model.voltage_rel[d], model.freq_levels_mhz[d]);
    if (!problem.empty()) reader.Fail(field, problem);
  }
  if (reader.Next(&fields)) {
    reader.Fail("", fmt::format("unexpected line after the {} voltage line(s) that end a gpmTOOL "
                                "model file",
                                num_domains));
  }

  bool fixed = true;
  for (const std::vector<double>& levels : model.freq_levels_mhz)
    fixed = fixed && levels.size() == 1;
  model.method = fixed ? FitMethod::kFixed : FitMethod::kDvfs;
  return model;
}

// ---------------------------------------------------------------------------------------
// JSON.

class JsonModelReader : public JsonFieldReader {
 public:
  JsonModelReader(const std::string& path, const std::string& text, const Json& root)
      : JsonFieldReader(path, text), root_(root) {}

  PowerModel Read() {
    CheckFormatAndVersion(root_, kModelJsonFormat, PowerModel::kFormatVersion, "model format");
    PowerModel model;
    const std::string method = String(root_, "", "method");
    if (!ParseFitMethod(method, &model.method)) {
      Fail("method", fmt::format("expected \"dvfs\" or \"fixed\", got \"{}\"", method));
    }
    model.trained_on = String(root_, "", "trained_on");
    if (root_.contains("gpu")) model.gpu = String(root_, "", "gpu");
    ReadLayout(&model.layout);
    const int num_domains = model.layout.num_domains();

    const Json& levels = Array(root_, "", "freq_levels_mhz", num_domains);
    const Json& voltages = Array(root_, "", "voltage_rel", num_domains);
    for (int d = 0; d < num_domains; ++d) {
      const std::string levels_path = fmt::format("freq_levels_mhz[{}]", d);
      const std::string voltages_path = fmt::format("voltage_rel[{}]", d);
      model.freq_levels_mhz.push_back(Numbers(levels[d], levels_path, -1));
      std::string problem = CheckLevels(model.freq_levels_mhz[d]);
      if (!problem.empty()) Fail(levels_path, problem);
      model.voltage_rel.push_back(Numbers(voltages[d], voltages_path, -1));
      problem = CheckVoltages(model.voltage_rel[d], model.freq_levels_mhz[d]);
      if (!problem.empty()) Fail(voltages_path, problem);
    }
    if (model.method == FitMethod::kFixed) {
      for (int d = 0; d < num_domains; ++d) {
        if (model.freq_levels_mhz[d].size() != 1) {
          Fail(fmt::format("freq_levels_mhz[{}]", d),
               fmt::format("a \"fixed\" model has one frequency level per domain, got {}",
                           model.freq_levels_mhz[d].size()));
        }
      }
    }
    model.static_w = Coefficients(Get(root_, "", "static_w"), "static_w", num_domains);
    model.idle_dyn_w_per_mhz =
        Coefficients(Get(root_, "", "idle_dyn_w_per_mhz"), "idle_dyn_w_per_mhz", num_domains);

    const std::vector<std::string> names = model.layout.ComponentNames();
    const Json& components = Array(root_, "", "component_w_per_mhz", names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string path = fmt::format("component_w_per_mhz[{}]", i);
      const std::string name = String(components[i], path, "component");
      if (name != names[i]) {
        Fail(path + ".component",
             fmt::format("expected component '{}' (layout order), got '{}'", names[i], name));
      }
      const double w_per_mhz = Number(components[i], path, "w_per_mhz");
      const std::string problem = CheckCoefficient(w_per_mhz);
      if (!problem.empty()) Fail(path + ".w_per_mhz", problem);
      model.component_w_per_mhz.push_back(w_per_mhz);
    }
    ReadFit(&model.fit);
    ReadTraining(&model);
    return model;
  }

 private:
  // Numbers() that are model coefficients (within kMaxAbsCoefficient, util/bounds.h).
  std::vector<double> Coefficients(const Json& v, const std::string& path, int64_t count) const {
    std::vector<double> out = Numbers(v, path, count);
    for (size_t i = 0; i < out.size(); ++i) {
      const std::string problem = CheckCoefficient(out[i]);
      if (!problem.empty()) Fail(fmt::format("{}[{}]", path, i), problem);
    }
    return out;
  }

  std::vector<double> Numbers(const Json& v, const std::string& path, int64_t count) const {
    CheckArray(v, path, count);
    std::vector<double> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(NumberValue(v[i], fmt::format("{}[{}]", path, i)));
    return out;
  }

  void ReadLayout(Layout* layout) const {
    const Json& layout_json = Get(root_, "", "layout");
    const Json& domains = Get(layout_json, "layout", "domains");
    CheckArray(domains, "layout.domains", -1);
    if (domains.size() != 1 && domains.size() != 2) {
      Fail("layout.domains",
           fmt::format("expected 1 or 2 frequency domains, got {}", domains.size()));
    }
    std::set<std::string> seen;
    for (size_t d = 0; d < domains.size(); ++d) {
      const std::string path = fmt::format("layout.domains[{}]", d);
      FrequencyDomain domain;
      domain.name = String(domains[d], path, "name");
      if (domain.name != kDomainNames[d]) {
        Fail(path + ".name", fmt::format("domain {} must be named \"{}\", got \"{}\"", d,
                                         kDomainNames[d], domain.name));
      }
      domain.default_freq_mhz = Number(domains[d], path, "default_freq_mhz");
      if (!(domain.default_freq_mhz > 0)) {
        Fail(path + ".default_freq_mhz",
             fmt::format("must be > 0 MHz, got {}", domain.default_freq_mhz));
      }
      const Json& components = Array(domains[d], path, "components", -1);
      for (size_t i = 0; i < components.size(); ++i) {
        const std::string component_path = fmt::format("{}.components[{}]", path, i);
        if (!components[i].is_string() || components[i].get<std::string>().empty()) {
          Fail(component_path, "expected a non-empty component name");
        }
        const std::string name = components[i].get<std::string>();
        if (!seen.insert(CanonicalComponentName(name)).second) {
          Fail(component_path, fmt::format("component '{}' is named twice", name));
        }
        domain.components.push_back(name);
      }
      layout->domains.push_back(domain);
    }
    if (layout->num_components() == 0) Fail("layout.domains", "the layout has no components");
  }

  // fit.`key`: one of the names `parse` knows (`names`), or "" (unset: a model that does not say).
  template <typename Kind>
  void ReadFitName(const Json& f, const char* key, bool (*parse)(const std::string&, Kind*),
                   const char* names, std::optional<Kind>* out) const {
    const std::string name = String(f, "fit", key);
    if (name.empty()) return;
    Kind kind{};
    if (!parse(name, &kind)) {
      Fail(fmt::format("fit.{}", key), fmt::format("expected {} or \"\", got \"{}\"", names, name));
    }
    *out = kind;
  }

  void ReadFit(FitReport* fit) const {
    const Json& f = Get(root_, "", "fit");
    ReadFitName(f, "solver", ParseModelSolver, "\"joint\", \"alternating\", \"nnls\", \"truth\"",
                &fit->solver);
    ReadFitName(f, "loss", ParseFitLoss, "\"l2\", \"huber\", \"cauchy\"", &fit->loss);
    fit->loss_scale = Number(f, "fit", "loss_scale");
    fit->residual = String(f, "fit", "residual");
    fit->converged = Bool(f, "fit", "converged");
    fit->iterations = Int(f, "fit", "iterations");
    fit->initial_cost = Number(f, "fit", "initial_cost");
    fit->final_cost = Number(f, "fit", "final_cost");
    // time_s is not stored: the file must be byte-identical across reruns.
    fit->termination = String(f, "fit", "termination");
    fit->train_rows = Int(f, "fit", "train_rows");
    fit->train_benchmarks = Int(f, "fit", "train_benchmarks");
    fit->train_rmse_w = Number(f, "fit", "train_rmse_w");
    fit->train_mape_pct = Number(f, "fit", "train_mape_pct");
    fit->train_max_ape_pct = Number(f, "fit", "train_max_ape_pct");
    fit->train_r2 = Number(f, "fit", "train_r2");
  }

  // The keys wattcal added after version 1 was first written: each optional, so that older
  // model files read as before (no limit, unknown training range, no notes).
  void ReadTraining(PowerModel* model) const {
    // Absent (older files) or null: unset.
    model->power_limit_w = OptionalNumber(root_, "", "power_limit_w");
    if (model->power_limit_w &&
        !(*model->power_limit_w > 0.0 && *model->power_limit_w <= kMaxPowerW)) {
      Fail("power_limit_w",
           fmt::format("must lie in (0, {}] W, or be null (unknown), got {}: no GPU board draws "
                       "that (a limit in mW or another unit?)",
                       kMaxPowerW, *model->power_limit_w));
    }
    if (root_.contains("training_range")) {
      const Json& range = Get(root_, "", "training_range");
      model->training_range.max_power_w =
          Number(range, "training_range", "max_power_w", /*allow_null=*/true);
      const std::vector<std::string> names = model->layout.ComponentNames();
      const Json& utils = Array(range, "training_range", "max_util_frac", names.size());
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string path = fmt::format("training_range.max_util_frac[{}]", i);
        const std::string name = String(utils[i], path, "component");
        if (name != names[i]) {
          Fail(path + ".component",
               fmt::format("expected component '{}' (layout order), got '{}'", names[i], name));
        }
        const double u = Number(utils[i], path, "max_util_frac");
        if (u < 0.0) Fail(path + ".max_util_frac", fmt::format("must be >= 0, got {}", u));
        model->training_range.max_util_frac.push_back(u);
      }
    }
    if (root_.contains("coefficient_ci95")) ReadCoefficientCi(model);
    if (root_.contains("vf_curve")) ReadVfCurve(model);
    if (root_.contains("prediction_interval")) ReadPredictionInterval(model);
    if (root_.contains("training_notes")) {
      const Json& notes = Array(root_, "", "training_notes", -1);
      for (size_t i = 0; i < notes.size(); ++i) {
        if (!notes[i].is_string()) Fail(fmt::format("training_notes[{}]", i), "expected a string");
        model->training_notes.push_back(notes[i].get<std::string>());
      }
    }
  }

  // vf_curve (model/vf_curve.h): optional; a well-formed curve ending at the core's default clock.
  void ReadVfCurve(PowerModel* model) const {
    const Json& c = Get(root_, "", "vf_curve");
    VfCurve& curve = model->vf_curve;
    curve.levels_mhz = Numbers(Get(c, "vf_curve", "levels_mhz"), "vf_curve.levels_mhz", -1);
    curve.v_rel = Numbers(Get(c, "vf_curve", "v_rel"), "vf_curve.v_rel",
                          static_cast<int64_t>(curve.levels_mhz.size()));
    curve.source = String(c, "vf_curve", "source");
    const std::string problem = curve.Problem();
    if (!problem.empty()) Fail("vf_curve", problem);
    if (curve.reference_mhz() != model->layout.domains[0].default_freq_mhz) {
      Fail("vf_curve.levels_mhz",
           fmt::format("the curve must end at the core's default clock {} MHz, not {} MHz",
                       model->layout.domains[0].default_freq_mhz, curve.reference_mhz()));
    }
  }

  // coefficient_ci95 (wattcal-calibrate --bootstrap N): optional; lo <= hi, finite.
  void ReadCoefficientCi(PowerModel* model) const {
    const Json& c = Get(root_, "", "coefficient_ci95");
    CoefficientCi& ci = model->coefficient_ci95;
    ci.bootstrap_replicates = Int(c, "coefficient_ci95", "bootstrap_replicates");
    if (ci.bootstrap_replicates < 1) {
      Fail("coefficient_ci95.bootstrap_replicates",
           fmt::format("must be >= 1, got {}", ci.bootstrap_replicates));
    }
    const Json& seed = Get(c, "coefficient_ci95", "seed");
    if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0)) {
      Fail("coefficient_ci95.seed", "expected a non-negative integer");
    }
    ci.seed = seed.get<uint64_t>();
    const int num_domains = model->layout.num_domains();
    auto intervals = [&](const std::string& key, size_t count) {
      const std::string parent = "coefficient_ci95." + key;
      const Json& a = Array(c, "coefficient_ci95", key, static_cast<int64_t>(count));
      std::vector<std::pair<double, double>> out;
      for (size_t i = 0; i < a.size(); ++i) {
        const std::string path = fmt::format("{}[{}]", parent, i);
        const std::vector<double> v = Coefficients(a[i], path, 2);
        if (!(v[0] <= v[1]))
          Fail(path, fmt::format("expected [lo, hi] with lo <= hi, got [{}, {}]", v[0], v[1]));
        out.emplace_back(v[0], v[1]);
      }
      return out;
    };
    ci.static_w = intervals("static_w", num_domains);
    ci.idle_dyn_w_per_mhz = intervals("idle_dyn_w_per_mhz", num_domains);
    ci.component_w_per_mhz =
        intervals("component_w_per_mhz", model->layout.ComponentNames().size());
  }

  // prediction_interval (wattcal-calibrate --bootstrap N): optional; one coefficient vector per
  // replicate, the out-of-bag ratios' quantiles positive and non-decreasing.
  void ReadPredictionInterval(PowerModel* model) const {
    const std::string key = "prediction_interval";
    const Json& c = Get(root_, "", key);
    PredictionIntervalData& pi = model->prediction_interval;
    pi.oob_predictions = Int(c, key, "oob_predictions");
    if (pi.oob_predictions < 1) {
      Fail(key + ".oob_predictions", fmt::format("must be >= 1, got {}", pi.oob_predictions));
    }
    pi.oob_ratio_quantiles =
        Numbers(Get(c, key, "oob_ratio_quantiles"), key + ".oob_ratio_quantiles",
                PredictionIntervalData::kOobRatioQuantiles);
    for (size_t k = 0; k < pi.oob_ratio_quantiles.size(); ++k) {
      const double q = pi.oob_ratio_quantiles[k];
      if (!(q > 0.0) || (k > 0 && q < pi.oob_ratio_quantiles[k - 1])) {
        Fail(fmt::format("{}.oob_ratio_quantiles[{}]", key, k),
             fmt::format("expected positive, non-decreasing ratios, got {}", q));
      }
    }
    const Json& replicates = Array(c, key, "replicate_coefficients", -1);
    if (replicates.empty())
      Fail(key + ".replicate_coefficients", "expected at least one replicate");
    for (size_t b = 0; b < replicates.size(); ++b) {
      pi.replicate_coefficients.push_back(
          Coefficients(replicates[b], fmt::format("{}.replicate_coefficients[{}]", key, b),
                       model->num_coefficients()));
    }
  }

  const Json& root_;
};

PowerModel ReadJsonModel(const std::string& path, const std::string& text) {
  const Json root = ParseJsonText(path, text);
  return JsonModelReader(path, text, root).Read();
}

}  // namespace

void to_json(nlohmann::ordered_json& c, const CoefficientCi& ci) {
  c = OrderedJson::object();
  c["bootstrap_replicates"] = ci.bootstrap_replicates;
  c["seed"] = ci.seed;
  auto pairs = [](const std::vector<std::pair<double, double>>& v) {
    OrderedJson a = OrderedJson::array();
    for (const auto& p : v) a.push_back(OrderedJson::array({p.first, p.second}));
    return a;
  };
  c["static_w"] = pairs(ci.static_w);
  c["idle_dyn_w_per_mhz"] = pairs(ci.idle_dyn_w_per_mhz);
  c["component_w_per_mhz"] = pairs(ci.component_w_per_mhz);
}

void to_json(nlohmann::ordered_json& fit, const FitReport& f) {
  fit = OrderedJson::object();
  fit["solver"] = f.solver ? ModelSolverName(*f.solver) : "";
  fit["loss"] = f.loss ? FitLossName(*f.loss) : "";
  fit["loss_scale"] = f.loss_scale;
  fit["residual"] = f.residual;
  fit["converged"] = f.converged;
  fit["iterations"] = f.iterations;
  fit["initial_cost"] = f.initial_cost;
  fit["final_cost"] = f.final_cost;
  fit["termination"] = f.termination;
  fit["train_rows"] = f.train_rows;
  fit["train_benchmarks"] = f.train_benchmarks;
  fit["train_rmse_w"] = f.train_rmse_w;
  fit["train_mape_pct"] = f.train_mape_pct;
  fit["train_max_ape_pct"] = f.train_max_ape_pct;
  fit["train_r2"] = f.train_r2;
}

void to_json(nlohmann::ordered_json& j, const PowerModel& model) {
  j = OrderedJson::object();
  j["format"] = kModelJsonFormat;
  j["version"] = PowerModel::kFormatVersion;
  j["wattcal_version"] = WattcalVersion();
  j["method"] = FitMethodName(model.method);
  j["trained_on"] = model.trained_on;
  if (!model.gpu.empty()) j["gpu"] = model.gpu;
  OrderedJson domains = OrderedJson::array();
  for (const FrequencyDomain& d : model.layout.domains) {
    OrderedJson domain;
    domain["name"] = d.name;
    domain["default_freq_mhz"] = d.default_freq_mhz;
    domain["components"] = d.components;
    domains.push_back(domain);
  }
  j["layout"]["domains"] = domains;
  j["freq_levels_mhz"] = model.freq_levels_mhz;
  j["voltage_rel"] = model.voltage_rel;
  j["static_w"] = model.static_w;
  j["idle_dyn_w_per_mhz"] = model.idle_dyn_w_per_mhz;
  OrderedJson components = OrderedJson::array();
  const std::vector<std::string> names = model.layout.ComponentNames();
  for (size_t i = 0; i < names.size() && i < model.component_w_per_mhz.size(); ++i) {
    OrderedJson c;
    c["component"] = names[i];
    c["w_per_mhz"] = model.component_w_per_mhz[i];
    components.push_back(c);
  }
  j["component_w_per_mhz"] = components;
  // Unset (unknown) is written as null.
  j["power_limit_w"] = model.power_limit_w ? OrderedJson(*model.power_limit_w) : OrderedJson();
  OrderedJson range;
  range["max_power_w"] = model.training_range.max_power_w;
  OrderedJson max_util = OrderedJson::array();
  for (size_t i = 0; i < names.size() && i < model.training_range.max_util_frac.size(); ++i) {
    OrderedJson c;
    c["component"] = names[i];
    c["max_util_frac"] = model.training_range.max_util_frac[i];
    max_util.push_back(c);
  }
  range["max_util_frac"] = max_util;
  if (model.training_range.known()) j["training_range"] = range;
  j["training_notes"] = model.training_notes;
  if (model.coefficient_ci95.known()) {
    // Each interval is [lo, hi] (2.5% and 97.5% bootstrap percentiles), in the coefficients'
    // order and units; component_w_per_mhz in layout order.
    j["coefficient_ci95"] = model.coefficient_ci95;
  }
  if (model.vf_curve.known()) {
    OrderedJson curve;
    curve["levels_mhz"] = model.vf_curve.levels_mhz;
    curve["v_rel"] = model.vf_curve.v_rel;
    curve["f_min_mhz"] = model.vf_curve.lowest_mhz();
    curve["f_max_mhz"] = model.vf_curve.reference_mhz();
    curve["source"] = model.vf_curve.source;
    j["vf_curve"] = curve;
  }
  if (model.prediction_interval.known()) {
    // The bootstrap replicates' coefficients (Coefficients() order) and the quantiles of the
    // out-of-bag measured / predicted ratios (model/prediction_interval.h).
    const PredictionIntervalData& pi = model.prediction_interval;
    OrderedJson interval = OrderedJson::object();
    interval["oob_predictions"] = pi.oob_predictions;
    interval["oob_ratio_quantiles"] = pi.oob_ratio_quantiles;
    interval["replicate_coefficients"] = pi.replicate_coefficients;
    j["prediction_interval"] = interval;
  }
  // Derived from the fields above, for readers of the file (never read back): per component,
  // W at full use at the default pair, its interval, how far training reached, and flags.
  OrderedJson trust = OrderedJson::array();
  for (const ComponentTrust& t : ComponentTrustTable(model)) {
    OrderedJson row;
    row["component"] = t.component;
    row["full_use_w"] = t.full_use_w;
    row["full_use_w_ci95"] =
        t.has_ci ? OrderedJson::array({t.ci_low_w, t.ci_high_w}) : OrderedJson();
    row["trained_up_to_frac"] =
        std::isfinite(t.trained_up_to) ? OrderedJson(t.trained_up_to) : OrderedJson();
    row["flags"] = t.flags;
    trust.push_back(row);
  }
  j["component_trust"] = trust;
  j["fit"] = model.fit;
}

std::string ModelToJson(const PowerModel& model) { return OrderedJson(model).dump(2) + "\n"; }

std::string ModelToGpmtoolCsv(const PowerModel& model) {
  const Layout& layout = model.layout;
  std::string out = fmt::format("{}\n", layout.num_domains());
  std::vector<double> defaults;
  std::vector<int> counts;
  for (const FrequencyDomain& d : layout.domains) {
    defaults.push_back(d.default_freq_mhz);
    counts.push_back(static_cast<int>(d.components.size()));
  }
  out += JoinLine(defaults, FormatFrequency);
  out += JoinLine(counts, [](int c) { return std::to_string(c); });
  out += JoinLine(layout.ComponentNames(), CsvFieldKeepingEdgeSpaces);
  for (const std::vector<double>& levels : model.freq_levels_mhz)
    out += JoinLine(levels, FormatFrequency);
  out += JoinLine(model.Coefficients(), FormatNumber);
  for (const std::vector<double>& volts : model.voltage_rel) out += JoinLine(volts, FormatNumber);
  return out;
}

PowerModel ReadModel(const std::string& path) {
  const std::string text = ReadFileText(path, "file");
  size_t first = text.size() - StripUtf8ByteOrderMark(std::string_view(text)).size();
  while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
  if (first < text.size() && text[first] == '{') return ReadJsonModel(path, text);
  return ReadGpmtoolModel(path);
}

}  // namespace wattcal
