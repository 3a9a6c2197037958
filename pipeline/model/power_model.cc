#include "model/power_model.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <utility>

namespace wattcal {

namespace {

// Each kind's name in the model file and on the command line, the one place each is written.
template <typename Kind>
using Names = std::pair<Kind, const char*>;
constexpr Names<FitMethod> kMethodNames[] = {{FitMethod::kDvfs, "dvfs"},
                                             {FitMethod::kFixed, "fixed"}};
constexpr Names<FitLoss> kLossNames[] = {
    {FitLoss::kL2, "l2"}, {FitLoss::kHuber, "huber"}, {FitLoss::kCauchy, "cauchy"}};
constexpr Names<ModelSolver> kSolverNames[] = {{ModelSolver::kJoint, "joint"},
                                               {ModelSolver::kAlternating, "alternating"},
                                               {ModelSolver::kNnls, "nnls"},
                                               {ModelSolver::kTruth, "truth"}};

template <typename Kind, size_t N>
const char* NameOf(const Names<Kind> (&names)[N], Kind kind) {
  for (const Names<Kind>& n : names) {
    if (n.first == kind) return n.second;
  }
  return "?";
}

template <typename Kind, size_t N>
bool KindOf(const Names<Kind> (&names)[N], const std::string& name, Kind* kind) {
  for (const Names<Kind>& n : names) {
    if (name == n.second) {
      *kind = n.first;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* FitMethodName(FitMethod method) { return NameOf(kMethodNames, method); }
bool ParseFitMethod(const std::string& name, FitMethod* method) {
  return KindOf(kMethodNames, name, method);
}

const char* FitLossName(FitLoss loss) { return NameOf(kLossNames, loss); }
bool ParseFitLoss(const std::string& name, FitLoss* loss) { return KindOf(kLossNames, name, loss); }

const char* ModelSolverName(ModelSolver solver) { return NameOf(kSolverNames, solver); }
bool ParseModelSolver(const std::string& name, ModelSolver* solver) {
  return KindOf(kSolverNames, name, solver);
}

int PowerModel::num_coefficients() const {
  return 2 * layout.num_domains() + layout.num_components();
}

std::vector<double> PowerModel::Coefficients() const {
  std::vector<double> x = static_w;
  x.insert(x.end(), idle_dyn_w_per_mhz.begin(), idle_dyn_w_per_mhz.end());
  x.insert(x.end(), component_w_per_mhz.begin(), component_w_per_mhz.end());
  return x;
}

void PowerModel::SetCoefficients(const std::vector<double>& x) {
  const int nd = layout.num_domains();
  assert(static_cast<int>(x.size()) == num_coefficients());
  static_w.assign(x.begin(), x.begin() + nd);
  idle_dyn_w_per_mhz.assign(x.begin() + nd, x.begin() + 2 * nd);
  component_w_per_mhz.assign(x.begin() + 2 * nd, x.end());
}

bool PowerModel::Covers(int d, double f_mhz) const {
  const std::vector<double>& levels = freq_levels_mhz[d];
  return !levels.empty() && f_mhz >= levels.front() && f_mhz <= levels.back();
}

bool PowerModel::VoltageAt(int d, double f_mhz, double* v) const {
  const std::vector<double>& levels = freq_levels_mhz[d];
  const std::vector<double>& volts = voltage_rel[d];
  if (!Covers(d, f_mhz)) return false;
  const auto it = std::lower_bound(levels.begin(), levels.end(), f_mhz);
  const size_t j = static_cast<size_t>(it - levels.begin());
  if (*it == f_mhz) {
    *v = volts[j];
    return true;
  }
  // Between two estimated levels: interpolate linearly.
  const double t = (f_mhz - levels[j - 1]) / (levels[j] - levels[j - 1]);
  *v = volts[j - 1] + t * (volts[j] - volts[j - 1]);
  return true;
}

std::vector<double> PowerModel::DefaultFrequencies() const {
  std::vector<double> f;
  for (const FrequencyDomain& d : layout.domains) f.push_back(d.default_freq_mhz);
  return f;
}

std::string PowerModel::LayoutMismatchMessage(const std::string& mismatch) const {
  return "the model" + (trained_on.empty() ? std::string() : " (trained on " + trained_on + ")") +
         " was calibrated for another GPU layout (\"here\" the model, \"there\" this file): " +
         mismatch;
}

double PowerModel::Predict(const double* util_frac, const double* freq_mhz,
                           PowerBreakdown* breakdown) const {
  const int nd = layout.num_domains();
  const std::vector<int> domain_of = layout.ComponentDomains();
  double v[2] = {1.0, 1.0};
  for (int d = 0; d < nd; ++d) {
    if (!VoltageAt(d, freq_mhz[d], &v[d])) v[d] = 1.0;  // caller checks Covers()
  }
  if (breakdown != nullptr) {
    breakdown->static_w.assign(nd, 0.0);
    breakdown->idle_dyn_w.assign(nd, 0.0);
    breakdown->component_w.assign(domain_of.size(), 0.0);
  }
  double total = 0.0;
  // TPDS Eq. 4 per domain: alpha0*v + v^2*f*(alpha1 + sum_i gamma_i*U_i).
  for (int d = 0; d < nd; ++d) {
    const double v2f = v[d] * v[d] * freq_mhz[d];
    const double p_static = static_w[d] * v[d];
    const double p_idle = idle_dyn_w_per_mhz[d] * v2f;
    total += p_static + p_idle;
    if (breakdown != nullptr) {
      breakdown->static_w[d] = p_static;
      breakdown->idle_dyn_w[d] = p_idle;
    }
  }
  for (size_t i = 0; i < domain_of.size(); ++i) {
    const int d = domain_of[i];
    const double p = component_w_per_mhz[i] * v[d] * v[d] * freq_mhz[d] * util_frac[i];
    total += p;
    if (breakdown != nullptr) breakdown->component_w[i] = p;
  }
  if (breakdown != nullptr) breakdown->total_w = total;
  return total;
}

double PowerModel::PredictAtDefault(const double* util_frac, PowerBreakdown* breakdown) const {
  const std::vector<double> f = DefaultFrequencies();
  return Predict(util_frac, f.data(), breakdown);
}

}  // namespace wattcal
