// wattcal-capture: runs the microbenchmark suite on a GPU and writes the capture directory
// that wattcal-ingest --capture reads, or records the user's own program (--app). Always built;
// the suite's kernels only with the CUDA toolkit (a build without it records --app only).
//
//   wattcal-capture --out DIR [--counters] [--only RE] [--data random|zeros] [--seed N]
//                   [--seconds 2] [--gap-ms 400] [--sample-ms 5] [--lock-clocks MHZ,...]
//                   [--fields gpm|GPM_SET.json]  (NVML GPM metrics beside the power: gpm_fields.csv)
//   wattcal-capture --list | --plan-seconds  [--only RE] [--seconds S] [--gap-ms MS] [--counters] ...
//   wattcal-capture --app NAME --out DIR [--repeat N] [--counters] [--fields gpm] [--window MARK] -- CMD ARGS...
//
// Clocks and power settings are never changed unless --lock-clocks is given; then each
// locked pass resets the clock when it ends, on SIGINT/SIGTERM/SIGHUP and at exit.
// Exit codes: 0 done, 1 invalid options, 2 no GPU / NVML / ncu, 3 the run failed.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app_command.h"
#include "benchmark_device.h"
#include "capture_writer.h"
#include "nvml_loader.h"
#include "recording_guard.h"
#include "runner.h"
#include "seed_option.h"
#include "simulated_device.h"
#include "suite_plan.h"
#include "util/errors.h"
#include "util/logging.h"

namespace {

using namespace wattcal::capture;
namespace fs = std::filesystem;

struct CaptureFlags {
  std::string out;
  bool list = false;
  bool plan_seconds = false;  // --plan-seconds: the planned wall time, then exit
  std::string only;
  uint64_t seed = 1;
  std::string data = "random";
  int mixes = 60;
  int device = 0;
  bool device_given = false;
  int sm_count = 0;  // --list only; 0 = the GPU's, or 132 without one
  bool counters = false;
  std::string ncu = "ncu";
  std::string gpu_description;
  std::string fields;  // --fields: "gpm" or a GPM field set; "" = power only
  std::string profile_plan;  // hidden: the counters run's child
  RunOptions run;
  // --app: record the user's command instead of the suite.
  std::string app;
  int repeat = 1;
  std::string window;
  std::string nvtx_range;
  bool all_kernels = false;
  bool gap_given = false;
  std::vector<std::string> command;
};

// --app NAME ... -- CMD ARGS: the suite's options that do not apply are refused by name.
int RunApp(const CaptureFlags& f, const std::vector<std::string>& suite_only_given) {
  if (!suite_only_given.empty()) {
    std::string list;
    for (const std::string& s : suite_only_given) list += (list.empty() ? "" : ", ") + s;
    wattcal::LogError(fmt::format("--app records a program, not the suite: {} do{} not apply", list,
                                  suite_only_given.size() == 1 ? "es" : ""));
    return 1;
  }
  AppCommand c;
  c.options.out_dir = f.out;
  c.options.name = f.app;
  c.options.command = f.command;
  c.options.repeat = f.repeat;
  if (f.gap_given) c.options.gap_ms = f.run.gap_ms;
  c.options.sample_ms = f.run.sample_ms;
  c.options.window = f.window;
  c.options.counters = f.counters;
  c.options.ncu = f.ncu;
  c.options.nvtx_range = f.nvtx_range;
  c.options.all_kernels = f.all_kernels;
  c.device = f.device_given ? f.device : -1;
  c.fields = f.fields;
  c.gpu_description = f.gpu_description;
  return RunAppCommand(c);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

nlohmann::json OptionsJson(const CaptureFlags& f, const std::vector<std::string>& metrics,
                           const std::vector<std::string>& metrics_left_out = {}) {
  return {
      {"out", f.out}, {"only", f.only}, {"seed", f.seed}, {"data", f.data}, {"mixes", f.mixes},
      {"device", f.device}, {"seconds", f.run.seconds}, {"gap_ms", f.run.gap_ms},
      {"sample_ms", f.run.sample_ms}, {"launch_ms", f.run.launch_ms}, {"idle_s", f.run.idle_s},
      {"lock_clocks_mhz", f.run.lock_clocks_mhz}, {"profile_divisor", f.run.profile_divisor},
      {"counters", f.counters}, {"ncu", f.ncu}, {"gpu_description", f.gpu_description},
      {"metrics", metrics}, {"metrics_left_out", metrics_left_out},
      {"fields", f.fields.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.fields)},
      {"field_log", f.fields.empty() ? "" : "gpm_fields.csv"}, {"gpm_metrics", f.run.gpm_metric_names},
      {"window_scale", f.run.window_scale},
  };
}

// The shallowest folder of `dir` that does not exist yet ("" when `dir` exists).
std::string FirstMissing(const std::string& dir) {
  std::error_code ec;
  fs::path missing;
  for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) missing = p;
  return missing.string();
}

// A power run that failed (a clock lock refused, a file it could not write) leaves --out as it
// was: the folders this run made are removed, else --out is emptied again (it was empty, and
// locked since).
void RemoveWhatTheRunWrote(const std::string& dir, const std::string& made) {
  std::error_code ec;
  if (!made.empty()) {
    fs::remove_all(made, ec);
    return;
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove_all(entry.path(), ec);
}

int Run(int argc, char** argv) {
  CaptureFlags f;
  CLI::App app{"Runs wattcal's microbenchmark suite on this GPU and writes a capture directory "
               "(windows.csv, idle_windows.csv, nvml_power.csv, capture.json and, with "
               "--counters, ncu_raw.csv) for wattcal-ingest --capture; or, with --app, records your "
               "own program into an applications capture for wattcal-predict --capture. GPU clocks "
               "and power settings are never changed unless --lock-clocks is given.",
               "wattcal-capture"};
  app.add_option("--out", f.out, "Capture directory to write");
  app.add_flag("--list", f.list, "Print the suite plan (CSV) and exit; needs no GPU");
  app.add_flag("--plan-seconds", f.plan_seconds,
               "Print the planned wall time of the run these options ask for (power run, counters) "
               "and exit; needs no GPU");
  app.add_option("--only", f.only, "Benchmarks to run: comma-separated names or a regular expression");
  app.add_option("--seed", f.seed, "Seed of the random data and of the random mixes")
      ->check(wattcal::Seed())
      ->capture_default_str();
  app.add_option("--data", f.data, "Buffer contents: random (default) or zeros (comparison only)")
      ->check(CLI::IsMember({"random", "zeros"}))->capture_default_str();
  app.add_option("--mixes", f.mixes, "Number of seeded random unit mixes")->capture_default_str();
  app.add_option("--device", f.device, "CUDA device index (--app: NVML's index, as nvidia-smi numbers GPUs; "
                 "default the first GPU of CUDA_VISIBLE_DEVICES, else 0)")->capture_default_str();
  app.add_option("--sm-count", f.sm_count, "SM count for --list without a GPU (default: the GPU's, else 132)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--seconds", f.run.seconds,
                 "Seconds each benchmark runs back to back (those that reach the power cap run the "
                 "plan's own window, --list's window_s)")
      ->capture_default_str();
  app.add_option(
         "--window-scale", f.run.window_scale,
         "Every window (the plan's own and --seconds) times this, in (0, 1]: rehearsals only")
      ->capture_default_str();
  app.add_option("--gap-ms", f.run.gap_ms, "Idle gap before each benchmark (--app: before each run, default "
                 "1000), ms")->capture_default_str();
  app.add_option("--sample-ms", f.run.sample_ms, "NVML sampling period, ms")->capture_default_str();
  app.add_option("--launch-ms", f.run.launch_ms, "Aimed duration of one launch, ms")->capture_default_str();
  app.add_option("--idle-s", f.run.idle_s, "Idle windows before and after the suite, s")->capture_default_str();
  app.add_option("--lock-clocks", f.run.lock_clocks_mhz,
                 "Core clocks (MHz) to lock, one suite pass each (needs the right to; reset on every exit)")
      ->delimiter(',');
  app.add_flag("--counters", f.counters, "Also profile one launch per benchmark with Nsight Compute (ncu_raw.csv; "
               "--app: the program once more, into ncu/NAME.csv)");
  app.add_option("--ncu", f.ncu, "The ncu program")->capture_default_str();
  app.add_option("--gpu-description", f.gpu_description,
                 "microbench_specs/gpus/*.json whose metrics the counters run collects (default: "
                 "the metric list of datasets/h100_capture)");
  app.add_option("--fields", f.fields,
                 "Also record NVML GPM metrics beside the power at each sample (gpm_fields.csv), no ncu needed: "
                 "'gpm' (every GPM metric wattcal knows) or a GPM field set "
                 "(microbench_specs/gpus/fields/*_gpm.json: its metrics); Hopper or later (docs/fields.md)");
  app.add_option("--profile-plan", f.profile_plan, "")->group("");  // hidden: ncu's child run
  app.add_option("--profile-divisor", f.run.profile_divisor,
                 "A profiled launch runs this many times fewer iterations")->capture_default_str();
  app.add_option("--app", f.app,
                 "Record your own program instead of the suite: --app NAME --out DIR [--repeat N] "
                 "[--counters] -- CMD ARGS... Each run (or each window it marks through WATTCAL_MARKS, "
                 "include/wattcal/marks.h, python/wattcal_marks.py) becomes a window NAME; DIR is "
                 "created or added to (needs no CUDA toolkit, only the driver)")->group("Applications");
  app.add_option("--repeat", f.repeat, "--app: runs of the command")->capture_default_str()->group("Applications");
  app.add_option("--window", f.window, "--app: only the marked windows of this name")->group("Applications");
  app.add_option("--nvtx-range", f.nvtx_range,
                 "--app --counters: profile only the kernels inside this NVTX push/pop range (default: the "
                 "marked windows' name when the program marks them)")->group("Applications");
  app.add_flag("--all-kernels", f.all_kernels, "--app --counters: profile every kernel, marked windows or not")
      ->group("Applications");
  app.add_option("command", f.command, "--app: the command and its arguments, after --")->group("Applications");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // invalid options: exit 1 (STYLE.md rule 6)
  }
  f.device_given = app.count("--device") > 0;
  std::string fields_error;
  f.gap_given = app.count("--gap-ms") > 0;
  if (!f.app.empty()) {
    std::vector<std::string> suite_only;
    for (const char* flag : {"--list", "--plan-seconds", "--window-scale", "--only", "--seed",
                             "--data", "--mixes", "--sm-count", "--seconds", "--launch-ms",
                             "--idle-s", "--lock-clocks", "--profile-divisor", "--profile-plan"}) {
      if (app.count(flag) > 0) suite_only.push_back(flag);
    }
    return RunApp(f, suite_only);
  }
  for (const char* flag : {"--repeat", "--window", "--nvtx-range", "--all-kernels"}) {
    if (app.count(flag) > 0) {
      wattcal::LogError(fmt::format("{} goes with --app NAME", flag));
      return 1;
    }
  }
  if (!f.command.empty()) {
    wattcal::LogError(fmt::format("'{}': a command to record goes with --app NAME (... --app NAME -- {})",
                                  f.command.front(), f.command.front()));
    return 1;
  }

  if (!f.fields.empty() && f.profile_plan.empty() &&
      !ResolveFieldRecording(f.fields, &f.run.gpm_metric_ids, &f.run.gpm_metric_names, &fields_error)) {
    wattcal::LogError(fields_error);
    return 1;
  }
  SuiteOptions suite;
  suite.mixes = f.mixes;
  suite.seed = f.seed;
  std::string error;

  if (f.list || f.plan_seconds) {
    suite.sm_count = f.sm_count > 0 ? f.sm_count : 132;
    f.run.out_dir = "-";  // not written
    if (!suite.Check(&error) || !f.run.Check(&error)) {
      wattcal::LogError(error);
      return 1;
    }
    std::vector<Benchmark> selected;
    if (!SelectBenchmarks(BuildSuitePlan(suite), f.only, &selected, &error)) {
      wattcal::LogError(error);
      return 1;
    }
    if (f.list) std::cout << PlanListing(selected);
    if (f.plan_seconds) std::cout << PlanTimingText(PlannedSeconds(selected, PlanTimingOf(f.run, f.counters))) << "\n";
    return 0;
  }

  if (f.profile_plan.empty()) {
    f.run.out_dir = f.out;
    if (!f.run.Check(&error)) {
      wattcal::LogError(error);
      return 1;
    }
    std::error_code ec;
    if (fs::exists(f.out, ec) && (!fs::is_directory(f.out, ec) || !fs::is_empty(f.out, ec))) {
      wattcal::LogError(fmt::format("--out {}: {}: the suite writes a new capture directory (an earlier "
                                    "capture is never overwritten); give a new or empty one",
                                    f.out, fs::is_directory(f.out, ec) ? "not empty" : "not a directory"));
      return 1;
    }
  }
  std::vector<std::string> metrics;
  if (f.counters) {
    if (!f.gpu_description.empty()) {
      try {
        metrics = DescriptionMetrics(f.gpu_description);
      } catch (const std::exception& e) {
        wattcal::LogError(fmt::format("--gpu-description: {}", e.what()));
        return 1;
      }
    } else {
      metrics = DefaultMetrics();
    }
    const std::string ncu = FindProgram(f.ncu);
    if (ncu.empty()) {
      wattcal::LogError(fmt::format("--counters: '{}' is not an executable on the PATH (install "
                                    "Nsight Compute, or give --ncu PATH)",
                                    f.ncu));
      return 2;
    }
    f.ncu = ncu;
  }

  CudaDeviceInfo cuda;
  const DataMode data = f.data == "zeros" ? DataMode::kZeros : DataMode::kRandom;
  // WATTCAL_SIMULATED_GPU: a stand-in device, to rehearse a GPU machine's script here.
  std::unique_ptr<BenchmarkDevice> device = SimulatedGpuRequested()
                                                ? OpenSimulatedDevice(&cuda)
                                                : OpenCudaDevice(f.device, data, f.seed, &cuda, &error);
  if (device && SimulatedGpuRequested() && f.profile_plan.empty()) {
    wattcal::LogWarning("WATTCAL_SIMULATED_GPU is set: the launches sleep on a simulated device; these "
                        "measurements are not a GPU's (unset it on a GPU machine)");
  }
  if (!device) {
    wattcal::LogError(error);
    return 2;
  }
  suite.sm_count = f.sm_count > 0 ? f.sm_count : cuda.sm_count;
  if (!suite.Check(&error)) {
    wattcal::LogError(error);
    return 1;
  }
  const std::vector<Benchmark> plan = BuildSuitePlan(suite);
  std::vector<std::string> metrics_left_out;
  if (f.counters && f.profile_plan.empty()) {
    // One metric ncu does not know on this chip fails the whole counters run, after the power
    // run's minutes: those are left out now, named (their components are then left out by
    // wattcal-ingest when optional, refused by name when not).
    std::string note;
    metrics_left_out = MetricsTheChipLacks(f.ncu, NcuChip(cuda.compute_capability), metrics, &note);
    wattcal::LogInfo(note);
    for (const std::string& m : metrics_left_out) {
      wattcal::LogWarning(fmt::format("{}: ncu does not list it for this chip: left out of the counters", m));
      metrics.erase(std::find(metrics.begin(), metrics.end(), m));
    }
  }

  if (!f.profile_plan.empty()) {  // the child of the counters run, under ncu
    try {
      RunProfilePlan(plan, ReadProfilePlan(f.profile_plan), *device);
    } catch (const std::exception& e) {
      wattcal::LogError(e.what());
      return 3;
    }
    return 0;
  }

  std::vector<Benchmark> selected;
  if (!SelectBenchmarks(plan, f.only, &selected, &error)) {
    wattcal::LogError(error);
    return 1;
  }
  // What this GPU cannot run (its compute capability, or code this build lacks for it) is
  // left out, each with its reason.
  std::vector<SkippedBenchmark> skipped;
  selected = PlanForGpu(selected, cuda.compute_capability, &skipped,
                        [&](const Benchmark& b) { return device->Unavailable(b); });
  for (const std::string& line : Lines(SkippedListing(skipped))) wattcal::LogWarning(line);
  if (selected.empty()) {
    wattcal::LogError(fmt::format("{} benchmark{} selected, none of which this GPU runs", skipped.size(),
                                  skipped.size() == 1 ? "" : "s"));
    return 1;
  }
  Nvml nvml;
  if (!nvml.Open(cuda.pci_bus_id, cuda.uuid, &error, NvmlLibraryFromEnvironment())) {
    wattcal::LogError(error);
    return 2;
  }
  CaptureInfo info;
  info.gpu_name = cuda.name;
  info.pci_bus_id = cuda.pci_bus_id;
  info.gpu_uuid = cuda.uuid;
  info.compute_capability = cuda.compute_capability;
  info.sm_count = cuda.sm_count;
  info.cuda_driver_version = cuda.driver_version;
  info.cuda_runtime_version = cuda.runtime_version;
  nvml.Describe(&info);
  // --fields: refused here, before --out is made, when this GPU or driver has no GPM.
  if (!f.run.gpm_metric_ids.empty() && !nvml.StartFieldSampling(f.run.gpm_metric_ids, &error)) {
    wattcal::LogError(error);
    return 2;
  }
  if (f.counters) info.ncu_version = LastLineOf(ShellJoin({f.ncu, "--version"}));

  wattcal::LogInfo(fmt::format("{} ({} SMs, sm_{}): {} benchmarks x {} s{}, data {}, clocks {}", info.gpu_name,
                               info.sm_count, info.compute_capability, selected.size(), f.run.seconds,
                               skipped.empty() ? "" : fmt::format(" ({} not run, listed above)", skipped.size()),
                               f.data, f.run.lock_clocks_mhz.empty() ? "as they are" : "locked per pass"));
  wattcal::LogInfo(
      fmt::format("planned: {}", PlanTimingText(PlannedSeconds(selected, PlanTimingOf(f.run, f.counters)))));
  const bool tty = wattcal::StderrIsTerminal();
  RunResult result;
  const std::string made = FirstMissing(f.out);
  DirectoryLock lock;  // one recording into a directory at a time
  try {
    fs::create_directories(f.out);
    if (!lock.Acquire(f.out, &error)) {
      wattcal::LogError(error);
      return 1;
    }
    if (!fs::is_empty(f.out)) {  // written since the check above
      wattcal::LogError(fmt::format("--out {}: not empty: the suite writes a new capture directory", f.out));
      return 1;
    }
  } catch (const std::exception& e) {
    wattcal::LogError(fmt::format("--out {}: {}", f.out, e.what()));
    return 1;
  }
  try {
    WriteTextFile(f.out + "/capture.json", CaptureJson(info, OptionsJson(f, metrics, metrics_left_out)).dump(2) + "\n");
    result = RunPowerCapture(selected, f.run, *device, nvml, [&](const std::string& line) {
      std::fprintf(stderr, tty ? "\r\033[K%s" : "%s\n", line.c_str());
      std::fflush(stderr);
    });
    if (tty) std::fprintf(stderr, "\n");
  } catch (const std::exception& e) {
    if (tty) std::fprintf(stderr, "\n");
    RemoveWhatTheRunWrote(f.out, made);
    wattcal::LogError(fmt::format("{}; nothing was kept: --out {} is as it was", e.what(), f.out));
    return 3;
  }
  wattcal::LogInfo(fmt::format("{}: {} windows, {} NVML samples", f.out, result.windows.size(), result.samples));

  if (f.counters) {
    device.reset();  // free the GPU's memory for the profiled child
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    const std::string exe = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]);
    const std::vector<std::string> child = {exe, "--profile-plan", f.out + "/profile_plan.csv", "--seed",
                                            std::to_string(f.seed), "--mixes", std::to_string(f.mixes),
                                            "--data", f.data, "--device", std::to_string(f.device),
                                            "--sm-count", std::to_string(suite.sm_count)};
    wattcal::LogInfo(fmt::format("counters: {} launches under {}", result.profile.size(), f.ncu));
    if (!RunCounters(f.ncu, metrics, child, f.out, &error)) {
      wattcal::LogError(fmt::format("{}; the power files are complete", error));
      return 3;
    }
  }
  wattcal::LogInfo(fmt::format("done: wattcal-ingest --capture {} --gpu microbench_specs/gpus/<gpu>.json", f.out));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    wattcal::LogError(e.what());
    return 3;
  }
}
