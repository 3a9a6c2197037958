#include "accelwattch/scaling_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/json_lines.h"
#include "util/errors.h"
#include "util/json_check.h"
#include "util/nan.h"
#include "util/output.h"

namespace wattcal {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

OrderedJson Numbers(const std::vector<double>& values) {
  OrderedJson a = OrderedJson::array();
  for (double v : values) a.push_back(FiniteOrNull<OrderedJson>(v));
  return a;
}

// Reads the JSON model with every error naming its line.
class Reader : public JsonFieldReader {
 public:
  Reader(const std::string& path, const std::string& text, const Json& root)
      : JsonFieldReader(path, text), text_(text), root_(root) {}

  AccelWattchModel Read() {
    CheckFormatAndVersion(root_, kAccelWattchModelFormat, AccelWattchModel::kFormatVersion);
    AccelWattchModel m;
    m.trained_on = String(root_, "", "trained_on");
    const Json& kernels = Array(root_, "", "training_kernels");
    for (size_t k = 0; k < kernels.size(); ++k) {
      const std::string p = fmt::format("training_kernels[{}]", k);
      if (!kernels[k].is_string()) Fail(p, "expected a kernel name");
      m.training_kernels.push_back(kernels[k].get<std::string>());
    }

    const Json& components = Array(root_, "", "components");
    if (components.empty()) Fail("components", "expected at least one component");
    std::set<std::string> names;
    for (size_t i = 0; i < components.size(); ++i) {
      const std::string p = fmt::format("components[{}]", i);
      const std::string name = String(components[i], p, "component");
      if (name.empty()) Fail(p + ".component", "empty component name");
      if (!names.insert(name).second) {
        Fail(p + ".component", fmt::format("component '{}' is named twice", name));
      }
      const double x = Number(components[i], p, "x");
      const double lo = Number(components[i], p, "lower_bound");
      const double hi = Number(components[i], p, "upper_bound");
      const double prior = Number(components[i], p, "prior_x");
      if (!(lo >= 0.0 && lo <= hi)) {
        Fail(p + ".lower_bound",
             fmt::format("bounds [{}, {}] must satisfy 0 <= lower <= upper", lo, hi));
      }
      // The bounds were enforced exactly by the fit; 1e-12 relative leaves room for editing.
      if (x < lo * (1 - 1e-12) || x > hi * (1 + 1e-12)) {
        Fail(p + ".x", fmt::format("x = {} lies outside its bounds [{}, {}]", x, lo, hi));
      }
      if (!(prior > 0.0)) Fail(p + ".prior_x", fmt::format("must be > 0, got {}", prior));
      m.components.push_back(name);
      m.x.push_back(x);
      m.lower_bound.push_back(lo);
      m.upper_bound.push_back(hi);
      m.prior_x.push_back(prior);
    }

    const Json& orderings = Array(root_, "", "orderings");
    for (size_t e = 0; e < orderings.size(); ++e) {
      const std::string p = fmt::format("orderings[{}]", e);
      Ordering o = ReadOrdering(orderings[e], p);
      const int a = m.FindComponent(o.lower), b = m.FindComponent(o.upper);
      if (a < 0 || b < 0) {
        Fail(p, fmt::format("'{}' names a component the model does not have", o.Text()));
      }
      if (m.x[a] > m.x[b] * (1 + 1e-12)) {
        Fail(p, fmt::format("x violates {}: {} > {}", o.Text(), m.x[a], m.x[b]));
      }
      m.orderings.push_back(o);
    }
    const Json& dropped = Array(root_, "", "dropped_orderings");
    for (size_t e = 0; e < dropped.size(); ++e) {
      const std::string p = fmt::format("dropped_orderings[{}]", e);
      DroppedOrdering d{ReadOrdering(dropped[e], p), String(dropped[e], p, "reason")};
      m.dropped_orderings.push_back(d);
    }
    ReadFit(&m.fit, m.components.size());
    const bool has_energies = root_.contains("energies"), has_fixed = root_.contains("fixed_terms");
    if (has_energies != has_fixed) {
      Fail(has_energies ? "energies" : "fixed_terms",
           "a whole Eq. 12 model needs both \"energies\" and \"fixed_terms\"");
    }
    if (has_energies) {
      m.has_terms = true;
      m.energies = EnergiesFromJson(path_, text_, root_["energies"], "energies");
      m.fixed = FixedTermsFromJson(path_, text_, root_["fixed_terms"], "fixed_terms");
      if (m.energies.ComponentNames() != m.components) {
        Fail("energies.components", fmt::format("components {} differ from the scaling factors' {}",
                                                fmt::join(m.energies.ComponentNames(), ", "),
                                                fmt::join(m.components, ", ")));
      }
    }
    return m;
  }

 private:
  std::vector<double> Vector(const Json& object, const std::string& parent, const std::string& key,
                             size_t count) const {
    const Json& v = Array(object, parent, key);
    const std::string p = Join(parent, key);
    if (!v.empty() && v.size() != count) {
      Fail(p,
           fmt::format("expected {} values (one per component) or none, got {}", count, v.size()));
    }
    std::vector<double> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(NumberValue(v[i], fmt::format("{}[{}]", p, i)));
    return out;
  }
  Ordering ReadOrdering(const Json& o, const std::string& p) const {
    Ordering out;
    out.lower = String(o, p, "lower");
    out.upper = String(o, p, "upper");
    const std::string source = String(o, p, "source");
    if (source != "AccelWattch Eq. 14") {
      // "FILE:LINE": keep the file, and the line when it parses.
      const size_t colon = source.rfind(':');
      out.file = colon == std::string::npos ? source : source.substr(0, colon);
      if (colon != std::string::npos) {
        try {
          out.line = std::stoll(source.substr(colon + 1));
        } catch (const std::exception&) {
          out.file = source;
        }
      }
    }
    return out;
  }
  void ReadFit(AccelWattchFitReport* fit, size_t num_components) const {
    const Json& f = Get(root_, "", "fit");
    fit->residual = String(f, "fit", "residual");
    if (fit->residual != "relative") {
      Fail("fit.residual", fmt::format("expected \"relative\", got \"{}\"", fit->residual));
    }
    fit->prior_weight = Number(f, "fit", "prior_weight");
    fit->prior_source = String(f, "fit", "prior_source");
    fit->kept_start = String(f, "fit", "kept_start");
    fit->converged = Bool(f, "fit", "converged");
    fit->final_cost = Number(f, "fit", "final_cost", true);
    fit->train_kernels = Int(f, "fit", "train_kernels");
    fit->train_mape_pct = Number(f, "fit", "train_mape_pct", true);
    fit->train_max_ape_pct = Number(f, "fit", "train_max_ape_pct", true);
    fit->train_rmse_w = Number(f, "fit", "train_rmse_w", true);
    fit->train_pearson_r = Number(f, "fit", "train_pearson_r", true);
    fit->max_constraint_violation = Number(f, "fit", "max_constraint_violation", true);
    const Json& starts = Array(f, "fit", "starts");
    for (size_t s = 0; s < starts.size(); ++s) {
      const std::string p = fmt::format("fit.starts[{}]", s);
      AccelWattchStartReport r;
      r.name = String(starts[s], p, "name");
      r.run = Bool(starts[s], p, "run");
      r.converged = Bool(starts[s], p, "converged");
      r.iterations = Int(starts[s], p, "iterations");
      r.initial_cost = Number(starts[s], p, "initial_cost", true);
      r.final_cost = Number(starts[s], p, "final_cost", true);
      r.train_mape_pct = Number(starts[s], p, "train_mape_pct", true);
      r.termination = String(starts[s], p, "termination");
      r.x_start = Vector(starts[s], p, "x_start", num_components);
      r.x = Vector(starts[s], p, "x", num_components);
      fit->starts.push_back(r);
    }
  }

  const std::string& text_;
  const Json& root_;
};

OrderedJson OrderingJson(const Ordering& o) {
  OrderedJson j;
  j["lower"] = o.lower;
  j["upper"] = o.upper;
  j["source"] = o.Source();
  return j;
}

}  // namespace

int AccelWattchModel::FindComponent(const std::string& name) const {
  const auto it = std::find(components.begin(), components.end(), name);
  return it == components.end() ? -1 : static_cast<int>(it - components.begin());
}

AccelWattchModel PublishedAccelWattchModel(const ComponentTable& table) {
  AccelWattchModel m;
  m.components = table.components;
  const size_t n = table.components.size();
  m.x.assign(n, 1.0);
  m.lower_bound.assign(n, 1.0);
  m.upper_bound.assign(n, 1.0);
  m.prior_x.assign(n, 1.0);
  m.fit.prior_source = "x = 1";
  m.fit.kept_start = "published (no fit)";
  m.fit.converged = true;
  return m;
}

std::vector<double> PredictKernelPowerW(const AccelWattchModel& model,
                                        const ComponentTable& table) {
  std::vector<int> model_index;
  std::vector<std::string> unscaled;
  for (const std::string& c : table.components) {
    const int i = model.FindComponent(c);
    if (i < 0) unscaled.push_back(c);
    model_index.push_back(i);
  }
  std::vector<std::string> absent;
  for (const std::string& c : model.components) {
    if (table.FindComponent(c) < 0) absent.push_back(c);
  }
  if (!unscaled.empty() || !absent.empty()) {
    std::string message = "the table's components do not match the model's:";
    if (!unscaled.empty())
      message += " no scaling factor for " + fmt::format("{}", fmt::join(unscaled, ", ")) + ";";
    if (!absent.empty())
      message += " no column for the model's " + fmt::format("{}", fmt::join(absent, ", ")) + ";";
    message += model.trained_on.empty() ? "" : " (model trained on " + model.trained_on + ")";
    throw InputError(table.path, 1, "components", message);
  }
  std::vector<double> power_w(table.num_kernels());
  for (int k = 0; k < table.num_kernels(); ++k) {
    double p = 0.0;
    for (int i = 0; i < table.num_components(); ++i)
      p += model.x[model_index[i]] * table.dynamic_w[k][i];
    power_w[k] = p + table.FixedW(k);
  }
  return power_w;
}

std::vector<PredictionRow> PredictKernels(const AccelWattchModel& model,
                                          const ComponentTable& table) {
  const std::vector<double> power_w = PredictKernelPowerW(model, table);
  std::vector<PredictionRow> rows;
  for (int k = 0; k < table.num_kernels(); ++k) {
    PredictionRow row;
    row.benchmark = table.kernels[k];
    row.measured_w = table.measured_w[k];
    row.predicted_w = power_w[k];
    row.line = table.lines[k];
    rows.push_back(row);
  }
  return rows;
}

std::string FormatAccelWattchModelSummary(const AccelWattchModel& m) {
  const AccelWattchFitReport& f = m.fit;
  std::string out = fmt::format(
      "AccelWattch scaling factors ({} components, {} orderings enforced, {} dropped)\n",
      m.components.size(), m.orderings.size(), m.dropped_orderings.size());
  for (size_t i = 0; i < m.components.size(); ++i) {
    std::string note;
    if (m.x[i] <= m.lower_bound[i])
      note = "  (at lower bound)";
    else if (m.x[i] >= m.upper_bound[i])
      note = "  (at upper bound)";
    for (const Ordering& o : m.orderings) {
      const int a = m.FindComponent(o.lower), b = m.FindComponent(o.upper);
      if ((a == static_cast<int>(i) || b == static_cast<int>(i)) && m.x[a] == m.x[b]) {
        note += "  (tied: " + o.Text() + ")";
      }
    }
    out += fmt::format("  {:<12} x = {:<12.6g}{}\n", m.components[i], m.x[i], note);
  }
  for (const AccelWattchStartReport& s : f.starts) {
    if (!s.run) {
      out += fmt::format("  start '{}': {}\n", s.name, s.termination);
      continue;
    }
    out += fmt::format(
        "  start '{}': cost {:.6g} -> {:.6g} in {} iterations ({}), train MAPE {:.3f} %\n", s.name,
        s.initial_cost, s.final_cost, s.iterations, s.converged ? "converged" : "not converged",
        s.train_mape_pct);
  }
  out += fmt::format(
      "  kept start '{}': train MAPE {:.3f} %, max APE {:.2f} %, r {:.4f} on {} kernels; "
      "prior {} with weight {}; largest constraint violation {:.3g}\n",
      f.kept_start, f.train_mape_pct, f.train_max_ape_pct, f.train_pearson_r, f.train_kernels,
      f.prior_source, f.prior_weight, f.max_constraint_violation);
  return out;
}

void to_json(nlohmann::ordered_json& j, const AccelWattchModel& m) {
  j = OrderedJson::object();
  j["format"] = kAccelWattchModelFormat;
  j["version"] = AccelWattchModel::kFormatVersion;
  j["wattcal_version"] = WattcalVersion();
  j["trained_on"] = m.trained_on;
  j["training_kernels"] = m.training_kernels;
  OrderedJson components = OrderedJson::array();
  for (size_t i = 0; i < m.components.size(); ++i) {
    OrderedJson c;
    c["component"] = m.components[i];
    c["x"] = FiniteOrNull<OrderedJson>(m.x[i]);
    c["lower_bound"] = FiniteOrNull<OrderedJson>(m.lower_bound[i]);
    c["upper_bound"] = FiniteOrNull<OrderedJson>(m.upper_bound[i]);
    c["prior_x"] = FiniteOrNull<OrderedJson>(m.prior_x[i]);
    components.push_back(c);
  }
  j["components"] = components;
  OrderedJson orderings = OrderedJson::array();
  for (const Ordering& o : m.orderings) orderings.push_back(OrderingJson(o));
  j["orderings"] = orderings;
  OrderedJson dropped = OrderedJson::array();
  for (const DroppedOrdering& d : m.dropped_orderings) {
    OrderedJson o = OrderingJson(d.ordering);
    o["reason"] = d.reason;
    dropped.push_back(o);
  }
  j["dropped_orderings"] = dropped;
  const AccelWattchFitReport& f = m.fit;
  OrderedJson fit;
  fit["residual"] = f.residual;
  fit["prior_weight"] = FiniteOrNull<OrderedJson>(f.prior_weight);
  fit["prior_source"] = f.prior_source;
  fit["kept_start"] = f.kept_start;
  fit["converged"] = f.converged;
  fit["final_cost"] = FiniteOrNull<OrderedJson>(f.final_cost);
  fit["train_kernels"] = f.train_kernels;
  fit["train_mape_pct"] = FiniteOrNull<OrderedJson>(f.train_mape_pct);
  fit["train_max_ape_pct"] = FiniteOrNull<OrderedJson>(f.train_max_ape_pct);
  fit["train_rmse_w"] = FiniteOrNull<OrderedJson>(f.train_rmse_w);
  fit["train_pearson_r"] = FiniteOrNull<OrderedJson>(f.train_pearson_r);
  fit["max_constraint_violation"] = FiniteOrNull<OrderedJson>(f.max_constraint_violation);
  OrderedJson starts = OrderedJson::array();
  for (const AccelWattchStartReport& s : f.starts) {
    OrderedJson r;
    r["name"] = s.name;
    r["run"] = s.run;
    r["converged"] = s.converged;
    r["iterations"] = s.iterations;
    r["initial_cost"] = FiniteOrNull<OrderedJson>(s.initial_cost);
    r["final_cost"] = FiniteOrNull<OrderedJson>(s.final_cost);
    r["train_mape_pct"] = FiniteOrNull<OrderedJson>(s.train_mape_pct);
    r["termination"] = s.termination;
    r["x_start"] = Numbers(s.x_start);
    r["x"] = Numbers(s.x);
    starts.push_back(r);
  }
  fit["starts"] = starts;
  j["fit"] = fit;
  if (m.has_terms) {
    j["energies"] = m.energies;
    j["fixed_terms"] = m.fixed;
  }
}

std::string AccelWattchModelToJson(const AccelWattchModel& m) {
  return OrderedJson(m).dump(2) + "\n";
}

AccelWattchModel ReadAccelWattchModel(const std::string& path) {
  const std::string text = ReadFileText(path, "the model file");
  return Reader(path, text, ParseJsonText(path, text)).Read();
}

}  // namespace wattcal
