#include "runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "io/field_set.h"
#include "io/gpu_description.h"
#include "sampler.h"
#include "wall_clock.h"

namespace wattcal::capture {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void SleepMs(double ms) {
  if (ms > 0.0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

std::string Duration(double s) {
  const int64_t t = static_cast<int64_t>(std::ceil(std::max(0.0, s)));
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

// Iterations for ~launch_ms: probe with growing counts until a launch lasts >= 1/8 of it.
int64_t Calibrate(BenchmarkDevice& device, const Benchmark& b, double launch_ms) {
  int64_t iters = 1;
  double ms = device.TimedLaunch(b, iters);  // also the warm-up
  for (int k = 0; k < 40 && ms < launch_ms / 8.0; ++k) {
    iters = ms > 0.0 ? std::max(iters * 2, CalibratedIterations(iters, ms, launch_ms / 4.0)) : iters * 2;
    ms = device.TimedLaunch(b, iters);
  }
  return CalibratedIterations(iters, ms, launch_ms);
}

// The clock-restoring state for signals and exit.
std::atomic<PowerMeter*> g_locked_meter{nullptr};
std::once_flag g_atexit_once;

void RestoreClocks() {
  PowerMeter* meter = g_locked_meter.exchange(nullptr);
  if (meter != nullptr) {
    std::string error;
    meter->ResetCoreClock(&error);
  }
}

extern "C" void RestoreClocksOnSignal(int sig) {
  RestoreClocks();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

extern "C" void RestoreClocksAtExit() { RestoreClocks(); }

// Resets the clock when a locked pass ends, whichever way.
class ClockLock {
 public:
  ClockLock(PowerMeter& meter, int mhz) : meter_(meter) {
    std::string error;
    InstallClockRestorer(&meter_);
    if (!meter_.LockCoreClock(mhz, &error)) {
      InstallClockRestorer(nullptr);
      throw std::runtime_error(fmt::format("--lock-clocks {}: {}", mhz, error));
    }
  }
  ~ClockLock() {
    std::string error;
    meter_.ResetCoreClock(&error);
    InstallClockRestorer(nullptr);
  }

 private:
  PowerMeter& meter_;
};

}  // namespace

bool RunOptions::Check(std::string* error) const {
  auto bad = [&](const char* flag, double v, const char* rule) {
    *error = fmt::format("{}: {} {}", flag, v, rule);
    return false;
  };
  if (out_dir.empty()) {
    *error = "--out: give the capture directory to write";
    return false;
  }
  if (!(seconds > 0.0 && seconds <= 3600.0)) return bad("--seconds", seconds, "is not a time in (0, 3600] s");
  if (!(gap_ms >= 0.0 && gap_ms <= 600000.0)) return bad("--gap-ms", gap_ms, "is not a time in [0, 600000] ms");
  if (!(sample_ms >= 1.0 && sample_ms <= 10000.0)) return bad("--sample-ms", sample_ms, "is not a period in [1, 10000] ms");
  if (!(window_scale > 0.0 && window_scale <= 1.0)) {
    return bad("--window-scale", window_scale, "is not a factor in (0, 1]");
  }
  if (!(launch_ms > 0.0 && launch_ms <= 10000.0)) return bad("--launch-ms", launch_ms, "is not a time in (0, 10000] ms");
  if (!(idle_s >= 0.0 && idle_s <= 3600.0)) return bad("--idle-s", idle_s, "is not a time in [0, 3600] s");
  for (int mhz : lock_clocks_mhz) {
    if (mhz < 100 || mhz > 10000) return bad("--lock-clocks", mhz, "is not a core clock in [100, 10000] MHz");
  }
  if (profile_divisor < 1) return bad("--profile-divisor", profile_divisor, "must be >= 1");
  if (gpm_metric_ids.size() != gpm_metric_names.size()) {
    *error = "--fields: one name per GPM metric id";
    return false;
  }
  return true;
}

PlanTimingOptions PlanTimingOf(const RunOptions& options, bool counters) {
  PlanTimingOptions t;
  t.seconds = options.seconds;
  t.window_scale = options.window_scale;
  t.gap_ms = options.gap_ms;
  t.idle_s = options.idle_s;
  t.counters = counters;
  return t;
}

RunResult RunPowerCapture(const std::vector<Benchmark>& plan, const RunOptions& options,
                          BenchmarkDevice& device, PowerMeter& meter, const ProgressFn& progress) {
  std::string error;
  if (!options.Check(&error)) throw std::runtime_error(error);
  if (plan.empty()) throw std::runtime_error("the plan has no benchmark");
  fs::create_directories(options.out_dir);
  const std::string dir = options.out_dir;

  RunResult r;
  std::vector<int> clocks = options.lock_clocks_mhz;
  if (clocks.empty()) clocks.push_back(0);  // 0 = as they are
  const int64_t total = static_cast<int64_t>(plan.size() * clocks.size());
  const PlanTimingOptions timing = PlanTimingOf(options, false);
  // The seconds left after each benchmark of a pass (for the progress line).
  std::vector<double> left_after(plan.size() + 1, 0.0);
  for (size_t i = plan.size(); i-- > 0;) left_after[i] = left_after[i + 1] + BenchmarkSeconds(plan[i], timing);
  int64_t done = 0;

  FieldRecording fields;
  if (!options.gpm_metric_ids.empty()) {
    fields = {dir + "/gpm_fields.csv", options.gpm_metric_ids, options.gpm_metric_names};
  }
  Sampler sampler(meter, dir + "/nvml_power.csv", options.sample_ms, fields);
  sampler.WaitForFirstSample();
  {
    const int64_t start = NowUs();
    SleepMs(options.idle_s * 1e3);
    r.idle.push_back({"idle_before", start, NowUs()});
    WriteTextFile(dir + "/idle_windows.csv", IdleWindowsCsv(r.idle));
  }
  for (int mhz : clocks) {
    std::unique_ptr<ClockLock> lock;
    if (mhz > 0) lock = std::make_unique<ClockLock>(meter, mhz);
    for (size_t i = 0; i < plan.size(); ++i) {
      const Benchmark& b = plan[i];
      if (progress) {
        const int64_t passes_after =
            static_cast<int64_t>(clocks.size()) - 1 - done / static_cast<int64_t>(plan.size());
        progress(
            fmt::format("[{}/{}] {}{} ... {} left", done + 1, total, b.name,
                        mhz > 0 ? fmt::format(" at {} MHz", mhz) : std::string(),
                        Duration(left_after[i] + passes_after * left_after[0] + options.idle_s)));
      }
      const int64_t iters = Calibrate(device, b, options.launch_ms);
      SleepMs(options.gap_ms);
      WindowRecord w;
      w.kernel = b.name;
      w.iters = iters;
      w.blocks = b.blocks;
      w.threads = b.threads;
      w.lanes = b.lanes;
      const auto t0 = Clock::now();
      const std::chrono::duration<double> run(
          WindowSeconds(b, options.seconds, options.window_scale));
      w.start_us = NowUs();
      do {
        device.Launch(b, iters);
        ++w.launches;
      } while (Clock::now() - t0 < run);
      device.Synchronize();
      w.end_us = NowUs();
      r.windows.push_back(w);
      r.profile.push_back({b.name, ProfileIterations(iters, options.profile_divisor)});
      ++done;
      // Rewritten after every window: an interrupted run leaves a capture of what it measured.
      WriteTextFile(dir + "/windows.csv", WindowsCsv(r.windows));
      WriteTextFile(dir + "/profile_plan.csv", ProfilePlanCsv(r.profile));
    }
  }
  {
    SleepMs(options.gap_ms);
    const int64_t start = NowUs();
    SleepMs(options.idle_s * 1e3);
    r.idle.push_back({"idle_after", start, NowUs()});
  }
  SleepMs(2.0 * options.sample_ms);  // a reading after the last window's end
  sampler.Stop();
  r.samples = sampler.samples();
  WriteTextFile(dir + "/idle_windows.csv", IdleWindowsCsv(r.idle));
  return r;
}

void RunProfilePlan(const std::vector<Benchmark>& plan, const std::vector<ProfileEntry>& entries,
                    BenchmarkDevice& device) {
  std::map<std::string, const Benchmark*> by_name;
  for (const Benchmark& b : plan) by_name[b.name] = &b;
  for (const ProfileEntry& e : entries) {
    if (!by_name.count(e.name)) {
      throw std::runtime_error(fmt::format("profile plan: no benchmark '{}' in this suite (same "
                                           "--seed, --mixes and GPU as the power run?)",
                                           e.name));
    }
  }
  for (const ProfileEntry& e : entries) {
    device.Launch(*by_name[e.name], e.iters);
    device.Synchronize();
  }
}

void InstallClockRestorer(PowerMeter* meter) {
  g_locked_meter = meter;
  if (meter != nullptr) {
    std::call_once(g_atexit_once, [] { std::atexit(RestoreClocksAtExit); });
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, RestoreClocksOnSignal);
  } else {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  }
}

bool ResolveFieldRecording(const std::string& value, std::vector<int>* gpm_metric_ids,
                           std::vector<std::string>* names, std::string* error) {
  std::vector<const KnownField*> fields;
  if (value == "gpm") {
    for (const KnownField& f : KnownFields()) {
      if (f.source == FieldSource::kGpm) fields.push_back(&f);
    }
  } else {
    try {
      const FieldSet set = ReadFieldSet(value);
      if (set.source != FieldSource::kGpm) {
        *error = fmt::format("--fields {}: a {} field set; wattcal-capture records NVML GPM metrics only (give a "
                             "GPM set, or --fields gpm)",
                             value, FieldSourceName(set.source));
        return false;
      }
      for (const std::string& name : set.Fields()) fields.push_back(FindKnownField(name));
    } catch (const std::exception& e) {
      *error = fmt::format("--fields {}: neither 'gpm' nor a GPM field set ({})", value, e.what());
      return false;
    }
  }
  std::sort(fields.begin(), fields.end(), [](const KnownField* a, const KnownField* b) { return a->id < b->id; });
  gpm_metric_ids->clear();
  names->clear();
  for (const KnownField* f : fields) {
    gpm_metric_ids->push_back(f->id);
    names->push_back(f->name);
  }
  return true;
}

std::vector<std::string> DescriptionMetrics(const std::string& description_path) {
  return ReadGpuDescription(description_path).Metrics();
}

std::vector<std::string> DefaultMetrics() {
  return {
      "gpu__time_duration.sum", "gpc__cycles_elapsed.max", "sm__cycles_elapsed.avg",
      "sm__cycles_elapsed.avg.per_second", "sm__cycles_active.avg",
      "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__inst_executed.sum",
      "smsp__thread_inst_executed.sum", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
      "sm__sass_thread_inst_executed_op_integer_pred_on.sum", "sm__inst_executed_pipe_alu.sum",
      "sm__inst_executed_pipe_fma.sum", "sm__inst_executed_pipe_fmaheavy.sum",
      "sm__inst_executed_pipe_fp64.sum", "sm__inst_executed_pipe_xu.sum",
      "sm__inst_executed_pipe_lsu.sum", "sm__inst_executed_pipe_uniform.sum",
      "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
      "sm__inst_executed_pipe_tensor_op_imma.sum", "sm__inst_executed_pipe_tensor_op_dmma.sum",
      "sm__pipe_tensor_op_hmma_cycles_active.sum", "sm__cycles_active.sum",
      "sm__pipe_fma_cycles_active.sum", "sm__pipe_alu_cycles_active.sum",
      "sm__pipe_fp64_cycles_active.sum", "sm__pipe_shared_cycles_active.sum",
      "sm__sass_inst_executed_op_branch.sum", "sm__sass_inst_executed_op_shared_ld.sum",
      "sm__sass_inst_executed_op_shared_st.sum", "sm__sass_inst_executed_op_global_ld.sum",
      "sm__sass_inst_executed_op_global_st.sum", "l1tex__t_bytes.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__t_sector_hit_rate.pct",
      "lts__t_bytes.sum", "lts__t_sector_hit_rate.pct", "dram__bytes.sum", "dram__bytes_read.sum",
      "dram__bytes_write.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "lts__throughput.avg.pct_of_peak_sustained_elapsed",
  };
}

std::vector<std::string> NcuCommand(const std::string& ncu, const std::vector<std::string>& metrics,
                                    const std::vector<std::string>& program_args) {
  std::string list;
  for (const std::string& m : metrics) list += (list.empty() ? "" : ",") + m;
  std::vector<std::string> cmd = {ncu, "--csv", "--page", "raw", "--clock-control", "none",
                                  "--target-processes", "all", "--metrics", list};
  cmd.insert(cmd.end(), program_args.begin(), program_args.end());
  return cmd;
}

std::string ShellJoin(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) {
    if (!s.empty()) s += ' ';
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    s += q + "'";
  }
  return s;
}

std::string FindProgram(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

bool RunCounters(const std::string& ncu, const std::vector<std::string>& metrics,
                 const std::vector<std::string>& program_args, const std::string& out_dir,
                 std::string* error) {
  const std::string log = out_dir + "/ncu_stderr.log";
  const std::string command = ShellJoin(NcuCommand(ncu, metrics, program_args)) + " 2>" + ShellJoin({log});
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *error = fmt::format("cannot start {}", ncu);
    return false;
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  const int status = pclose(pipe);
  WriteTextFile(out_dir + "/ncu_raw.csv", text);
  const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    *error = fmt::format("{} exited with status {} (see {}); ncu_raw.csv holds what it printed", ncu, code, log);
    return false;
  }
  return true;
}

std::string NcuChip(int compute_capability) {
  switch (compute_capability) {
    case 70: return "gv100";
    case 75: return "tu102";
    case 80: return "ga100";
    case 86: return "ga102";
    case 89: return "ad102";
    case 90: return "gh100";
    default: return "";
  }
}

std::vector<std::string> MetricsTheChipLacks(const std::string& ncu, const std::string& chip,
                                             const std::vector<std::string>& metrics, std::string* note) {
  if (chip.empty()) {
    *note = "no Nsight Compute chip name known for this GPU: the metrics are not checked before the run";
    return {};
  }
  const std::string command = ShellJoin({ncu, "--query-metrics", "--chip", chip}) + " 2>/dev/null";
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *note = fmt::format("cannot start {}: the metrics are not checked before the run", ncu);
    return {};
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  const int status = pclose(pipe);
  // Each metric is a line's first word: unit__name (the table's header and notes are not).
  std::set<std::string> known;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    if (words >> first && first.find("__") != std::string::npos) known.insert(first);
  }
  if (status != 0 || known.empty()) {
    *note = fmt::format("{} --query-metrics --chip {} gave no metric list: the metrics are not checked before "
                        "the run",
                        ncu, chip);
    return {};
  }
  std::vector<std::string> lacking;
  for (const std::string& m : metrics) {
    if (!known.count(m.substr(0, m.find('.')))) lacking.push_back(m);
  }
  *note = fmt::format("{} metrics checked against {} --query-metrics --chip {} ({} known)", metrics.size(), ncu,
                      chip, known.size());
  return lacking;
}

std::string LastLineOf(const std::string& command) {
  std::FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return "";
  std::string all;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) all.append(buf, n);
  pclose(pipe);
  while (!all.empty() && (all.back() == '\n' || all.back() == '\r')) all.pop_back();
  const size_t nl = all.rfind('\n');
  return nl == std::string::npos ? all : all.substr(nl + 1);
}

}  // namespace wattcal::capture
