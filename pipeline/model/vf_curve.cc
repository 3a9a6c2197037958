#include "model/vf_curve.h"

#include "util/nan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace wattcal {

namespace {

// The model's terms at the reference pair for `util_frac`: core static S, core dynamic D (~ v^2 f)
// and the memory domain's power M (held).
struct ReferenceTerms {
  double static_w = 0.0, dynamic_w = 0.0, constant_w = 0.0;
};

ReferenceTerms TermsAtReference(const PowerModel& model, const double* util_frac,
                                PowerBreakdown* breakdown) {
  PowerBreakdown b;
  model.PredictAtDefault(util_frac, &b);
  ReferenceTerms t;
  const std::vector<int> domain_of = model.layout.ComponentDomains();
  t.static_w = b.static_w[0];
  t.dynamic_w = b.idle_dyn_w[0];
  for (size_t d = 1; d < b.static_w.size(); ++d) t.constant_w += b.static_w[d] + b.idle_dyn_w[d];
  for (size_t i = 0; i < domain_of.size(); ++i)
    (domain_of[i] == 0 ? t.dynamic_w : t.constant_w) += b.component_w[i];
  if (breakdown != nullptr) *breakdown = b;
  return t;
}

}  // namespace

double VfCurve::VoltageAt(double f_mhz) const {
  if (levels_mhz.empty() || !(f_mhz <= levels_mhz.back())) return kNaN;
  if (f_mhz <= levels_mhz.front()) return v_rel.front();
  const auto it = std::lower_bound(levels_mhz.begin(), levels_mhz.end(), f_mhz);
  const size_t j = static_cast<size_t>(it - levels_mhz.begin());
  if (*it == f_mhz) return v_rel[j];
  const double t = (f_mhz - levels_mhz[j - 1]) / (levels_mhz[j] - levels_mhz[j - 1]);
  return v_rel[j - 1] + t * (v_rel[j] - v_rel[j - 1]);
}

std::string VfCurve::Problem() const {
  if (levels_mhz.size() < 2) return "a curve needs at least two clocks";
  if (v_rel.size() != levels_mhz.size()) return "one voltage per clock";
  for (size_t i = 0; i < levels_mhz.size(); ++i) {
    if (!(levels_mhz[i] > 0.0) || (i > 0 && !(levels_mhz[i] > levels_mhz[i - 1])))
      return fmt::format("clocks must be > 0 and ascending (clock {}: {} MHz)", i, levels_mhz[i]);
    if (!(v_rel[i] > 0.0 && v_rel[i] <= 1.0))
      return fmt::format("v_rel must lie in (0, 1] (at {} MHz: {})", levels_mhz[i], v_rel[i]);
    if (i > 0 && v_rel[i] < v_rel[i - 1])
      return fmt::format("v_rel must not decrease with the clock ({} MHz: {} after {})",
                         levels_mhz[i], v_rel[i], v_rel[i - 1]);
  }
  if (v_rel.back() != 1.0) return "v_rel must be 1 at the reference (last) clock";
  return "";
}

VfCurve CoreCurveOf(const PowerModel& model) {
  if (model.vf_curve.known()) return model.vf_curve;
  VfCurve c;
  const std::vector<double>& levels = model.freq_levels_mhz[0];
  const double reference = model.layout.domains[0].default_freq_mhz;
  if (levels.size() < 2) return c;
  for (size_t i = 0; i < levels.size() && levels[i] <= reference; ++i) {
    c.levels_mhz.push_back(levels[i]);
    c.v_rel.push_back(model.voltage_rel[0][i]);
  }
  c.source = fmt::format(
      "the model's own core voltages (TPDS Eq. 6 estimates from its training rows, {}) at {} "
      "clocks, {:.0f} to {:.0f} MHz",
      model.trained_on, c.levels_mhz.size(), c.lowest_mhz(), c.reference_mhz());
  if (!c.Problem().empty()) return VfCurve();
  return c;
}

double PowerOnCurve(const PowerModel& model, const VfCurve& curve, const double* util_frac,
                    double f_core_mhz, PowerBreakdown* breakdown) {
  PowerBreakdown b;
  const ReferenceTerms t = TermsAtReference(model, util_frac, &b);
  const double v = curve.VoltageAt(f_core_mhz);
  const double scale = v * v * f_core_mhz / model.layout.domains[0].default_freq_mhz;
  // TPDS Eq. 4: the core's static term ~ v, its dynamic terms ~ v^2 f; the memory domain held.
  if (breakdown != nullptr) {
    const std::vector<int> domain_of = model.layout.ComponentDomains();
    b.static_w[0] *= v;
    b.idle_dyn_w[0] *= scale;
    for (size_t i = 0; i < domain_of.size(); ++i) {
      if (domain_of[i] == 0) b.component_w[i] *= scale;
    }
    b.total_w = t.static_w * v + t.dynamic_w * scale + t.constant_w;
    *breakdown = b;
  }
  return t.static_w * v + t.dynamic_w * scale + t.constant_w;
}

double SolveVoltage(double static_w, double dynamic_w, double constant_w, double f_rel,
                    double measured_w) {
  const double rhs = measured_w - constant_w;
  if (!(rhs > 0.0)) return kNaN;
  const double a = dynamic_w * f_rel;
  if (!(a > 0.0)) return static_w > 0.0 ? rhs / static_w : kNaN;
  // a v^2 + S v - rhs = 0, the positive root.
  return (-static_w + std::sqrt(static_w * static_w + 4.0 * a * rhs)) / (2.0 * a);
}

std::vector<double> MonotoneVoltages(const std::vector<double>& f_mhz, const std::vector<double>& v,
                                     std::vector<double>* levels_out) {
  // Ties pooled first: one (sum, count) per distinct clock, ascending.
  std::map<double, std::pair<double, double>> at;
  for (size_t i = 0; i < f_mhz.size(); ++i) {
    at[f_mhz[i]].first += v[i];
    at[f_mhz[i]].second += 1.0;
  }
  struct Block {
    double sum, weight;
    size_t size;
  };
  std::vector<Block> blocks;
  levels_out->clear();
  for (const auto& [f, sw] : at) {
    levels_out->push_back(f);
    blocks.push_back({sw.first, sw.second, 1});
    // Pool adjacent violators: merge while the previous block's mean exceeds this one's.
    while (blocks.size() > 1) {
      const Block& b = blocks.back();
      const Block& a = blocks[blocks.size() - 2];
      if (a.sum / a.weight <= b.sum / b.weight) break;
      const Block merged{a.sum + b.sum, a.weight + b.weight, a.size + b.size};
      blocks.pop_back();
      blocks.back() = merged;
    }
  }
  std::vector<double> out;
  for (const Block& b : blocks) out.insert(out.end(), b.size, std::min(1.0, b.sum / b.weight));
  return out;
}

VfCurve FitVfCurveFromCappedRows(const PowerModel& model, const Corpus& corpus,
                                 const std::string& path, std::string* notes) {
  VfCurve curve;
  const double reference = model.layout.domains[0].default_freq_mhz;
  if (!corpus.has_freq() || model.freq_levels_mhz[0].size() != 1 ||
      model.freq_levels_mhz[0].front() != reference) {
    return curve;
  }
  std::vector<double> f, v;
  std::vector<std::string> names;
  double v_lo = 1e300, v_hi = -1e300;
  for (int r = 0; r < corpus.rows(); ++r) {
    const double fr = corpus.freq_mhz(r, 0);
    if (!HasFlag(corpus, r, kCorpusFlagPowerCap) || !(fr < reference)) continue;
    const Eigen::VectorXd u = corpus.util_frac.row(r).transpose();
    const ReferenceTerms t = TermsAtReference(model, u.data(), nullptr);
    const double vi =
        SolveVoltage(t.static_w, t.dynamic_w, t.constant_w, fr / reference, corpus.power_w(r));
    if (!std::isfinite(vi)) continue;
    f.push_back(fr);
    v.push_back(vi);
    names.push_back(corpus.benchmark[static_cast<size_t>(r)]);
    v_lo = std::min(v_lo, vi);
    v_hi = std::max(v_hi, vi);
  }
  if (f.empty()) return curve;
  curve.v_rel = MonotoneVoltages(f, v, &curve.levels_mhz);
  curve.levels_mhz.push_back(reference);
  curve.v_rel.push_back(1.0);
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 6; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 6) listed += fmt::format(" and {} more", names.size() - 6);
  curve.source = fmt::format(
      "fitted from {} rows of {} that the power cap held at {:.0f} to {:.0f} MHz ({}): each "
      "row's measured W = S v + D v^2 f/f_ref + M with the model's terms for its counters at "
      "{:.0f} MHz (TPDS Eqs. 4-6), then non-decreasing in f with v({:.0f} MHz) = 1",
      names.size(), path, curve.lowest_mhz(), *std::max_element(f.begin(), f.end()), listed,
      reference, reference);
  if (notes != nullptr) {
    *notes = fmt::format(
        "V-F curve: the {} capped rows give v = {:.3f} to {:.3f} at {:.0f} to {:.0f} MHz{}",
        f.size(), v_lo, v_hi, curve.lowest_mhz(), *std::max_element(f.begin(), f.end()),
        v_lo > 1.0
            ? fmt::format(" (all above 1: the model's power for these rows at {:.0f} MHz is below "
                          "what they drew at the lower clock; the curve is held at 1, power ~ f)",
                          reference)
            : "");
  }
  return curve;
}

}  // namespace wattcal
