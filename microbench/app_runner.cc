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
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "ingest/counters.h"
#include "sampler.h"
#include "ingest/power_log.h"
#include "recording_guard.h"
#include "util/errors.h"
#include "wall_clock.h"

extern char** environ;

namespace wattcal::capture {

namespace {

namespace fs = std::filesystem;

bool IsWord(const std::string& s) {
  if (s.empty() || s.size() > 200) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
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

// Runs `argv` (PATH searched) with `env_add` ("NAME=value") added to the environment; returns
// its wait status text ("" = exited 0). Throws when it cannot start, and Interrupted when a
// signal was noted before or while it ran.
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
  InterruptNote::Check();
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data());
  if (rc != 0) {
    throw std::runtime_error(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  }
  InterruptNote::RunningChild(pid);  // a SIGTERM or SIGHUP sent to wattcal-capture reaches it
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(fmt::format("waiting for '{}': {}", argv[0], std::strerror(errno)));
  }
  InterruptNote::RunningChild(0);
  InterruptNote::Check();  // the program stopped because of it: not the program's failure
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

// Reads an existing power log through wattcal-ingest's reader (InputError FILE:LINE).
void CheckPowerLog(const std::string& path) {
  PowerLogReader reader(path, PowerLogOptions());
  wattcal::PowerSample sample;
  while (reader.Next(&sample)) {
  }
}

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
  // What is there is read as its readers would before anything is added to it: new samples glued
  // to a line cut short, or a garbled cell rewritten, would leave a capture no reader takes.
  try {
    if (fs::is_regular_file(dir / "windows.csv")) e.windows = ReadAppWindows((dir / "windows.csv").string());
    if (fs::is_regular_file(dir / "nvml_power.csv")) {
      e.power_header = FirstLine((dir / "nvml_power.csv").string());
      CheckPowerLog((dir / "nvml_power.csv").string());
    }
  } catch (const InputError& error) {
    throw InputError(error.file(), error.line(), error.field(),
                     error.message() + ": the capture's own file is damaged, so nothing is added to it (repair "
                                       "the file, or record into another --out)");
  }
  if (o.counters && fs::exists(dir / "ncu" / (o.name + ".csv"))) {
    throw std::runtime_error(fmt::format("--counters: {}/ncu/{}.csv exists already (the counters of an earlier "
                                         "recording of '{}'): record under another --app name, or without "
                                         "--counters to add power windows only",
                                         o.out_dir, o.name, o.name));
  }
  return e;
}

// A marks file goes with the failed recording it belongs to (--out is left as it was): an error
// that names one says so, and quotes the line it names, so that it stays true once the file is
// gone.
std::string MarksFileGone(const std::string& marks_path, int64_t line) {
  std::string quoted;
  std::ifstream in(marks_path, std::ios::binary);
  std::string text;
  for (int64_t n = 1; line > 0 && std::getline(in, text); ++n) {
    if (n < line) continue;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    quoted = fmt::format("; its line {} read '{}'", line, text.substr(0, 300));
    break;
  }
  return fmt::format(" [{} is not kept: a failed recording leaves --out as it was{}]",
                     fs::path(marks_path).filename().string(), quoted);
}

// The marked windows of one run, each checked as windows.csv will hold it: of a whole number of
// microseconds (1 us or longer), inside the run, not overlapping another.
std::vector<AppWindow> MarkedWindows(const AppCaptureOptions& o, const std::string& marks_path, int run,
                                     const std::vector<MarkedWindow>& marks, int64_t start_us, int64_t end_us) {
  std::vector<AppWindow> out;
  std::vector<const MarkedWindow*> from;
  for (const MarkedWindow& m : marks) {
    if (!o.window.empty() && m.name != o.window) continue;
    if (m.end_ns - m.begin_ns < 1000) {
      throw InputError(marks_path, m.end_line, "",
                       fmt::format("the window '{}' begun on line {} lasts {} ns: under 1 us, which windows.csv "
                                   "cannot hold (its times are whole microseconds) and which has nothing to "
                                   "measure; mark a longer window",
                                   m.name, m.begin_line, m.end_ns - m.begin_ns));
    }
    AppWindow w;
    w.window.kernel = o.name;
    w.window.start_us = m.begin_ns / 1000;
    w.window.end_us = m.end_ns / 1000;
    w.run = run;
    w.mark = m.name;
    w.steps = m.steps;
    if (w.window.start_us < start_us || w.window.end_us > end_us) {
      throw InputError(marks_path, w.window.start_us < start_us ? m.begin_line : m.end_line, "",
                       fmt::format("the window '{}' lies outside the run ({} to {} us since the epoch): marks "
                                   "must carry CLOCK_REALTIME nanoseconds (time.time_ns(), clock_gettime)",
                                   m.name, start_us, end_us));
    }
    out.push_back(w);
    from.push_back(&m);
  }
  const auto [a, b] = FirstOverlap(out);
  if (b != std::string::npos) {
    throw InputError(marks_path, from[b]->begin_line, "",
                     fmt::format("the window '{}' begins ({} ns) before the window '{}' of lines {}-{} ends ({} "
                                 "ns): marked windows must not overlap (did the clock go back, or do two "
                                 "processes mark windows?)",
                                 from[b]->name, from[b]->begin_ns, from[a]->name, from[a]->begin_line,
                                 from[a]->end_line, from[a]->end_ns));
  }
  return out;
}

// The windows of one run: its marks (filtered by --window), else the run itself.
std::vector<AppWindow> RunWindows(const AppCaptureOptions& o, const std::string& marks_path, int run,
                                  int64_t start_us, int64_t end_us, std::set<std::string>* mark_names) {
  try {
    const std::vector<MarkedWindow> marks = ReadMarks(marks_path);
    std::set<std::string> names;
    for (const MarkedWindow& m : marks) names.insert(m.name);
    if (marks.empty()) {
      AppWindow w;
      w.window.kernel = o.name;
      w.window.start_us = start_us;
      w.window.end_us = end_us;
      w.run = run;
      return {w};
    }
    if (o.window.empty() && names.size() > 1) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
      throw std::runtime_error(fmt::format("{}: the program marks {} different windows ({}): one --app records "
                                           "one workload; choose one with --window NAME (and record the others "
                                           "with another --app ... --window){}",
                                           marks_path, names.size(), list, MarksFileGone(marks_path, 0)));
    }
    std::vector<AppWindow> out = MarkedWindows(o, marks_path, run, marks, start_us, end_us);
    if (out.empty()) {
      throw std::runtime_error(fmt::format("{}: no window named '{}' (--window); the program marked {}{}",
                                           marks_path, o.window, *names.begin(), MarksFileGone(marks_path, 0)));
    }
    for (const AppWindow& w : out) mark_names->insert(w.mark);
    return out;
  } catch (const InputError& e) {
    throw InputError(e.file(), e.line(), e.field(), e.message() + MarksFileGone(marks_path, e.line()));
  }
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

// A capture's recordings all have the same fields or none: a recording with --fields into a capture
// without gpm_fields.csv (or the reverse, or other metrics) would leave windows without field
// samples.
void CheckFieldsMatch(const AppCaptureOptions& o, const fs::path& dir) {
  const std::string fields_log = (dir / "gpm_fields.csv").string();
  const bool has = fs::exists(fields_log);
  const bool had_power = fs::exists(dir / "nvml_power.csv");
  if (!had_power) return;  // the first recording
  std::string header = FieldLogHeader(o.gpm_metric_names);
  header.pop_back();
  if (has && o.gpm_metric_ids.empty()) {
    throw std::runtime_error(fmt::format("--out {}: its recordings have GPM fields (gpm_fields.csv): record this one "
                                         "with --fields gpm too, or give another --out",
                                         o.out_dir));
  }
  if (!has && !o.gpm_metric_ids.empty()) {
    throw std::runtime_error(fmt::format("--out {}: its recordings have no GPM fields: --fields would leave their "
                                         "windows without field samples; give another --out",
                                         o.out_dir));
  }
  if (has && FirstLine(fields_log) != header) {
    throw std::runtime_error(fmt::format("{}: its columns ({}) are not the fields asked for ({}): give another --out",
                                         fields_log, FirstLine(fields_log), header));
  }
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

// The export's launches, counted (the export may hold 10^5: read one at a time, keeping only the
// required metrics). A required metric with no value in any launch is refused, as wattcal-ingest
// and wattcal-predict would refuse it, before the export is kept: kept, it would also block
// recording the workload's counters again.
int64_t CheckExportMetrics(const AppCaptureOptions& o, const std::string& export_path) {
  const std::set<std::string> required(o.required_metrics.begin(), o.required_metrics.end());
  std::set<std::string> with_value;
  int64_t launches = 0, first_line = 0;
  ForEachCounterLaunch(export_path, &required, [&](CounterLaunch&& l) {
    if (launches++ == 0) first_line = l.line;
    for (const auto& entry : l.metrics) with_value.insert(entry.first);
  });
  if (launches == 0) throw InputError(export_path, 0, "", "no profiled kernel launches");
  std::string absent;
  for (const std::string& m : o.required_metrics) {
    if (!with_value.count(m)) absent += (absent.empty() ? "" : ", ") + m;
  }
  if (!absent.empty()) {
    throw std::runtime_error(
        fmt::format("--counters: ncu gave no value for {} in any of the {} launches it profiled (the first on line "
                    "{} of its export): wattcal-ingest and wattcal-predict would refuse the export, so it is not "
                    "kept and the recording can be made again (does this GPU or ncu version lack the metric? A "
                    "GPU description whose component is optional lets its metrics be absent)",
                    absent, launches, first_line));
  }
  return launches;
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
  const int64_t launches = CheckExportMetrics(o, export_path);
  if (progress) progress(fmt::format("counters: {} kernel launches profiled", launches));
}

nlohmann::json RecordingJson(const AppCaptureOptions& o, const std::vector<int>& runs, size_t windows, bool marked,
                             const std::string& nvtx_range, int64_t started_us) {
  return {{"app", o.name},          {"command", o.command},       {"repeat", o.repeat},
          {"runs", runs},           {"windows", windows},         {"marked", marked},
          {"window", o.window},     {"gap_ms", o.gap_ms},         {"sample_ms", o.sample_ms},
          {"counters", o.counters}, {"nvtx_range", nvtx_range},   {"all_kernels", o.all_kernels},
          {"metrics", o.metrics},   {"started_us", started_us},
          {"fields", o.gpm_metric_names.empty() ? nlohmann::json(nullptr) : nlohmann::json("gpm")},
          {"field_log", o.gpm_metric_names.empty() ? "" : "gpm_fields.csv"},
          {"gpm_metrics", o.gpm_metric_names}};
}

// The runs of one recording and their windows, each checked before windows.csv holds it.
struct Recorded {
  std::vector<AppWindow> windows;
  std::vector<int> runs;
  bool marked = false;
  std::string mark_name;     // the marked windows' name
  std::string samples_path;  // the runs' power log, scratch until the commit
  std::string fields_path;   // their field log (--fields), scratch until the commit; "" = none
  int64_t started_us = 0;
};

// " (the shortest 120 ms: ...)" when a window is shorter than ingest measures whole.
std::string ShortWindowNote(const std::vector<AppWindow>& windows) {
  double shortest_s = 1e300;
  for (const AppWindow& w : windows) shortest_s = std::min(shortest_s, (w.window.end_us - w.window.start_us) * 1e-6);
  if (shortest_s >= 0.6) return "";
  return fmt::format(" (the shortest {:.0f} ms: windows under 0.6 s are measured over their second half only; mark a "
                     "second or more)",
                     shortest_s * 1e3);
}

// A workload is marked the same way in every run of every recording, and its windows do not
// overlap those recorded before (a clock that went back).
void CheckAgainstEarlier(const AppCaptureOptions& o, const ExistingCapture& existing, const Recorded& r) {
  std::vector<AppWindow> same;
  for (const AppWindow& w : existing.windows) {
    if (w.window.kernel != o.name) continue;
    if (w.mark.empty() == r.marked) {
      throw std::runtime_error(fmt::format(
          "'{}': this recording {} windows, but {}/windows.csv holds runs of '{}' that {}: one workload is "
          "measured one way (its marked windows, or whole runs); record this one under another --app name",
          o.name, r.marked ? "marked" : "marked no", o.out_dir, o.name, w.mark.empty() ? "marked none" : "marked theirs"));
    }
    same.push_back(w);
  }
  const size_t earlier = same.size();
  same.insert(same.end(), r.windows.begin(), r.windows.end());
  const auto [a, b] = FirstOverlap(same);
  if (b != std::string::npos) {
    const AppWindow& x = same[std::max(a, b)];
    const AppWindow& y = same[std::min(a, b)];
    throw std::runtime_error(fmt::format("run {} of '{}': its window {} to {} us overlaps {} {} to {} us (run {}): "
                                         "did the clock go back?",
                                         x.run, o.name, x.window.start_us, x.window.end_us,
                                         std::min(a, b) < earlier ? "the earlier recording's window" : "the window",
                                         y.window.start_us, y.window.end_us, y.run));
  }
}

Recorded RecordRuns(const AppCaptureOptions& o, const ExistingCapture& existing, const fs::path& dir,
                    PowerMeter& meter, const ProgressFn& progress, Scratch* scratch) {
  Recorded r;
  // Run numbers continue those of earlier recordings of this workload.
  int first_run = 1;
  for (const AppWindow& w : existing.windows) {
    if (w.window.kernel == o.name) first_run = std::max(first_run, w.run + 1);
  }
  while (fs::exists(dir / "marks" / fmt::format("{}.run{}.txt", o.name, first_run))) ++first_run;
  MakeDirectory((dir / "marks").string(), scratch);
  r.samples_path = scratch->Add((dir / ".nvml_power.csv.partial").string());
  std::set<std::string> mark_names;
  bool any_unmarked = false;
  FieldRecording fields;
  if (!o.gpm_metric_ids.empty()) {
    r.fields_path = scratch->Add((dir / ".gpm_fields.csv.partial").string());
    fields = {r.fields_path, o.gpm_metric_ids, o.gpm_metric_names};
  }
  r.started_us = NowUs();
  Sampler sampler(meter, r.samples_path, o.sample_ms, fields);
  sampler.WaitForFirstSample();
  for (int k = 0; k < o.repeat; ++k) {
    const int run = first_run + k;
    if (progress) progress(fmt::format("[{}/{}] {}: idle {:.1f} s, then run {}", k + 1, o.repeat, o.name,
                                       o.gap_ms * 1e-3, run));
    InterruptNote::SleepMs(o.gap_ms);
    const std::string marks_path = scratch->Add((dir / "marks" / fmt::format("{}.run{}.txt", o.name, run)).string());
    { std::ofstream touch(marks_path, std::ios::binary | std::ios::trunc); }
    const int64_t start_us = NowUs();
    const std::string failed = RunProgram(o.command, {"WATTCAL_MARKS=" + marks_path});
    const int64_t end_us = NowUs();
    if (!failed.empty()) {
      throw std::runtime_error(fmt::format("run {} of '{}': the command {}; nothing was written", run, o.name, failed));
    }
    const std::vector<AppWindow> windows = RunWindows(o, marks_path, run, start_us, end_us, &mark_names);
    (windows.front().mark.empty() ? any_unmarked : r.marked) = true;
    if (r.marked && any_unmarked) {
      throw std::runtime_error(fmt::format("run {} of '{}' {} while an earlier run {}: every run must mark its "
                                           "windows the same way",
                                           run, o.name, windows.front().mark.empty() ? "marked no window" : "marked windows",
                                           windows.front().mark.empty() ? "did" : "did not"));
    }
    for (const AppWindow& w : windows) {
      const std::string problem = AppWindowProblem(w);  // what RunWindows checked, once more as written
      if (!problem.empty()) throw std::runtime_error(fmt::format("run {} of '{}': {}", run, o.name, problem));
    }
    if (progress) {
      progress(fmt::format("[{}/{}] {}: run {} took {:.2f} s, {} window{}{}", k + 1, o.repeat, o.name, run,
                           (end_us - start_us) * 1e-6, windows.size(), windows.size() == 1 ? "" : "s",
                           ShortWindowNote(windows)));
    }
    r.windows.insert(r.windows.end(), windows.begin(), windows.end());
    r.runs.push_back(run);
  }
  CheckAgainstEarlier(o, existing, r);
  InterruptNote::SleepMs(2.0 * o.sample_ms);
  sampler.Stop();
  r.mark_name = mark_names.empty() ? "" : *mark_names.begin();
  return r;
}

// The commit: the power log, the counters, windows.csv, capture.json, with SIGINT, SIGTERM and
// SIGHUP held; a step that fails undoes those before it, so that --out stays as it was.
void Commit(const fs::path& dir, const ExistingCapture& existing, const std::string& samples_path,
            const std::string& fields_path, const std::string& export_final, const std::string& export_partial, const std::string& windows_csv,
            const std::string& capture_json) {
  SignalsHeld held;
  std::vector<std::function<void()>> undo;
  try {
    const std::string power_final = (dir / "nvml_power.csv").string();
    if (!existing.power_header.empty()) {
      const uintmax_t size = fs::file_size(power_final);
      undo.push_back([=] { fs::resize_file(power_final, size); });
      AppendPowerLog(samples_path, power_final, existing.power_header);
    } else {
      fs::rename(samples_path, power_final);
      undo.push_back([=] { fs::rename(power_final, samples_path); });
    }
    if (!fields_path.empty()) {  // the field log, as the power log
      const std::string fields_final = (dir / "gpm_fields.csv").string();
      if (fs::exists(fields_final)) {
        const uintmax_t size = fs::file_size(fields_final);
        undo.push_back([=] { fs::resize_file(fields_final, size); });
        AppendPowerLog(fields_path, fields_final, FirstLine(fields_final));
      } else {
        fs::rename(fields_path, fields_final);
        undo.push_back([=] { fs::rename(fields_final, fields_path); });
      }
    }
    if (!export_final.empty()) {
      fs::rename(export_partial, export_final);
      undo.push_back([=] { fs::rename(export_final, export_partial); });
    }
    for (const auto& [name, text] : {std::make_pair("windows.csv", &windows_csv),
                                     std::make_pair("capture.json", &capture_json)}) {
      const std::string path = (dir / name).string();
      const bool had = fs::exists(path);
      const std::string before = had ? ReadText(path) : "";
      WriteTextFile(path, *text);
      undo.push_back([=] { had ? WriteTextFile(path, before) : void(fs::remove(path)); });
    }
  } catch (...) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      try {
        (*it)();
      } catch (...) {  // undo what can be undone
      }
    }
    throw;
  }
  std::error_code ec;
  fs::remove(samples_path, ec);  // appended
  if (!fields_path.empty()) fs::remove(fields_path, ec);
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
  if (!window.empty() && !IsMarkName(window)) {
    return bad(fmt::format("--window '{}': a mark's name is {}", window, kMarkNameRule));
  }
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

std::vector<WindowRecord> RunAppCapture(const AppCaptureOptions& o, const CaptureInfo& gpu, PowerMeter& meter,
                                        const ProgressFn& progress) {
  std::string error;
  if (!o.Check(&error)) throw std::runtime_error(error);
  // From here SIGINT, SIGTERM and SIGHUP stop the recording at its next step, and the scratch
  // files go: --out is left as it was, in every phase.
  InterruptNote interrupts;
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && !fs::is_directory(o.out_dir, ec)) {
    throw std::runtime_error(fmt::format("--out {}: not a directory", o.out_dir));
  }
  Scratch scratch;
  MakeDirectory(o.out_dir, &scratch);
  DirectoryLock lock;  // one recording into a directory at a time
  if (!lock.Acquire(o.out_dir, &error)) {
    scratch.Keep();  // a directory made here is the other recording's now
    throw std::runtime_error(error);
  }
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
  const fs::path dir = fs::absolute(o.out_dir);
  CheckFieldsMatch(o, dir);
  const Recorded recorded = RecordRuns(o, existing, dir, meter, progress, &scratch);

  // The counters run.
  std::string nvtx_range;
  std::string export_partial;
  if (o.counters) {
    nvtx_range = o.nvtx_range;
    if (nvtx_range.empty() && !o.all_kernels && recorded.marked) nvtx_range = recorded.mark_name;
    MakeDirectory((dir / "ncu").string(), &scratch);
    export_partial = scratch.Add((dir / "ncu" / ("." + o.name + ".csv.partial")).string());
    const std::string marks_scratch = scratch.Add((dir / ".ncu_marks.partial").string());
    RunAppCounters(o, nvtx_range, export_partial, marks_scratch, progress);
  }
  InterruptNote::Check();

  nlohmann::json j = existing.exists ? existing.json : CaptureJson(gpu, nlohmann::json::object());
  if (!existing.exists) {
    j.erase("options");
    j["kind"] = "apps";
    j["recordings"] = nlohmann::json::array();
  }
  if (o.counters && !gpu.ncu_version.empty()) j["versions"]["ncu"] = gpu.ncu_version;
  j["recordings"].push_back(
      RecordingJson(o, recorded.runs, recorded.windows.size(), recorded.marked, nvtx_range, recorded.started_us));
  std::vector<AppWindow> all = existing.windows;
  all.insert(all.end(), recorded.windows.begin(), recorded.windows.end());
  Commit(dir, existing, recorded.samples_path, recorded.fields_path, export_partial.empty() ? "" : (dir / "ncu" / (o.name + ".csv")).string(),
         export_partial, AppWindowsCsv(all), j.dump(2) + "\n");
  scratch.Keep();
  // The scratch files that stay scratch: the profiled run's marks.
  fs::remove(dir / ".ncu_marks.partial", ec);

  std::vector<WindowRecord> records;
  for (const AppWindow& w : recorded.windows) records.push_back(w.window);
  return records;
}

}  // namespace wattcal::capture
