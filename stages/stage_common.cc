#include "stage_common.h"

#include <algorithm>

#include <exception>
#include <map>

#include <boost/filesystem.hpp>

#include <fmt/format.h>
#include <glog/logging.h>

#include "io/sweep.h"
#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"
#include "util/sha256.h"

namespace wattcal {

void AddCalibrationOptions(CLI::App* app, CalibrationFlags* f) {
  CalibrationOptions* o = &f->options;
  AddEnumOption(app, "--method", &f->method, CalibrationMethods(), CalibrationMethodName,
                "dvfs: cross-domain model with unknown voltages (TPDS Eqs. 4-6); fixed: "
                "linear model at the default V-F pair (Eq. 9); auto: fixed when the training rows "
                "hold one V-F pair, else dvfs; accelwattch (calibrate only, with --components): "
                "AccelWattch's dynamic scaling factors (MICRO'21 Eq. 14)");
  AddEnumOption(app, "--solver", &o->solver, {FitSolver::kJoint, FitSolver::kAlternating},
                FitSolverName,
                "joint: voltages and coefficients in one Ceres problem; alternating: "
                "gpmTOOL's algorithm (L2, absolute residuals)");
  AddOptionalEnumOption(
      app, "--loss", &f->loss, {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}, FitLossName,
      "Residual loss: l2 | huber | cauchy (default: huber for dvfs with the joint "
      "solver, l2 for fixed and for the alternating solver; chosen on real data, see "
      "README)");
  AddEnumOption(app, "--residual", &o->residual, {FitResidual::kAbsolute, FitResidual::kRelative},
                FitResidualName, "absolute (W) or relative (fraction of the measured power)");
  app->add_option("--loss-scale", o->loss_scale,
                  "Scale of the huber/cauchy loss in residual units: W for absolute residuals, a "
                  "fraction of the measured power for relative ones (0: 3 W absolute, 0.05 "
                  "relative)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--voltage-min", o->voltage_min, "Lower bound of every normalised voltage")
      ->capture_default_str();
  app->add_option("--voltage-max", o->voltage_max, "Upper bound of every normalised voltage")
      ->capture_default_str();
  app->add_option("--max-iterations", o->max_iterations,
                  "Iterations of the joint solver, of the alternating solver and of each start "
                  "of the accelwattch fit")
      ->capture_default_str();
  // Two separate flags (not CLI11's "--a,!--b" pair, whose help shows "{false}" for an option
  // that is on by default).
  app->add_flag("--start-from-alternating", o->start_from_alternating,
                "Joint solver: besides the cold start, also start from gpmTOOL's alternating "
                "solution and keep the lower-cost optimum (on by default)");
  app->add_flag_callback(
      "--cold-start-only", [o]() { o->start_from_alternating = false; },
      "Joint solver: the cold start only (turns --start-from-alternating off)");
  app->add_option("--threads", o->threads, "Threads (Ceres evaluation, OpenMP loops)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--default-core-mhz", f->corpus.default_core_mhz,
                  "Tidy inputs: the default (reference) core frequency, MHz");
  app->add_option("--default-mem-mhz", f->corpus.default_mem_mhz,
                  "Tidy inputs: the default (reference) memory frequency, MHz");
  app->add_flag("--keep-flagged", o->keep_flagged,
                "Train on rows flagged power_cap or clock_moved too (by default they are left out "
                "and named)");
  app->add_option("--power-limit-w", o->power_limit_w,
                  "The board's power limit, W (default: the corpus's power_limit_w, else the "
                  "model's); predictions above it are capped");
}

void AddAccelWattchOptions(CLI::App* app, AccelWattchFlags* f) {
  app->add_option("--bounds", f->bounds,
                  "accelwattch: bounds of the scaling factors, LO:HI for every component or "
                  "NAME=LO:HI for one (repeatable; default 0.001:1000, MICRO'21 Eq. 14)");
  app->add_option("--orderings", f->orderings_path,
                  "accelwattch: more ordering constraints, one 'A <= B' (or 'A <= B <= C') per "
                  "line, '#' comments (e.g. microbench_specs/accelwattch_orderings.txt)")
      ->check(CLI::ExistingFile);
  app->add_flag_callback(
      "--no-paper-orderings", [f]() { f->paper_orderings = false; },
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
  app->add_flag_callback(
      "--no-prior-start", [f]() { f->start_from_prior = false; },
      "accelwattch: with --prior, start from the cold start only");
}

void AddMapeCiOption(CLI::App* app, MapeCiMethod* method) {
  AddEnumOption(app, "--mape-ci", method,
                {MapeCiMethod::kStudentT, MapeCiMethod::kNormalPopulationSd}, MapeCiMethodName,
                "MAPE confidence interval: student-t (t quantile, sample sd; default) or "
                "normal-population-sd (normal quantile, population sd: Excel's CONFIDENCE with "
                "STDEV.P, what the AccelWattch paper prints)");
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
  auto* constant =
      app->add_option("--constant", f->constant_path, "wattcal-constant's output (P_const)")
          ->check(CLI::ExistingFile);
  auto* p_const = app->add_option_function<double>(
      "--p-const-w", [f](const double& w) { f->p_const_w = w; },
      "P_const, W, instead of --constant");
  constant->excludes(p_const);
  app->add_option("--out", f->out_path, "Result to write (JSON)")->check(OutputFile())->required();
}

void AddLoggingOptions(CLI::App* app) {
  g_quiet = false;  // a command run again in the same process starts from the defaults
  g_verbose = false;
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
  // Every output and the provenance file it may lead (ProvenancePathFor, by the program's stage
  // name): not an input, and not another output.
  std::string stage = app->get_name();
  if (stage.rfind("wattcal-", 0) == 0) stage = stage.substr(8);
  std::map<std::string, std::string> claimed;  // normalised path -> "OPTION PATH"
  std::vector<std::pair<FileIdentity, std::string>> existing;
  for (const Named& out : outputs) {
    for (const std::string& path : {out.path, ProvenancePathFor(out.path, stage, RunFolder())}) {
      CheckNotAnInput(out.option, path);
      FileIdentity out_identity;
      if (GetFileIdentity(path, &out_identity)) {
        for (const DirectoryFile& f : directory_files) {
          if (f.identity == out_identity) {
            throw OptionError(out.option + " " + path + " is the same file as input " + f.path +
                              " (inside " + f.option +
                              "): refusing to overwrite an input "
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
  // What one run leaves in the process (its command line and run folder, the inputs it
  // registered, the checksums it remembered, its log level) is not the next one's: the tests
  // run several commands, and library calls, in one process.
  struct ForgetTheRun {
    const LogLevel log_level = GetLogLevel();
    ForgetTheRun() { Forget(); }
    ~ForgetTheRun() {
      Forget();
      SetLogLevel(log_level);
    }
    static void Forget() {
      SetCommandLine(0, nullptr);
      SetRunFolder("");
      ClearRegisteredInputs();
      ForgetFileSha256s();
    }
  } forget_the_run;
  SetCommandLine(argc, argv);  // for the provenance file of this run
  // Every stage but wattcal-report (whose --run-dir is the folder it reports on) takes the run
  // folder its provenance record goes to.
  std::string run_dir;
  if (app->get_option_no_throw("--run-dir") == nullptr) {
    app->add_option(
        "--run-dir", run_dir,
        "The run folder these outputs belong to (Makefile.runs' "
        "reports/<run>): this run's provenance record goes to DIR/provenance/ and names each "
        "output relative to DIR; every output must lie inside it. Default: the deepest folder "
        "holding every output");
  }
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app->exit(e);
    return code == 0 ? kExitOk : kExitOptions;
  }
  SetLogLevel(g_quiet ? LogLevel::kWarning : (g_verbose ? LogLevel::kDebug : LogLevel::kInfo));
  // Ceres reports through glog; its internal warnings (e.g. a Cholesky step it retries) are
  // solver detail, shown with --verbose only. Our own logging goes through util/logging.h.
  if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = g_verbose ? google::GLOG_INFO : google::GLOG_ERROR;
  SetRunFolder(run_dir);
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
