#include "ingest/internal/capture_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>

#include "ingest/kernel_energy.h"
#include "util/errors.h"
#include "util/json_file.h"

namespace wattcal {
namespace capture_internal {
namespace {

namespace fs = std::filesystem;

// j[key] when it is a string, else "".
std::string StringField(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// What capture.json says of the suite's data: the share of toggling bits, % (50 random, 0
// zeros; -1 for an applications recording), and why it is not known when it is not.
struct SuiteData {
  int pct = 50;
  std::string unknown_because;  // "" when capture.json says
};

SuiteData ReadSuiteData(const std::string& dir) {
  const std::string path = (fs::path(dir) / "capture.json").string();
  const nlohmann::json j = ReadCaptureJson(dir);
  SuiteData d;
  if (j.is_null()) {
    d.unknown_because = fmt::format("{} has no capture.json", dir);
    return d;
  }
  if (j.contains("kind")) {
    d.pct = -1;
    return d;
  }
  if (StringField(j, "format") != "wattcal-capture") {
    d.unknown_because = fmt::format("{} is not wattcal-capture's (its format is '{}')", path,
                                    StringField(j, "format"));
    return d;
  }
  const auto options = j.find("options");
  if (options == j.end() || !options->is_object() || !options->contains("data")) return d;
  const nlohmann::json& data = (*options)["data"];
  if (data == "zeros") {
    d.pct = 0;
  } else if (data != "random") {
    throw InputError(path, 0, "options.data",
                     fmt::format("{} is not a data wattcal-capture runs (random or zeros): the "
                                 "toggle sweep's windows cannot be told apart",
                                 data.dump()));
  }
  return d;
}

}  // namespace

nlohmann::json ReadCaptureJson(const std::string& dir) {
  const std::string path = (fs::path(dir) / "capture.json").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return nlohmann::json();
  const nlohmann::json j = ReadJsonFile(path, "the capture's record (capture.json)");
  if (!j.is_object()) {
    throw InputError(path, 1, "",
                     fmt::format("expected a JSON object (wattcal-capture's record of the "
                                 "recording), got {}",
                                 j.type_name()));
  }
  return j;
}

void FlagToggleSweep(const std::string& dir, const std::string& windows_path,
                     std::vector<CaptureWindow>* windows, size_t first,
                     std::vector<std::string>* warnings) {
  static const std::regex kToggle("toggle_.+_([0-9]{3})(_b[0-9]+)?");
  std::vector<size_t> sweep;
  for (size_t i = first; i < windows->size(); ++i) {
    if (std::regex_match((*windows)[i].workload, kToggle)) sweep.push_back(i);
  }
  if (sweep.empty()) return;
  const SuiteData data = ReadSuiteData(dir);
  if (data.pct < 0) return;
  if (!data.unknown_because.empty()) {
    warnings->push_back(fmt::format(
        "{}: {} windows are the toggle sweep's, but {}: which data the suite's other benchmarks "
        "ran is unknown, and they are flagged against wattcal-capture's default, random data "
        "(50%); if the suite ran with --data zeros, restore its capture.json",
        windows_path, sweep.size(), data.unknown_because));
  }
  std::vector<std::string> names;
  for (size_t i : sweep) {
    CaptureWindow& w = (*windows)[i];
    std::smatch m;
    std::regex_match(w.workload, m, kToggle);
    if (std::stoi(m[1].str()) == data.pct) continue;
    w.energy.flags |= kFlagDataToggle;
    names.push_back(w.workload);
  }
  if (names.empty()) return;
  warnings->push_back(
      fmt::format("{}: {} windows of the toggle sweep run data that toggle another share of bits "
                  "than the suite's "
                  "other benchmarks ({}%): flagged data_toggle (left out of training; no counter "
                  "sees data toggling, so "
                  "the same utilisations come with different power): {}",
                  windows_path, names.size(), data.pct, fmt::join(names, ", ")));
}

void FlagIdleOverBenchmarks(const std::vector<KernelWindow>& benchmarks,
                            const std::string& windows_path, const std::string& idle_path,
                            const std::vector<KernelWindow>& idle,
                            std::vector<CaptureWindow>* windows, size_t first,
                            std::vector<std::string>* warnings) {
  for (size_t k = 0; k < idle.size(); ++k) {
    const KernelWindow& w = idle[k];
    for (const KernelWindow& b : benchmarks) {
      if (!(b.start_s < w.end_s && b.end_s > w.start_s)) continue;
      (*windows)[first + k].energy.flags |= kFlagOverlap;
      warnings->push_back(fmt::format(
          "{}:{}: idle window {} [{:.6f}, {:.6f}] s overlaps the benchmark window {}:{} ({}, "
          "[{:.6f}, {:.6f}] s): its power is not the idle GPU's (flagged overlap)",
          idle_path, w.line, w.kernel, w.start_s, w.end_s, windows_path, b.line, b.kernel,
          b.start_s, b.end_s));
      break;
    }
  }
}

void RefuseMixedMarks(const std::vector<KernelWindow>& windows, const std::string& windows_path) {
  // workload -> its first marked and its first unmarked window
  std::map<std::string, std::pair<const KernelWindow*, const KernelWindow*>> first;
  for (const KernelWindow& w : windows) {
    auto& [marked, unmarked] = first[w.kernel];
    const KernelWindow*& slot = w.mark.empty() ? unmarked : marked;
    if (slot == nullptr) slot = &w;
    if (marked == nullptr || unmarked == nullptr) continue;
    const KernelWindow& earlier = marked->line < unmarked->line ? *marked : *unmarked;
    auto kind = [](const KernelWindow& x) {
      return x.mark.empty() ? std::string("unmarked: the whole run, start-up included")
                            : fmt::format("marked '{}'", x.mark);
    };
    throw InputError(
        windows_path, w.line, "mark",
        fmt::format("workload '{}' mixes a marked and an unmarked recording: line {} is {}, this "
                    "one is {}; their windows measure different work and would be averaged into "
                    "one power (record them under different names, wattcal-capture --app NAME, "
                    "or remove one recording's rows)",
                    w.kernel, earlier.line, kind(earlier), kind(w)));
  }
}

namespace {

// The metrics component c reads.
std::vector<std::string> MetricsOf(const ComponentCounters& c) {
  std::vector<std::string> m;
  for (const auto* list :
       {&c.thread_metrics, &c.warp_metrics, &c.byte_metrics, &c.access_metrics}) {
    m.insert(m.end(), list->begin(), list->end());
  }
  return m;
}

// Component j (whose metrics `absent` some exports lack, others have): the windows without it
// count 0, flagged metric_absent, named in one warning.
void CountAbsentAsZero(size_t j, const std::vector<std::string>& absent,
                       const OptionalMetrics& metrics, CaptureReport* r) {
  std::vector<std::string> exports, workloads;
  int flagged = 0;
  for (const std::string& m : absent) {
    for (const std::string& e : metrics.absent.at(m)) {
      if (std::find(exports.begin(), exports.end(), e) == exports.end()) exports.push_back(e);
    }
  }
  for (CaptureWindow& w : r->windows) {
    if (j >= w.utilisations.size() || !std::isnan(w.utilisations[j])) continue;
    w.utilisations[j] = 0.0;
    w.energy.flags |= kFlagMetricAbsent;
    ++flagged;
    if (std::find(workloads.begin(), workloads.end(), w.workload) == workloads.end())
      workloads.push_back(w.workload);
  }
  const std::string& c = r->gpu.components[j].component;
  r->warnings.push_back(fmt::format(
      "component {}: its metric {} is absent from {} but other exports have it: the {} windows "
      "of {} count {} as 0, flagged metric_absent (left out of training; their {} utilisation "
      "is unknown): profile them with the metric",
      c, fmt::join(absent, ", "), fmt::join(exports, ", "), flagged, fmt::join(workloads, ", "), c,
      c));
}

}  // namespace

void ResolveOptionalMetrics(const OptionalMetrics& metrics, CaptureReport* r) {
  if (metrics.absent.empty()) return;
  std::vector<std::string> left_out;
  std::vector<size_t> keep;
  for (size_t j = 0; j < r->gpu.components.size(); ++j) {
    const ComponentCounters& c = r->gpu.components[j];
    std::string reason;
    std::vector<std::string> partly;  // absent from some exports only
    for (const std::string& m : MetricsOf(c)) {
      const auto it = metrics.absent.find(m);
      if (!c.optional || it == metrics.absent.end()) continue;
      if (metrics.present.count(m)) {
        partly.push_back(m);
      } else if (reason.empty()) {
        reason = fmt::format("{} (first absent from {})", m, it->second.front());
      }
    }
    if (reason.empty()) {
      if (!partly.empty()) CountAbsentAsZero(j, partly, metrics, r);
      keep.push_back(j);
      continue;
    }
    left_out.push_back(c.component);
    r->warnings.push_back(
        fmt::format("component {} left out: its metric {} was not collected (an export made before "
                    "the component was "
                    "added, or a metric this GPU or ncu lacks); the model will have no {} term",
                    c.component, reason, c.component));
  }
  for (CaptureWindow& w : r->windows) {
    if (w.utilisations.empty()) continue;
    std::vector<double> kept;
    for (size_t j : keep) kept.push_back(w.utilisations[j]);
    w.utilisations = kept;
  }
  r->gpu = r->gpu.Without(left_out);
}

}  // namespace capture_internal
}  // namespace wattcal
