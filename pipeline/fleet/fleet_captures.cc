#include "fleet/fleet_captures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "ingest/kernel_windows.h"
#include "io/field_set.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/output.h"

namespace wattcal {

namespace fs = std::filesystem;

const char* FleetStatusName(FleetStatus status) {
  switch (status) {
    case FleetStatus::kOk: return "ok";
    case FleetStatus::kFailed: return "failed";
    case FleetStatus::kOtherModel: return "other_model";
    case FleetStatus::kEmpty: return "empty";
    case FleetStatus::kIncomplete: return "incomplete";
    case FleetStatus::kDuplicate: return "duplicate";
  }
  return "failed";
}

std::vector<FleetDescription> ReadFleetDescriptions(const std::vector<std::string>& paths) {
  std::vector<FleetDescription> out;
  for (const std::string& p : paths) {
    FleetDescription d;
    d.path = p;
    if (IsFieldSetFile(p)) {
      d.fields = ReadFieldSet(p);
      d.gpu.name = FieldSetGpuName(*d.fields);
      d.gpu.path = p;
    } else {
      d.gpu = ReadGpuDescription(p);
    }
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

// One capture directory as read before ingesting it.
struct ScannedCapture {
  std::string dir;
  size_t given = 0;  // position among the --capture directories
  CaptureGpu gpu;
  std::set<std::string> benchmarks;
  int windows = 0;
  bool has_counters = false;
  int model = -1;
  FleetStatus status = FleetStatus::kOk;
  std::string message;
};

std::string Trimmed(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// A wattcal-capture directory whose suite did not reach its closing idle window: "" when complete
// (or not written by wattcal-capture), else why.
std::string DiedMidSuite(const std::string& dir, int windows, const std::string& last) {
  const std::string json = dir + "/capture.json";
  if (!fs::is_regular_file(json)) return "";
  const nlohmann::json j = ReadJsonFileOrDiscarded(json);
  if (!j.is_object() || j.value("format", std::string()) != "wattcal-capture") return "";
  const std::string idle = dir + "/idle_windows.csv";
  if (fs::is_regular_file(idle)) {
    for (const KernelWindow& w : ReadKernelWindows(idle)) {
      if (w.kernel == "idle_after") return "";
    }
  }
  return fmt::format(
      "the suite did not finish: {} has no idle_after window (wattcal-capture writes it after the "
      "last benchmark), so the task stopped after {} windows, the last '{}' (rerun the task)",
      idle, windows, last);
}

// The first of the capture's files whose last line has no end of line (a task killed while it
// wrote it), with why; "" when none.
std::string CutFile(const std::string& dir) {
  for (const char* name : {"windows.csv", "idle_windows.csv", "nvml_power.csv",
                           "nvidia_smi_power.csv", "ncu_raw.csv", "gpm_fields.csv"}) {
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    const uintmax_t size = fs::file_size(p, ec);
    if (ec || size == 0) continue;
    std::ifstream in(p, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(size) - 1);
    char last = '\n';
    in.get(last);
    if (last != '\n') {
      return fmt::format(
          "{}: its last line has no end of line: the file was cut (the task died "
          "while writing it?; rerun the task)",
          p.string());
    }
  }
  return "";
}

// Reads what the grouping needs; the status says what is wrong with it.
ScannedCapture Scan(const std::string& dir_in, size_t given,
                    const std::vector<FleetDescription>& descriptions) {
  ScannedCapture c;
  c.dir = Trimmed(dir_in);
  c.given = given;
  const std::string windows_csv = c.dir + "/windows.csv";
  if (!fs::is_directory(c.dir)) {
    c.status = FleetStatus::kEmpty;
    c.message =
        fs::exists(c.dir)
            ? c.dir + ": not a directory (a capture is the directory wattcal-capture --out wrote)"
            : c.dir + ": does not exist (the task that should have written it never did)";
    return c;
  }
  if (!fs::is_regular_file(windows_csv)) {
    c.status = FleetStatus::kEmpty;
    c.message = c.dir + ": no windows.csv (an empty capture directory: the task wrote nothing)";
    return c;
  }
  try {
    c.gpu = ReadCaptureGpu(c.dir);
    const std::vector<KernelWindow> windows = ReadKernelWindows(windows_csv);
    c.windows = static_cast<int>(windows.size());
    for (const KernelWindow& w : windows) c.benchmarks.insert(w.kernel);
    if (windows.empty()) {
      c.status = FleetStatus::kEmpty;
      c.message = windows_csv + ": no windows after the header";
      return c;
    }
    c.message = CutFile(c.dir);
    if (c.message.empty()) c.message = DiedMidSuite(c.dir, c.windows, windows.back().kernel);
    if (!c.message.empty()) {
      c.status = FleetStatus::kIncomplete;
      return c;
    }
  } catch (const InputError& e) {
    c.status = FleetStatus::kIncomplete;
    c.message = fmt::format("{} (a file cut short: did the task die mid-suite?)", e.what());
    return c;
  }
  c.has_counters = fs::is_regular_file(c.dir + "/ncu_raw.csv") || fs::is_directory(c.dir + "/ncu");
  for (size_t m = 0; m < descriptions.size() && c.model < 0; ++m) {
    if (!c.gpu.name.empty() && DescriptionDescribes(descriptions[m].gpu, c.gpu.name)) {
      c.model = static_cast<int>(m);
    }
  }
  if (c.model < 0) {
    std::vector<std::string> names;
    for (const FleetDescription& d : descriptions) names.push_back(d.gpu.name);
    c.status = FleetStatus::kOtherModel;
    c.message = c.gpu.name.empty()
                    ? c.dir +
                          ": no file names its GPU (capture.json, nvidia_smi_power.csv or "
                          "nvidia_smi_q.txt), so no description can be chosen"
                    : fmt::format(
                          "{}: recorded on {}, which none of the descriptions ({}) "
                          "describes: give its model's description with another --gpu",
                          c.dir, DescribeCaptureGpu(c.gpu), fmt::join(names, ", "));
  }
  return c;
}

bool Overlap(const std::set<std::string>& a, const std::set<std::string>& b, std::string* example) {
  for (const std::string& x : a) {
    if (b.count(x)) {
      *example = x;
      return true;
    }
  }
  return false;
}

FleetMember Rejected(const ScannedCapture& c) {
  FleetMember m;
  m.uuid = c.gpu.uuid;
  m.name = c.gpu.name;
  m.model = c.model;
  m.captures = {c.dir};
  m.has_counters = c.has_counters;
  m.windows = c.windows;
  m.benchmarks.assign(c.benchmarks.begin(), c.benchmarks.end());
  m.status = c.status;
  m.message = c.message;
  return m;
}

// The captures of one UUID: the most windows first (a tie: given first), each kept when its
// benchmarks overlap none kept before it, else a duplicate of the one it overlaps.
void GroupOneGpu(std::vector<ScannedCapture*> of_uuid, std::vector<FleetMember>* gpus,
                 std::vector<std::pair<size_t, FleetMember>>* rejected) {
  std::stable_sort(
      of_uuid.begin(), of_uuid.end(), [](const ScannedCapture* a, const ScannedCapture* b) {
        return a->windows != b->windows ? a->windows > b->windows : a->given < b->given;
      });
  std::vector<const ScannedCapture*> kept;
  for (ScannedCapture* c : of_uuid) {
    std::string example;
    const ScannedCapture* clash = nullptr;
    for (const ScannedCapture* k : kept) {
      if (Overlap(c->benchmarks, k->benchmarks, &example)) {
        clash = k;
        break;
      }
    }
    if (clash == nullptr) {
      kept.push_back(c);
      continue;
    }
    c->status = FleetStatus::kDuplicate;
    c->message = fmt::format(
        "{} and {} are both captures of {} with benchmarks in common ('{}'; a rerun?): {} is "
        "kept ({} windows, the most; a tie keeps the one given first), {} ({} windows) is left out",
        c->dir, clash->dir, c->gpu.uuid, example, clash->dir, clash->windows, c->dir, c->windows);
    rejected->emplace_back(c->given, Rejected(*c));
  }
  std::sort(kept.begin(), kept.end(),
            [](const ScannedCapture* a, const ScannedCapture* b) { return a->given < b->given; });
  FleetMember g;
  g.uuid = kept.front()->gpu.uuid;
  g.name = kept.front()->gpu.name;
  g.model = kept.front()->model;
  g.has_counters = true;
  for (const ScannedCapture* k : kept) {
    g.captures.push_back(k->dir);
    g.has_counters = g.has_counters && k->has_counters;
    g.windows += k->windows;
    g.benchmarks.insert(g.benchmarks.end(), k->benchmarks.begin(), k->benchmarks.end());
  }
  std::sort(g.benchmarks.begin(), g.benchmarks.end());
  gpus->push_back(std::move(g));
}

}  // namespace

std::string FleetMemberName(const FleetMember& m) {
  return m.uuid.empty() && !m.captures.empty() ? m.captures.front() : m.uuid;
}

std::vector<FleetMember> GroupCaptures(const std::vector<std::string>& dirs,
                                       const std::vector<FleetDescription>& descriptions) {
  std::vector<ScannedCapture> scanned;
  for (size_t i = 0; i < dirs.size(); ++i) scanned.push_back(Scan(dirs[i], i, descriptions));
  // One directory given twice (two spellings, a link, a list that repeats a line) is read once.
  std::map<std::pair<uint64_t, uint64_t>, const ScannedCapture*> seen;
  for (ScannedCapture& c : scanned) {
    FileIdentity id;
    if (c.status != FleetStatus::kOk || !GetFileIdentity(c.dir, &id)) continue;
    const ScannedCapture* first =
        seen.emplace(std::make_pair(id.device, id.inode), &c).first->second;
    if (first == &c) continue;
    c.status = FleetStatus::kDuplicate;
    c.message = fmt::format("{} is the same directory as {}, given twice: it is read once", c.dir,
                            first->dir);
  }
  std::vector<std::pair<size_t, FleetMember>> rejected;
  std::map<std::string, std::vector<ScannedCapture*>> by_uuid;  // "" -> one GPU per directory
  std::vector<FleetMember> gpus;
  for (ScannedCapture& c : scanned) {
    if (c.status != FleetStatus::kOk) {
      rejected.emplace_back(c.given, Rejected(c));
    } else if (c.gpu.uuid.empty()) {
      GroupOneGpu({&c}, &gpus, &rejected);
    } else {
      by_uuid[c.gpu.uuid].push_back(&c);
    }
  }
  for (auto& [uuid, captures] : by_uuid) GroupOneGpu(captures, &gpus, &rejected);
  std::sort(gpus.begin(), gpus.end(), [](const FleetMember& a, const FleetMember& b) {
    if (a.model != b.model) return a.model < b.model;
    if (a.uuid != b.uuid) return a.uuid < b.uuid;
    return a.captures.front() < b.captures.front();
  });
  std::stable_sort(rejected.begin(), rejected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [given, m] : rejected) gpus.push_back(std::move(m));
  return gpus;
}

}  // namespace wattcal
