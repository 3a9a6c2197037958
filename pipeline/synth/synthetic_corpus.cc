#include "synth/synthetic_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "util/json_file.h"
#include "util/errors.h"
#include "util/option_rule.h"
#include "util/rng.h"

namespace wattcal {

bool SyntheticSpec::Check(std::string* error) const {
  const int nd = layout.num_domains();
  if (nd < 1 || nd > 2)
    return RejectOption(error, "layout has {} domains; 1 or 2 are supported", nd);
  if (static_cast<int>(voltage.size()) != nd)
    return RejectOption(error, "voltage has {} curves for {} domains", voltage.size(), nd);
  for (int d = 0; d < nd; ++d) {
    const auto& lv = voltage[d].freq_levels_mhz;
    if (std::find(lv.begin(), lv.end(), layout.domains[d].default_freq_mhz) == lv.end())
      return RejectOption(error, "voltage[{}].freq_levels_mhz lacks the default frequency {}", d,
                          layout.domains[d].default_freq_mhz);
    if (!std::is_sorted(lv.begin(), lv.end()))
      return RejectOption(error, "voltage[{}].freq_levels_mhz must be ascending", d);
  }
  const size_t nc = 2 * nd + layout.num_components();
  if (coefficients.size() != nc)
    return RejectOption(error, "coefficients has {} values, the layout needs {}",
                        coefficients.size(), nc);
  for (double c : coefficients) {
    if (!(c >= 0.0)) return RejectOption(error, "coefficients must be >= 0 (got {})", c);
  }
  if (microbenchmarks_per_component < 1)
    return RejectOption(error, "microbenchmarks_per_component = {} must be >= 1",
                        microbenchmarks_per_component);
  if (mix_microbenchmarks < 0)
    return RejectOption(error, "mix_microbenchmarks = {} must be >= 0", mix_microbenchmarks);
  if (heldout_applications < 1)
    return RejectOption(error, "heldout_applications = {} must be >= 1", heldout_applications);
  if (!(noise_rel >= 0.0 && noise_rel < 0.5))
    return RejectOption(error, "noise_rel = {} must lie in [0, 0.5)", noise_rel);
  if (corrupted_rows < 0)
    return RejectOption(error, "corrupted_rows = {} must be >= 0", corrupted_rows);
  return true;
}

SyntheticSpec ReadSyntheticSpec(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "spec file");
  SyntheticSpec spec;
  try {
    spec.name = j.value("name", spec.name);
    for (const auto& dom : j.at("domains")) {
      FrequencyDomain d;
      d.name = dom.at("name").get<std::string>();
      d.default_freq_mhz = dom.at("default_freq_mhz").get<double>();
      d.components = dom.at("components").get<std::vector<std::string>>();
      spec.layout.domains.push_back(d);
      SyntheticVoltageCurve curve;
      curve.freq_levels_mhz = dom.at("freq_levels_mhz").get<std::vector<double>>();
      curve.floor_rel = dom.at("voltage_floor_rel").get<double>();
      curve.slope_per_mhz = dom.at("voltage_slope_per_mhz").get<double>();
      spec.voltage.push_back(curve);
      spec.coefficients.push_back(dom.at("static_w").get<double>());
    }
    for (const auto& dom : j.at("domains")) {
      spec.coefficients.push_back(dom.at("idle_dyn_w_per_mhz").get<double>());
    }
    for (const auto& dom : j.at("domains")) {
      const auto gammas = dom.at("component_w_per_mhz").get<std::vector<double>>();
      spec.coefficients.insert(spec.coefficients.end(), gammas.begin(), gammas.end());
    }
    spec.microbenchmarks_per_component =
        j.value("microbenchmarks_per_component", spec.microbenchmarks_per_component);
    spec.mix_microbenchmarks = j.value("mix_microbenchmarks", spec.mix_microbenchmarks);
    spec.heldout_applications = j.value("heldout_applications", spec.heldout_applications);
    spec.noise_rel = j.value("noise_rel", spec.noise_rel);
    spec.corrupted_rows = j.value("corrupted_rows", spec.corrupted_rows);
    spec.corruption_factor = j.value("corruption_factor", spec.corruption_factor);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, 0, "", std::string("bad spec: ") + e.what());
  }
  std::string error;
  if (!spec.Check(&error)) throw InputError(path, 0, "", error);
  return spec;
}

PowerModel TruthModel(const SyntheticSpec& spec) {
  PowerModel m;
  m.method = FitMethod::kDvfs;
  m.layout = spec.layout;
  for (int d = 0; d < spec.layout.num_domains(); ++d) {
    const SyntheticVoltageCurve& c = spec.voltage[d];
    m.freq_levels_mhz.push_back(c.freq_levels_mhz);
    std::vector<double> v;
    for (double f : c.freq_levels_mhz) {
      v.push_back(std::max(c.floor_rel,
                           1.0 + c.slope_per_mhz * (f - spec.layout.domains[d].default_freq_mhz)));
    }
    m.voltage_rel.push_back(v);
  }
  m.SetCoefficients(spec.coefficients);
  m.trained_on = "truth:" + spec.name;
  m.fit.solver = ModelSolver::kTruth;
  return m;
}

namespace {

double Round5(double x) {  // what a counter export prints: 5 significant digits
  if (x == 0.0) return 0.0;
  return std::stod(fmt::format("{:.5g}", x));
}

Corpus SweepAllPairs(const SyntheticSpec& spec, const PowerModel& truth,
                     const std::vector<std::string>& names,
                     const std::vector<std::vector<double>>& utils, Rng* rng, CorpusKind kind) {
  const int nd = spec.layout.num_domains();
  const int nc = spec.layout.num_components();
  std::vector<std::vector<double>> pairs;
  if (nd == 1) {
    for (double f : spec.voltage[0].freq_levels_mhz) pairs.push_back({f});
  } else {
    // gpmTOOL's files list the highest frequencies first; so do we.
    for (auto fm = spec.voltage[1].freq_levels_mhz.rbegin();
         fm != spec.voltage[1].freq_levels_mhz.rend(); ++fm) {
      for (auto fc = spec.voltage[0].freq_levels_mhz.rbegin();
           fc != spec.voltage[0].freq_levels_mhz.rend(); ++fc) {
        pairs.push_back({*fc, *fm});
      }
    }
  }
  Corpus c;
  c.kind = kind;
  c.layout = spec.layout;
  const int rows = static_cast<int>(names.size() * pairs.size());
  c.power_w.resize(rows);
  c.freq_mhz.resize(rows, nd);
  c.util_frac.resize(rows, nc);
  int r = 0;
  for (size_t b = 0; b < names.size(); ++b) {
    for (const auto& pair : pairs) {
      c.benchmark.push_back(names[b]);
      c.line.push_back(5 + r);
      for (int d = 0; d < nd; ++d) c.freq_mhz(r, d) = pair[d];
      for (int i = 0; i < nc; ++i) c.util_frac(r, i) = utils[b][i];
      const double p = truth.Predict(utils[b].data(), pair.data());
      c.power_w(r) = std::round(p * (1.0 + spec.noise_rel * rng->Normal()) * 1e4) / 1e4;
      ++r;
    }
  }
  return c;
}

}  // namespace

SyntheticSuite GenerateSuite(const SyntheticSpec& spec, Rng* rng) {
  const int nc = spec.layout.num_components();
  SyntheticSuite suite;
  // Microbenchmarks (TPDS Table 2): each component stressed at increasing intensity with
  // a little background activity elsewhere; mixes of several components; one idle run.
  for (int i = 0; i < nc; ++i) {
    for (int k = 0; k < spec.microbenchmarks_per_component; ++k) {
      std::vector<double> u(nc);
      for (int j = 0; j < nc; ++j) u[j] = Round5(rng->Uniform(0.0, 0.08));
      u[i] = Round5((k + 1.0) / spec.microbenchmarks_per_component * rng->Uniform(0.85, 1.0));
      suite.micro_util.push_back(u);
    }
  }
  for (int k = 0; k < spec.mix_microbenchmarks; ++k) {
    std::vector<double> u(nc);
    for (int j = 0; j < nc; ++j) u[j] = Round5(rng->Uniform() < 0.4 ? rng->Uniform(0.1, 0.7) : 0.0);
    suite.micro_util.push_back(u);
  }
  suite.micro_util.push_back(std::vector<double>(nc, 0.0));  // idle
  for (size_t b = 0; b < suite.micro_util.size(); ++b) {
    suite.micro_names.push_back(fmt::format("micro_{:03d}", b + 1));
  }
  // Held-out applications: a few components active at moderate levels.
  for (int a = 0; a < spec.heldout_applications; ++a) {
    std::vector<double> u(nc);
    for (int j = 0; j < nc; ++j)
      u[j] = Round5(rng->Uniform() < 0.5 ? rng->Uniform(0.02, 0.6) : 0.0);
    suite.app_util.push_back(u);
    suite.app_names.push_back(fmt::format("app_{:02d}", a + 1));
  }
  return suite;
}

SyntheticCorpus GenerateSyntheticCorpus(const SyntheticSpec& spec, unsigned seed) {
  std::string error;
  if (!spec.Check(&error)) throw OptionError("synthetic spec: " + error);
  Rng rng(seed);
  SyntheticCorpus out;
  out.truth = TruthModel(spec);
  const SyntheticSuite suite = GenerateSuite(spec, &rng);
  out.train = SweepAllPairs(spec, out.truth, suite.micro_names, suite.micro_util, &rng,
                            CorpusKind::kTraining);
  std::vector<int> rows(out.train.rows());
  for (int r = 0; r < out.train.rows(); ++r) rows[r] = r;
  for (int k = 0; k < spec.corrupted_rows && k < out.train.rows(); ++k) {
    const int pick = k + rng.Index(out.train.rows() - k);
    std::swap(rows[k], rows[pick]);
    out.corrupted_train_rows.push_back(rows[k]);
    out.train.power_w(rows[k]) *= spec.corruption_factor;
  }
  std::sort(out.corrupted_train_rows.begin(), out.corrupted_train_rows.end());
  out.heldout =
      SweepAllPairs(spec, out.truth, suite.app_names, suite.app_util, &rng, CorpusKind::kMeasured);
  return out;
}

std::string CorpusToGpmtoolCsv(const Corpus& c, bool with_names) {
  std::ostringstream s;
  const Layout& l = c.layout;
  s << l.num_domains() << "\n";
  for (int d = 0; d < l.num_domains(); ++d)
    s << (d ? "," : "") << fmt::format("{}", l.domains[d].default_freq_mhz);
  s << "\n";
  for (int d = 0; d < l.num_domains(); ++d) s << (d ? "," : "") << l.domains[d].components.size();
  s << "\n";
  const std::vector<std::string> names = l.ComponentNames();
  for (size_t i = 0; i < names.size(); ++i) s << (i ? "," : "") << names[i];
  s << "\n";
  for (int r = 0; r < c.rows(); ++r) {
    if (with_names) s << c.benchmark[r] << ",";
    s << fmt::format("{:.4f}", c.power_w(r));
    for (int d = 0; d < l.num_domains(); ++d) s << fmt::format(",{}", c.freq_mhz(r, d));
    for (int i = 0; i < l.num_components(); ++i) s << fmt::format(",{}", c.util_frac(r, i));
    s << "\n";
  }
  return s.str();
}

}  // namespace wattcal
