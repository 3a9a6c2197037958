#include "ingest/internal/capture_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "util/errors.h"

namespace wattcal {
namespace capture_internal {

namespace fs = std::filesystem;

namespace {

// True when `suffix` is an explicit run number: "_run2", "-run10", ".run3" (a separator, "run",
// digits).
bool IsRunSuffix(const std::string& suffix) {
  if (suffix.size() < 5 || std::string("_-.").find(suffix[0]) == std::string::npos) return false;
  if (suffix.compare(1, 3, "run") != 0) return false;
  return std::all_of(suffix.begin() + 4, suffix.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

CaptureFiles FindFiles(const std::string& dir_in, bool require_power_log, bool require_counters) {
  CaptureFiles f;
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  f.dir = dir;
  if (!fs::is_directory(dir))
    throw InputError(dir, 0, "", "not a directory (give a capture directory)");
  auto has = [&](const char* name) { return fs::is_regular_file(fs::path(dir) / name); };
  if (!has("windows.csv")) {
    throw InputError(dir, 0, "",
                     "no windows.csv: not a capture directory (it needs windows.csv, "
                     "nvml_power.csv or nvidia_smi_power.csv, and ncu_raw.csv or ncu/)");
  }
  f.windows = dir + "/windows.csv";
  if (has("idle_windows.csv")) f.idle_windows = dir + "/idle_windows.csv";
  if (has("nvml_power.csv")) f.nvml = dir + "/nvml_power.csv";
  if (has("nvidia_smi_power.csv")) f.smi = dir + "/nvidia_smi_power.csv";
  if (f.nvml.empty() && f.smi.empty() && require_power_log) {
    throw InputError(dir, 0, "",
                     "no power log: a capture needs nvml_power.csv or nvidia_smi_power.csv "
                     "(wattcal-predict --capture predicts a capture without one)");
  }
  if (has("ncu_raw.csv")) f.ncu_raw = dir + "/ncu_raw.csv";
  if (fs::is_directory(fs::path(dir) / "ncu")) f.ncu_dir = dir + "/ncu";
  if (has("gpm_fields.csv")) f.fields = dir + "/gpm_fields.csv";
  if (f.ncu_raw.empty() && f.ncu_dir.empty() && require_counters) {
    throw InputError(dir, 0, "",
                     "no counters: a capture needs ncu_raw.csv (one profiled launch per window) "
                     "or ncu/<workload>.csv (one export per workload); a capture recorded with "
                     "wattcal-capture --fields gpm is read through a GPM field set "
                     "(microbench_specs/gpus/fields/*_gpm.json)");
  }
  return f;
}

std::map<std::string, std::string> ListExports(const std::string& ncu_dir) {
  std::map<std::string, std::string> exports;
  for (const auto& entry : fs::recursive_directory_iterator(ncu_dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".csv") continue;
    // Lexically: fs::relative resolves a linked export to its target's path.
    std::string key = entry.path().lexically_relative(ncu_dir).generic_string();
    key.resize(key.size() - 4);
    exports[key] = entry.path().string();
  }
  return exports;
}

std::string ExportOf(const std::map<std::string, std::string>& exports, const std::string& workload,
                     const std::string& where, std::vector<std::string>* warnings) {
  auto it = exports.find(workload);
  if (it != exports.end()) return it->second;
  std::string best_key, best_path;
  for (const auto& [key, path] : exports) {
    if (key.size() < workload.size() && workload.compare(0, key.size(), key) == 0 &&
        IsRunSuffix(workload.substr(key.size())) && key.size() > best_key.size()) {
      best_key = key, best_path = path;
    }
  }
  if (!best_path.empty() && warnings != nullptr) {
    warnings->push_back(
        fmt::format("{}: workload '{}' has no export of its own name: its "
                    "counters are {}",
                    where, workload, best_path));
  }
  return best_path;
}

}  // namespace capture_internal
}  // namespace wattcal
