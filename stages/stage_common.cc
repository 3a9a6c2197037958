#include "stage_common.h"

#include <exception>
#include <map>

#include <boost/filesystem.hpp>

#include <fmt/format.h>
#include <glog/logging.h>

#include "accelwattch/orderings.h"
#include "accelwattch/scaling_model.h"
#include "accelwattch/sweep.h"
#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

void AddCalibrationOptions(CLI::App* app, CalibrationFlags* f) {
  app->add_option("--method", f->method,
                  "dvfs: cross-domain model with unknown voltages (TPDS Eqs. 4-6); fixed: "
                  "linear model at the default V-F pair (Eq. 9); accelwattch (calibrate only, "
                  "with --components): AccelWattch's dynamic scaling factors (MICRO'21 Eq. 14)")
      ->check(CLI::IsMember({"dvfs", "fixed", "accelwattch"}))
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
                  "Iterations of the joint solver, of the alternating solver and of each start "
                  "of the accelwattch fit")
      ->capture_default_str();
  // Two separate flags (not CLI11's "--a,!--b" pair, whose help shows "{false}" for an option
  // that is on by default).
  app->add_flag("--start-from-alternating", f->start_from_alternating,
                "Joint solver: besides the cold start, also start from gpmTOOL's alternating "
                "solution and keep the lower-cost optimum (on by default)");
  app->add_flag_callback("--cold-start-only", [f]() { f->start_from_alternating = false; },
                         "Joint solver: the cold start only (turns --start-from-alternating off)");
  app->add_option("--threads", f->threads, "Threads (Ceres evaluation, OpenMP loops)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--default-core-mhz", f->default_core_mhz,
                  "Tidy inputs: the default (reference) core frequency, MHz");
  app->add_option("--default-mem-mhz", f->default_mem_mhz,
                  "Tidy inputs: the default (reference) memory frequency, MHz");
  app->add_flag("--keep-flagged", f->keep_flagged,
                "Train on rows flagged power_cap or clock_moved too (by default they are left out "
                "and named)");
  app->add_option("--power-limit-w", f->power_limit_w,
                  "The board's power limit, W (default: the corpus's power_limit_w, else the "
                  "model's); predictions above it are capped");
}

CalibrationOptions ToCalibrationOptions(const CalibrationFlags& f) {
  if (f.method == "accelwattch") {
    throw OptionError(
        "--method accelwattch fits scaling factors to a per-kernel table: wattcal-calibrate "
        "--method accelwattch --components TABLE.csv (validate it with --mode accelwattch)");
  }
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
  o.keep_flagged = f.keep_flagged;
  o.power_limit_w = f.power_limit_w;
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
  // The solver actually used: the fixed method is one NNLS solve, whatever --solver says.
  j["solver"] = o.method == FitMethod::kFixed ? "nnls" : FitSolverName(o.solver);
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
  j["keep_flagged"] = o.keep_flagged;
  if (o.power_limit_w > 0.0) j["power_limit_w"] = o.power_limit_w;
  return j;
}
void AddAccelWattchOptions(CLI::App* app, AccelWattchFlags* f) {
  app->add_option("--bounds", f->bounds,
                  "accelwattch: bounds of the scaling factors, LO:HI for every component or "
                  "NAME=LO:HI for one (repeatable; default 0.001:1000, MICRO'21 Eq. 14)");
  app->add_option("--orderings", f->orderings_path,
                  "accelwattch: more ordering constraints, one 'A <= B' (or 'A <= B <= C') per "
                  "line, '#' comments (e.g. microbench_specs/accelwattch_orderings.txt)")
      ->check(CLI::ExistingFile);
  app->add_flag_callback("--no-paper-orderings", [f]() { f->paper_orderings = false; },
                         "accelwattch: drop the paper's orderings (see --paper-orderings)");
  app->add_flag("--paper-orderings", f->paper_orderings,
                "accelwattch: enforce the paper's orderings INTP <= FPUP <= DPUP, INTP <= "
                "INT_MULP, FP_MULP <= {INT_MULP, DP_MULP, FP_SQRTP, FP_LGP, FP_SINP, FP_EXP, "
                "TENSORP, TEXP} (default; constraints naming a column the table lacks are dropped "
                "and reported)");
  app->add_option("--prior", f->prior_path,
                  "accelwattch: a prior model (wattcal-accelwattch-model JSON): second starting "
                  "point and target of --prior-weight (default: x = 1, the published model)")
      ->check(CLI::ExistingFile);
  app->add_option("--prior-weight", f->prior_weight,
                  "accelwattch: Tikhonov weight lambda on (x - x_prior) / x_prior, in units of one "
                  "kernel's squared relative error (0: no pull)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_flag("--prior-start", f->start_from_prior,
                "accelwattch: with --prior, also start from the prior model and keep the "
                "lower-cost optimum (on by default)");
  app->add_flag_callback("--no-prior-start", [f]() { f->start_from_prior = false; },
                         "accelwattch: with --prior, start from the cold start only");
}

bool AccelWattchFlagsGiven(const AccelWattchFlags& f) {
  return !f.bounds.empty() || !f.orderings_path.empty() || !f.paper_orderings ||
         !f.prior_path.empty() || f.prior_weight != 0.0 || !f.start_from_prior;
}

namespace {
// Parses "LO:HI" into two numbers; false when malformed.
bool ParseBoundPair(const std::string& text, double* lo, double* hi) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  return ParseFiniteDouble(text.substr(0, colon), lo) && ParseFiniteDouble(text.substr(colon + 1), hi);
}
}  // namespace

AccelWattchFitOptions ToAccelWattchFitOptions(const AccelWattchFlags& f, int max_iterations) {
  AccelWattchFitOptions o;
  for (const std::string& b : f.bounds) {
    const size_t eq = b.find('=');
    const std::string name = eq == std::string::npos ? "" : b.substr(0, eq);
    double lo = 0.0, hi = 0.0;
    if (!ParseBoundPair(eq == std::string::npos ? b : b.substr(eq + 1), &lo, &hi) ||
        (eq != std::string::npos && name.empty())) {
      throw OptionError(fmt::format("--bounds '{}': expected LO:HI or NAME=LO:HI (e.g. 0.001:1000, "
                                    "INTP=0.5:2)",
                                    b));
    }
    if (name.empty()) {
      o.lower_bound = lo;
      o.upper_bound = hi;
    } else {
      o.component_bounds[name] = {lo, hi};
    }
  }
  o.paper_orderings = f.paper_orderings;
  if (!f.orderings_path.empty()) o.extra_orderings = ReadOrderingsFile(f.orderings_path);
  o.prior_weight = f.prior_weight;
  o.start_from_prior = f.start_from_prior;
  o.max_iterations = max_iterations;
  if (!f.prior_path.empty()) {
    const AccelWattchModel prior = ReadAccelWattchModel(f.prior_path);
    for (size_t i = 0; i < prior.components.size(); ++i) o.prior_x[prior.components[i]] = prior.x[i];
    o.prior_source = f.prior_path;
  }
  std::string error;
  if (!o.Check(&error)) throw OptionError("invalid accelwattch options (--bounds, --prior-weight, "
                                          "--max-iterations): " + error);
  return o;
}

nlohmann::json AccelWattchFitOptionsToJson(const AccelWattchFitOptions& o, const AccelWattchFlags& f) {
  nlohmann::json j;
  j["lower_bound"] = o.lower_bound;
  j["upper_bound"] = o.upper_bound;
  nlohmann::json bounds = nlohmann::json::object();
  for (const auto& [name, b] : o.component_bounds) bounds[name] = {b.first, b.second};
  j["component_bounds"] = bounds;
  j["paper_orderings"] = o.paper_orderings;
  j["orderings_file"] = f.orderings_path;
  j["prior"] = f.prior_path.empty() ? "x = 1" : f.prior_path;
  j["prior_weight"] = o.prior_weight;
  j["start_from_prior"] = o.start_from_prior;
  j["max_iterations"] = o.max_iterations;
  return j;
}

std::vector<std::string> AccelWattchInputFiles(const AccelWattchFlags& f) {
  std::vector<std::string> files;
  if (!f.orderings_path.empty()) files.push_back(f.orderings_path);
  if (!f.prior_path.empty()) files.push_back(f.prior_path);
  return files;
}

void AddMapeCiOption(CLI::App* app, std::string* method) {
  app->add_option("--mape-ci", *method,
                  "MAPE confidence interval: student-t (t quantile, sample sd; default) or "
                  "normal-population-sd (normal quantile, population sd: Excel's CONFIDENCE with "
                  "STDEV.P, what the AccelWattch paper prints)")
      ->check(CLI::IsMember({"student-t", "normal-population-sd"}))
      ->capture_default_str();
}

MetricsOptions ToMetricsOptions(const std::string& mape_ci) {
  MetricsOptions o;
  if (!ParseMapeCiMethod(mape_ci, &o.ci_method)) {
    throw OptionError(fmt::format("--mape-ci '{}': expected student-t or normal-population-sd", mape_ci));
  }
  return o;
}

namespace {
bool g_quiet = false;
bool g_verbose = false;
}  // namespace

void AddSweepWithConstantOptions(CLI::App* app, SweepWithConstantFlags* f) {
  app->add_option("--sweep", f->sweep_path, "Sweep CSV (or wattcal-ingest's kernels CSV)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--description", f->description_path,
                  "Sweep description CSV: kernel -> benchmark, category, active_sms, "
                  "lanes_per_warp, f_core_mhz")
      ->check(CLI::ExistingFile);
  auto* constant = app->add_option("--constant", f->constant_path, "wattcal-constant's output (P_const)")
                       ->check(CLI::ExistingFile);
  auto* p_const = app->add_option_function<double>(
      "--p-const-w", [f](const double& w) { f->p_const_w = w; }, "P_const, W, instead of --constant");
  constant->excludes(p_const);
  app->add_option("--out", f->out_path, "Result to write (JSON)")->check(OutputFile())->required();
}

void AddLoggingOptions(CLI::App* app) {
  app->add_flag("-q,--quiet", g_quiet, "Only print warnings and errors");
  app->add_flag("-v,--verbose", g_verbose, "Print debugging detail");
}

namespace {
constexpr const char* kOutputValidatorName = "wattcal-output";

enum class PathRole { kNone, kInputFile, kInputDirectory, kOutput };

PathRole RoleOf(CLI::Option* option) {
  for (int i = 0;; ++i) {
    CLI::Validator* v = nullptr;
    try {
      v = option->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return PathRole::kNone;
    }
    if (v->get_name() == kOutputValidatorName) return PathRole::kOutput;
    const std::string desc = v->get_description();
    if (desc == "FILE" || desc == "PATH(existing)") return PathRole::kInputFile;
    if (desc == "DIR") return PathRole::kInputDirectory;
  }
}

// The parsed options of `app` and of its parsed subcommands.
void CollectOptions(CLI::App* app, std::vector<CLI::Option*>* options) {
  for (CLI::Option* o : app->get_options([](CLI::Option*) { return true; })) options->push_back(o);
  for (CLI::App* sub : app->get_subcommands()) CollectOptions(sub, options);
}

std::string Normalised(const std::string& path) {
  boost::system::error_code ec;
  const boost::filesystem::path p = boost::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}
}  // namespace

CLI::Validator OutputFile() {
  return CLI::Validator([](std::string&) { return std::string(); }, "", kOutputValidatorName);
}

void CheckOutputsAgainstInputs(CLI::App* app) {
  namespace fs = boost::filesystem;
  std::vector<CLI::Option*> options;
  CollectOptions(app, &options);
  struct Named {
    std::string option;
    std::string path;
  };
  std::vector<Named> outputs;
  struct DirectoryFile {
    std::string option;
    std::string path;
    FileIdentity identity;
  };
  std::vector<DirectoryFile> directory_files;
  for (CLI::Option* option : options) {
    if (option->count() == 0) continue;
    const PathRole role = RoleOf(option);
    if (role == PathRole::kNone) continue;
    const std::string name = option->get_name();
    if (role == PathRole::kOutput) {
      for (const std::string& value : option->results()) {
        if (!value.empty()) outputs.push_back({name, value});
      }
      continue;
    }
    // One input given twice to a repeatable option would count its rows twice.
    std::vector<std::pair<FileIdentity, std::string>> seen;
    for (const std::string& value : option->results()) {
      FileIdentity identity;
      if (!GetFileIdentity(value, &identity)) continue;
      for (const auto& [other, other_path] : seen) {
        if (other == identity) {
          throw OptionError(name + " " + value + " is the same file as " + name + " " + other_path +
                            ": an input given twice would count its data twice");
        }
      }
      seen.emplace_back(identity, value);
      RegisterInputFile(name, value);
      if (role == PathRole::kInputDirectory) {
        // Files inside an input directory (a capture's power log) are inputs to the named
        // outputs below; they are not registered for OutputSet::Stage, because some stages
        // write into the folder they read (wattcal-report --run-dir) and re-runs replace their
        // own earlier outputs there.
        boost::system::error_code ec;
        for (fs::recursive_directory_iterator it(value, ec), end; !ec && it != end;
             it.increment(ec)) {
          if (it.depth() > 3) {
            it.disable_recursion_pending();
            continue;
          }
          FileIdentity file;
          if (GetFileIdentity(it->path().string(), &file)) {
            directory_files.push_back({name, it->path().string(), file});
          }
        }
      }
    }
  }
  // Every output and its manifest: not an input, and not another output.
  std::map<std::string, std::string> claimed;  // normalised path -> "OPTION PATH"
  std::vector<std::pair<FileIdentity, std::string>> existing;
  for (const Named& out : outputs) {
    for (const std::string& path : {out.path, out.path + ".manifest.json"}) {
      CheckNotAnInput(out.option, path);
      FileIdentity out_identity;
      if (GetFileIdentity(path, &out_identity)) {
        for (const DirectoryFile& f : directory_files) {
          if (f.identity == out_identity) {
            throw OptionError(out.option + " " + path + " is the same file as input " + f.path +
                              " (inside " + f.option + "): refusing to overwrite an input "
                              "(choose another output path)");
          }
        }
      }
      const std::string who = out.option + " " + path;
      const std::string key = Normalised(path);
      FileIdentity identity;
      const bool exists = GetFileIdentity(path, &identity);
      std::string clash;
      auto it = claimed.find(key);
      if (it != claimed.end()) clash = it->second;
      for (const auto& [other, other_who] : existing) {
        if (exists && other == identity) clash = other_who;
      }
      if (!clash.empty()) {
        throw OptionError(who + " is the same file as output " + clash +
                          ": two outputs cannot share a path");
      }
      claimed[key] = who;
      if (exists) existing.emplace_back(identity, who);
    }
  }
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
    CheckOutputsAgainstInputs(app);
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
