#include "stage_common.h"

#include <exception>

#include <fmt/format.h>
#include <glog/logging.h>

#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

void AddCalibrationOptions(CLI::App* app, CalibrationFlags* f) {
  app->add_option("--method", f->method,
                  "dvfs: cross-domain model with unknown voltages (TPDS Eqs. 4-6); fixed: "
                  "linear model at the default V-F pair (Eq. 9)")
      ->check(CLI::IsMember({"dvfs", "fixed"}))
      ->capture_default_str();
  app->add_option("--solver", f->solver,
                  "joint: voltages and coefficients in one Ceres problem; alternating: "
                  "gpmTOOL's algorithm (L2, absolute residuals)")
      ->check(CLI::IsMember({"joint", "alternating"}))
      ->capture_default_str();
  app->add_option("--loss", f->loss,
                  "Residual loss: l2 | huber | cauchy (default: huber for dvfs, l2 for fixed "
                  "and for the alternating solver; chosen on real data, see README)")
      ->check(CLI::IsMember({"l2", "huber", "cauchy"}));
  app->add_option("--residual", f->residual,
                  "absolute (W) or relative (fraction of the measured power); default absolute")
      ->check(CLI::IsMember({"absolute", "relative"}));
  app->add_option("--loss-scale", f->loss_scale_w,
                  "Scale of the huber/cauchy loss in residual units (0: 3 W absolute, 0.05 "
                  "relative)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--voltage-min", f->voltage_min, "Lower bound of every normalised voltage")
      ->capture_default_str();
  app->add_option("--voltage-max", f->voltage_max, "Upper bound of every normalised voltage")
      ->capture_default_str();
  app->add_option("--max-iterations", f->max_iterations,
                  "Iterations of the joint solver and of the alternating solver")
      ->capture_default_str();
  app->add_flag("--start-from-alternating,!--cold-start-only", f->start_from_alternating,
                "Joint solver: besides the cold start, also start from gpmTOOL's alternating "
                "solution and keep the lower-cost optimum (default; --cold-start-only turns it off)");
  app->add_option("--threads", f->threads, "Threads (Ceres evaluation, OpenMP loops)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--default-core-mhz", f->default_core_mhz,
                  "Tidy inputs: the default (reference) core frequency, MHz");
  app->add_option("--default-mem-mhz", f->default_mem_mhz,
                  "Tidy inputs: the default (reference) memory frequency, MHz");
}

CalibrationOptions ToCalibrationOptions(const CalibrationFlags& f) {
  CalibrationOptions o;
  o.method = f.method == "fixed" ? FitMethod::kFixed : FitMethod::kDvfs;
  o.solver = f.solver == "alternating" ? FitSolver::kAlternating : FitSolver::kJoint;
  o.residual = f.residual == "relative" ? FitResidual::kRelative : FitResidual::kAbsolute;
  const bool gpmtool_like = o.method == FitMethod::kFixed || o.solver == FitSolver::kAlternating;
  const std::string loss = !f.loss.empty() ? f.loss : (gpmtool_like ? "l2" : "huber");
  o.loss = loss == "huber" ? FitLoss::kHuber : loss == "cauchy" ? FitLoss::kCauchy : FitLoss::kL2;
  o.loss_scale = f.loss_scale_w;
  o.voltage_min = f.voltage_min;
  o.voltage_max = f.voltage_max;
  o.max_solver_iterations = f.max_iterations;
  o.max_alternating_iterations = f.max_iterations;
  o.joint_start_from_alternating = f.start_from_alternating;
  o.num_threads = f.threads;
  std::string error;
  if (!o.Check(&error)) throw OptionError("invalid calibration options: " + error);
  return o;
}

CorpusReadOptions ToCorpusReadOptions(const CalibrationFlags& f) {
  CorpusReadOptions o;
  o.default_core_mhz = f.default_core_mhz;
  o.default_mem_mhz = f.default_mem_mhz;
  std::string error;
  if (!o.Check(&error)) throw OptionError(error);
  return o;
}

nlohmann::json CalibrationOptionsToJson(const CalibrationOptions& o) {
  nlohmann::json j;
  j["method"] = FitMethodName(o.method);
  j["solver"] = FitSolverName(o.solver);
  j["residual"] = FitResidualName(o.residual);
  j["loss"] = FitLossName(o.loss);
  j["loss_scale"] = o.loss == FitLoss::kL2 ? 0.0 : o.EffectiveLossScale();
  j["voltage_min"] = o.voltage_min;
  j["voltage_max"] = o.voltage_max;
  j["max_solver_iterations"] = o.max_solver_iterations;
  j["max_alternating_iterations"] = o.max_alternating_iterations;
  j["alternating_tolerance_pct"] = o.alternating_tolerance_pct;
  j["alternating_patience"] = o.alternating_patience;
  j["joint_start_from_alternating"] = o.joint_start_from_alternating;
  return j;
}
namespace {
bool g_quiet = false;
bool g_verbose = false;
}  // namespace

void AddLoggingOptions(CLI::App* app) {
  app->add_flag("-q,--quiet", g_quiet, "Only print warnings and errors");
  app->add_flag("-v,--verbose", g_verbose, "Print debugging detail");
}

int RunStageMain(CLI::App* app, int argc, char** argv, const std::function<int()>& body) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app->exit(e);
    return code == 0 ? kExitOk : kExitOptions;
  }
  SetLogLevel(g_quiet ? LogLevel::kWarning : (g_verbose ? LogLevel::kDebug : LogLevel::kInfo));
  // Ceres reports through glog; its internal warnings (e.g. a Cholesky step it retries) are
  // solver detail, shown with --verbose only. Our own logging goes through util/logging.h.
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = g_verbose ? google::GLOG_INFO : google::GLOG_ERROR;
  try {
    return body();
  } catch (const OptionError& e) {
    LogError(e.what());
    return kExitOptions;
  } catch (const InputError& e) {
    LogError(e.what());
    return kExitInput;
  } catch (const FitError& e) {
    LogError(e.what());
    return kExitFit;
  } catch (const std::exception& e) {
    LogError(std::string("internal error: ") + e.what());
    return 4;
  }
}

}  // namespace wattcal
