#include "app_runner.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "ingest/counters.h"
#include "sampler.h"
#include "util/errors.h"

extern char** environ;

namespace wattcal::capture {

namespace {

namespace fs = std::filesystem;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsWord(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  return true;
}

bool IsWorkloadName(const std::string& s) {
  if (s.empty() || s.size() > 120 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+')) return false;
  }
  return true;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// SIGINT/SIGTERM while the program runs: the program gets it too (same process group); the
// run then stops after it, and nothing is written.
std::atomic<int> g_signal{0};
extern "C" void NoteSignal(int sig) { g_signal = sig; }

class SignalNote {
 public:
  SignalNote() {
    g_signal = 0;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = NoteSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalNote() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_, old_term_;
};

// Runs `argv` (PATH searched) with `env_add` ("NAME=value") added to the environment; returns
// its wait status text ("" = exited 0). Throws when it cannot start.
std::string RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env_add) {
  std::vector<std::string> env_strings;
  std::set<std::string> overridden;
  for (const std::string& e : env_add) overridden.insert(e.substr(0, e.find('=')));
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (!overridden.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), env_add.begin(), env_add.end());
  std::vector<char*> envp, args;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data());
  if (rc != 0) {
    throw std::runtime_error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("waiting for '{}': {}", argv[0], std::strerror(errno)));
  }
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == 0) return "";
    // posix_spawnp reports a program it could not execute as exit status 127.
    return code == 127 ? "exited with status 127 (not found or not executable?)"
                       : fmt::format("exited with status {}", code);
  }
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended abnormally";
}

// Files written during the recording, removed unless it succeeds.
class Scratch {
 public:
  ~Scratch() {
    if (keep_) return;
    std::error_code ec;
    for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) fs::remove(*it, ec);
  }
  const std::string& Add(const std::string& path) {
    paths_.push_back(path);
    return paths_.back();
  }
  void Keep() { keep_ = true; }

 private:
  std::vector<std::string> paths_;
  bool keep_ = false;
};

// Directories created now (removed again when the recording fails and they stayed empty).
void MakeDirectory(const std::string& dir, Scratch* scratch) {
  std::vector<std::string> made;
  fs::path p(dir);
  while (!p.empty() && !fs::exists(p)) {
    made.push_back(p.string());
    p = p.parent_path();
  }
  fs::create_directories(dir);
  // Scratch removes in reverse order: the shallowest is added first, so the deepest goes first.
  for (auto it = made.rbegin(); it != made.rend(); ++it) scratch->Add(*it);
}

struct ExistingCapture {
  bool exists = false;
  nlohmann::json json;
  std::vector<AppWindow> windows;
  std::string power_header;
};

// What the directory holds, checked against this recording.
ExistingCapture InspectDirectory(const AppCaptureOptions& o, const CaptureInfo& gpu) {
  ExistingCapture e;
  const fs::path dir(o.out_dir);
  if (!fs::exists(dir)) return e;
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("--out {}: not a directory", o.out_dir));
  if (fs::is_empty(dir)) return e;
  const std::string json_path = (dir / "capture.json").string();
  if (!fs::is_regular_file(json_path)) {
    throw std::runtime_error(fmt::format("--out {}: the directory is not empty and has no capture.json: "
                                         "not a capture that wattcal-capture --app wrote (give a new directory)",
                                         o.out_dir));
  }
  e.json = nlohmann::json::parse(ReadText(json_path), nullptr, false);
  if (!e.json.is_object() || e.json.value("format", "") != "wattcal-capture") {
    throw std::runtime_error(fmt::format("{}: not a wattcal-capture capture.json", json_path));
  }
  if (e.json.value("kind", "") != "apps") {
    throw std::runtime_error(fmt::format("--out {}: this is a suite capture: record applications into a "
                                         "directory of their own",
                                         o.out_dir));
  }
  const nlohmann::json& g = e.json["gpu"];
  const std::string uuid = g.is_object() ? g.value("uuid", "") : "";
  const std::string name = g.is_object() ? g.value("name", "") : "";
  if ((!uuid.empty() && !gpu.gpu_uuid.empty() && uuid != gpu.gpu_uuid) ||
      (uuid.empty() && !name.empty() && name != gpu.gpu_name)) {
    throw std::runtime_error(fmt::format("--out {}: recorded on {} ({}), but this GPU is {} ({}): one capture "
                                         "directory holds one GPU; give another --out",
                                         o.out_dir, name, uuid, gpu.gpu_name, gpu.gpu_uuid));
  }
  e.exists = true;
  if (fs::is_regular_file(dir / "windows.csv")) e.windows = ReadAppWindows((dir / "windows.csv").string());
  if (fs::is_regular_file(dir / "nvml_power.csv")) e.power_header = FirstLine((dir / "nvml_power.csv").string());
  if (o.counters && fs::exists(dir / "ncu" / (o.name + ".csv"))) {
    throw std::runtime_error(fmt::format("--counters: {}/ncu/{}.csv exists already (the counters of an earlier "
                                         "recording of '{}'): record under another --app name, or without "
                                         "--counters to add power windows only",
                                         o.out_dir, o.name, o.name));
  }
  return e;
}

// The windows of one run: its marks (filtered by --window), else the run itself.
std::vector<AppWindow> RunWindows(const AppCaptureOptions& o, const std::string& marks_path, int run,
                                  int64_t start_us, int64_t end_us, std::set<std::string>* mark_names) {
  const std::vector<MarkedWindow> marks = ReadMarks(marks_path);
  std::vector<AppWindow> out;
  std::set<std::string> names;
  for (const MarkedWindow& m : marks) names.insert(m.name);
  if (marks.empty()) {
    AppWindow w;
    w.window.kernel = o.name;
    w.window.start_us = start_us;
    w.window.end_us = end_us;
    w.run = run;
    out.push_back(w);
    return out;
  }
  if (o.window.empty() && names.size() > 1) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
    throw std::runtime_error(fmt::format("{}: the program marks {} different windows ({}): one --app records one "
                                         "workload; choose one with --window NAME (and record the others "
                                         "with another --app ... --window)",
                                         marks_path, names.size(), list));
  }
  for (const MarkedWindow& m : marks) {
    if (!o.window.empty() && m.name != o.window) continue;
    AppWindow w;
    w.window.kernel = o.name;
    w.window.start_us = m.begin_ns / 1000;
    w.window.end_us = m.end_ns / 1000;
    w.run = run;
    w.mark = m.name;
    if (w.window.start_us < start_us || w.window.end_us > end_us) {
      throw InputError(marks_path, w.window.start_us < start_us ? m.begin_line : m.end_line, "",
                       fmt::format("the window '{}' lies outside the run ({} to {} us since the epoch): marks "
                                   "must carry CLOCK_REALTIME nanoseconds (time.time_ns(), clock_gettime)",
                                   m.name, start_us, end_us));
    }
    out.push_back(w);
    mark_names->insert(m.name);
  }
  if (out.empty()) {
    throw std::runtime_error(fmt::format("{}: no window named '{}' (--window); the program marked {}", marks_path,
                                         o.window, *names.begin()));
  }
  return out;
}

void AppendPowerLog(const std::string& from, const std::string& to, const std::string& expected_header) {
  std::ifstream in(from, std::ios::binary);
  std::string header;
  std::getline(in, header);
  if (header != expected_header) {  // checked before the runs too; the file may have changed since
    throw std::runtime_error(fmt::format("{}: its columns ({}) are not this GPU's NVML columns ({}): give another --out",
                                         to, expected_header, header));
  }
  std::ofstream out(to, std::ios::binary | std::ios::app);
  out << in.rdbuf();
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("{}: cannot append the new samples", to));
}

bool HasNcuHeader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("\"ID\"", 0) == 0) return true;
  }
  return false;
}

// The last `n` non-empty lines of ncu's output, for an error message: the scratch export that
// holds them is removed with the rest of a failed recording.
std::string NcuMessages(const std::string& path, size_t n = 6) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line.substr(0, 300));
  }
  if (lines.empty()) return " (its log file is empty)";
  std::string out = "; ncu's last messages:";
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "\n  " + lines[i];
  return out;
}

// The counters run: ncu over the program once, its raw page into `export_path`.
void RunAppCounters(const AppCaptureOptions& o, const std::string& nvtx_range, const std::string& export_path,
                    const std::string& marks_scratch, const ProgressFn& progress) {
  const std::vector<std::string> cmd = AppNcuCommand(o, nvtx_range, export_path);
  if (progress) progress(fmt::format("counters: {} under {}{}", o.name, o.ncu,
                                     nvtx_range.empty() ? "" : fmt::format(" (NVTX range '{}')", nvtx_range)));
  // WATTCAL_PROFILING=1: a program may run fewer steps here (ncu replays every launch; the
  // utilisations are ratios of summed counters, the same for 2 steps as for 2000).
  const std::string failed = RunProgram(cmd, {"WATTCAL_MARKS=" + marks_scratch, "WATTCAL_PROFILING=1"});
  if (!failed.empty()) {
    throw std::runtime_error(fmt::format("--counters: {} {}{}", o.ncu, failed, NcuMessages(export_path)));
  }
  if (!HasNcuHeader(export_path)) {
    throw std::runtime_error(fmt::format(
        "--counters: ncu profiled no kernel of '{}'{}{}{}", o.name,
        nvtx_range.empty() ? "" : fmt::format(" inside the NVTX range '{}'", nvtx_range),
        nvtx_range.empty() ? ": does the program launch GPU kernels on this device?"
                           : ": do the program's marked windows push NVTX ranges (the wattcal marks helpers do "
                             "when NVTX is available)? Else give --all-kernels",
        NcuMessages(export_path)));
  }
  int64_t launches = 0;
  const std::set<std::string> no_metrics;  // counted only: the export may hold 10^5 launches
  ForEachCounterLaunch(export_path, &no_metrics, [&](CounterLaunch&&) { ++launches; });
  if (launches == 0) throw InputError(export_path, 0, "", "no profiled kernel launches");
  if (progress) progress(fmt::format("counters: {} kernel launches profiled", launches));
}

nlohmann::json RecordingJson(const AppCaptureOptions& o, const std::vector<int>& runs, size_t windows, bool marked,
                             const std::string& nvtx_range, int64_t started_us) {
  return {{"app", o.name},          {"command", o.command},       {"repeat", o.repeat},
          {"runs", runs},           {"windows", windows},         {"marked", marked},
          {"window", o.window},     {"gap_ms", o.gap_ms},         {"sample_ms", o.sample_ms},
          {"counters", o.counters}, {"nvtx_range", nvtx_range},   {"all_kernels", o.all_kernels},
          {"metrics", o.metrics},   {"started_us", started_us}};
}

}  // namespace

bool AppCaptureOptions::Check(std::string* error) const {
  auto bad = [&](const std::string& message) {
    *error = message;
    return false;
  };
  if (out_dir.empty()) return bad("--out: give the capture directory to write or add to");
  if (!IsWorkloadName(name)) {
    return bad(fmt::format("--app '{}': a workload name is letters, digits and _ . - + (up to 120, not "
                           "starting with . or -)",
                           name));
  }
  if (command.empty()) return bad("--app: give the command to record after --, e.g. --app gemm -- ./gemm 4096");
  if (repeat < 1 || repeat > 1000) return bad(fmt::format("--repeat: {} is not a count in [1, 1000]", repeat));
  if (!(gap_ms >= 0.0 && gap_ms <= 600000.0)) return bad(fmt::format("--gap-ms: {} is not a time in [0, 600000] ms", gap_ms));
  if (!(sample_ms >= 1.0 && sample_ms <= 10000.0)) {
    return bad(fmt::format("--sample-ms: {} is not a period in [1, 10000] ms", sample_ms));
  }
  if (!window.empty() && !IsWord(window)) return bad(fmt::format("--window '{}': a mark's name is one word", window));
  if (!nvtx_range.empty() && !IsWord(nvtx_range)) {
    return bad(fmt::format("--nvtx-range '{}': an NVTX range name is one word here", nvtx_range));
  }
  if (!counters && (!nvtx_range.empty() || all_kernels)) return bad("--nvtx-range and --all-kernels go with --counters");
  if (all_kernels && !nvtx_range.empty()) return bad("--all-kernels and --nvtx-range: give one of them");
  if (counters && metrics.empty()) return bad("--counters: no metrics to collect");
  return true;
}

std::vector<std::string> AppNcuCommand(const AppCaptureOptions& o, const std::string& nvtx_range,
                                       const std::string& log_file) {
  std::string list;
  for (const std::string& m : o.metrics) list += (list.empty() ? "" : ",") + m;
  std::vector<std::string> cmd = {o.ncu, "--csv", "--page", "raw", "--clock-control", "none",
                                  "--target-processes", "all", "--metrics", list};
  if (!nvtx_range.empty()) {
    cmd.insert(cmd.end(), {"--nvtx", "--nvtx-include", nvtx_range + "/"});
  }
  cmd.insert(cmd.end(), {"--log-file", log_file});
  cmd.insert(cmd.end(), o.command.begin(), o.command.end());
  return cmd;
}

std::string AppWindowsCsv(const std::vector<AppWindow>& windows) {
  std::string s = "kernel,start_us,end_us,run,mark\n";
  for (const AppWindow& w : windows) {
    s += fmt::format("{},{},{},{},{}\n", w.window.kernel, w.window.start_us, w.window.end_us, w.run, w.mark);
  }
  return s;
}

std::vector<AppWindow> ReadAppWindows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<AppWindow> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1) {
      if (line != "kernel,start_us,end_us,run,mark") {
        throw InputError(path, 1, "", fmt::format("'{}' is not the header of an applications capture's windows "
                                                  "(kernel,start_us,end_us,run,mark)",
                                                  line));
      }
      continue;
    }
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (line.back() == ',') f.push_back("");
    if (f.size() != 5) throw InputError(path, n, "", fmt::format("expected 5 fields, got {}", f.size()));
    AppWindow w;
    w.window.kernel = f[0];
    try {
      w.window.start_us = std::stoll(f[1]);
      w.window.end_us = std::stoll(f[2]);
      w.run = std::stoi(f[3]);
    } catch (const std::exception&) {
      throw InputError(path, n, "", "start_us, end_us and run must be whole numbers");
    }
    w.mark = f[4];
    out.push_back(w);
  }
  return out;
}

std::vector<WindowRecord> RunAppCapture(const AppCaptureOptions& o, const CaptureInfo& gpu, PowerMeter& meter,
                                        const ProgressFn& progress) {
  std::string error;
  if (!o.Check(&error)) throw std::runtime_error(error);
  const ExistingCapture existing = InspectDirectory(o, gpu);
  if (!existing.power_header.empty()) {
    std::string header = PowerLogHeader(PowerColumns::Of(meter.Read()));
    header.pop_back();  // its newline
    if (header != existing.power_header) {
      throw std::runtime_error(fmt::format("{}/nvml_power.csv: its columns ({}) are not this GPU's NVML columns "
                                           "({}): give another --out",
                                           o.out_dir, existing.power_header, header));
    }
  }
  Scratch scratch;
  MakeDirectory(o.out_dir, &scratch);
  const fs::path dir = fs::absolute(o.out_dir);

  // Run numbers continue those of earlier recordings of this workload.
  int first_run = 1;
  for (const AppWindow& w : existing.windows) {
    if (w.window.kernel == o.name) first_run = std::max(first_run, w.run + 1);
  }
  while (fs::exists(dir / "marks" / fmt::format("{}.run{}.txt", o.name, first_run))) ++first_run;
  MakeDirectory((dir / "marks").string(), &scratch);

  const std::string samples_path = scratch.Add((dir / ".nvml_power.csv.partial").string());
  std::vector<AppWindow> added;
  std::vector<int> runs;
  std::set<std::string> mark_names;
  bool any_marked = false, any_unmarked = false;
  const int64_t started_us = NowUs();
  {
    Sampler sampler(meter, samples_path, o.sample_ms);
    sampler.WaitForFirstSample();
    SignalNote signals;
    for (int k = 0; k < o.repeat; ++k) {
      const int run = first_run + k;
      if (progress) progress(fmt::format("[{}/{}] {}: idle {:.1f} s, then run {}", k + 1, o.repeat, o.name,
                                         o.gap_ms * 1e-3, run));
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.gap_ms));
      const std::string marks_path = scratch.Add((dir / "marks" / fmt::format("{}.run{}.txt", o.name, run)).string());
      { std::ofstream touch(marks_path, std::ios::binary | std::ios::trunc); }
      const int64_t start_us = NowUs();
      const std::string failed = RunProgram(o.command, {"WATTCAL_MARKS=" + marks_path});
      const int64_t end_us = NowUs();
      if (g_signal != 0) throw std::runtime_error(fmt::format("interrupted (signal {}): nothing was written", g_signal.load()));
      if (!failed.empty()) {
        throw std::runtime_error(fmt::format("run {} of '{}': the command {}; nothing was written", run, o.name, failed));
      }
      std::vector<AppWindow> windows = RunWindows(o, marks_path, run, start_us, end_us, &mark_names);
      (windows.front().mark.empty() ? any_unmarked : any_marked) = true;
      if (any_marked && any_unmarked) {
        throw std::runtime_error(fmt::format("run {} of '{}' {} while an earlier run {}: every run must mark its "
                                             "windows the same way",
                                             run, o.name, windows.front().mark.empty() ? "marked no window" : "marked windows",
                                             windows.front().mark.empty() ? "did" : "did not"));
      }
      double shortest_s = 1e300;
      for (const AppWindow& w : windows) shortest_s = std::min(shortest_s, (w.window.end_us - w.window.start_us) * 1e-6);
      if (progress) {
        progress(fmt::format("[{}/{}] {}: run {} took {:.2f} s, {} window{}{}", k + 1, o.repeat, o.name, run,
                             (end_us - start_us) * 1e-6, windows.size(), windows.size() == 1 ? "" : "s",
                             shortest_s < 0.6 ? fmt::format(" (the shortest {:.0f} ms: windows under 0.6 s are measured "
                                                            "over their second half only; mark a second or more)",
                                                            shortest_s * 1e3)
                                              : std::string()));
      }
      added.insert(added.end(), windows.begin(), windows.end());
      runs.push_back(run);
    }
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(2.0 * o.sample_ms));
    sampler.Stop();
  }

  // The counters run.
  std::string nvtx_range;
  const std::string export_final = (dir / "ncu" / (o.name + ".csv")).string();
  std::string export_partial;
  if (o.counters) {
    nvtx_range = o.nvtx_range;
    if (nvtx_range.empty() && !o.all_kernels && any_marked) nvtx_range = *mark_names.begin();
    MakeDirectory((dir / "ncu").string(), &scratch);
    export_partial = scratch.Add((dir / "ncu" / ("." + o.name + ".csv.partial")).string());
    const std::string marks_scratch = scratch.Add((dir / ".ncu_marks.partial").string());
    RunAppCounters(o, nvtx_range, export_partial, marks_scratch, progress);
  }

  // Commit: power log, counters, windows, capture.json.
  const std::string power_final = (dir / "nvml_power.csv").string();
  if (!existing.power_header.empty()) {
    AppendPowerLog(samples_path, power_final, existing.power_header);
    fs::remove(samples_path);
  } else {
    fs::rename(samples_path, power_final);
  }
  if (o.counters) fs::rename(export_partial, export_final);
  std::vector<AppWindow> all = existing.windows;
  all.insert(all.end(), added.begin(), added.end());
  WriteTextFile((dir / "windows.csv").string(), AppWindowsCsv(all));
  nlohmann::json j = existing.exists ? existing.json : CaptureJson(gpu, nlohmann::json::object());
  if (!existing.exists) {
    j.erase("options");
    j["kind"] = "apps";
    j["recordings"] = nlohmann::json::array();
  }
  if (o.counters && !gpu.ncu_version.empty()) j["versions"]["ncu"] = gpu.ncu_version;
  j["recordings"].push_back(RecordingJson(o, runs, added.size(), any_marked, nvtx_range, started_us));
  WriteTextFile((dir / "capture.json").string(), j.dump(2) + "\n");
  scratch.Keep();
  // The scratch files that stay scratch: the profiled run's marks.
  std::error_code ec;
  fs::remove(dir / ".ncu_marks.partial", ec);

  std::vector<WindowRecord> records;
  for (const AppWindow& w : added) records.push_back(w.window);
  return records;
}

}  // namespace wattcal::capture
