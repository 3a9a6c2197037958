#include "report/run_files.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "util/errors.h"
#include "util/json_file.h"
#include "util/output.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace wattcal {
namespace {

// Depth below the run folder searched for provenance/ folders of stages run without --run-dir
// (run/a/provenance, run/a/b/provenance).
constexpr int kNestedProvenanceDepth = 2;

StageRun ReadStageRun(const std::string& provenance, const nlohmann::json& record,
                      std::vector<std::string>* notes) {
  StageRun run;
  run.provenance = provenance;
  run.stage = record.value("stage", "");
  for (const nlohmann::json& o : record["outputs"]) {
    if (!o.is_object()) continue;
    RunOutput out;
    out.path = ResolveRecordedOutput(provenance, o);
    out.run_path = o.value("run_path", "");
    out.role = o.value("role", "");
    if (out.path.empty()) {
      if (notes != nullptr) {
        notes->push_back(provenance + " lists " + o.value("path", std::string("?")) +
                         ", which is gone; left out");
      }
      continue;
    }
    run.outputs.push_back(std::move(out));
  }
  return run;
}

// The folders below `run_dir` (not itself) that hold a provenance/ folder, sorted.
std::vector<std::string> NestedRunFolders(const std::string& run_dir) {
  std::vector<std::string> folders;
  std::error_code ec;
  fs::recursive_directory_iterator it(run_dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    const std::string name = it->path().filename().string();
    if (name == "provenance" || (!name.empty() && name[0] == '.') ||
        it.depth() >= kNestedProvenanceDepth) {
      it.disable_recursion_pending();
      if (name == "provenance" || (!name.empty() && name[0] == '.')) continue;
    }
    if (fs::is_directory(it->path() / "provenance", ec)) folders.push_back(it->path().string());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

bool HasOldManifests(const std::string& run_dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (EndsWith(name, ".manifest.json")) return true;
  }
  return false;
}

}  // namespace

const RunOutput* StageRun::Output(const std::string& role) const {
  for (const RunOutput& o : outputs) {
    if (o.role == role) return &o;
  }
  if (stage != "validate") return nullptr;
  const std::string extension = role == "predictions" ? ".csv"
                                : role == "metrics"   ? ".json"
                                : role == "summary"   ? ".md"
                                                      : "";
  for (const RunOutput& o : outputs) {
    if (o.role.empty() && !extension.empty() && fs::path(o.path).extension() == extension)
      return &o;
  }
  return nullptr;
}

std::vector<std::string> RunFiles::Files() const {
  std::vector<std::string> files;
  for (const StageRun& run : runs) {
    for (const RunOutput& o : run.outputs) {
      if (std::find(files.begin(), files.end(), o.path) == files.end()) files.push_back(o.path);
    }
  }
  return files;
}

RunFiles ReadRunFiles(const std::string& run_dir) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) throw OptionError("--run-dir " + run_dir + ": not a folder");
  RunFiles files;
  std::vector<std::string> folders = {run_dir};
  for (const std::string& f : NestedRunFolders(run_dir)) folders.push_back(f);
  int records = 0;
  for (const std::string& folder : folders) {
    std::vector<std::string> unreadable;
    for (const auto& [path, record] : ReadProvenanceRecords(folder, &unreadable)) {
      ++records;
      if (record.value("stage", "") == "report") continue;  // this report's own figures and index
      files.runs.push_back(ReadStageRun(path, record, &files.notes));
    }
    for (const std::string& u : unreadable)
      files.notes.push_back(u + ": not a provenance record; left out");
  }
  if (records == 0) {
    const std::string why =
        HasOldManifests(run_dir)
            ? "it was written by an older wattcal (a .manifest.json beside each file)"
            : "no stage of wattcal wrote into it";
    throw InputError(
        run_dir, 0, "",
        "no provenance records (provenance/*.json): " + why +
            ". wattcal-report finds a run's files through the record each stage run "
            "leaves in the run folder; rerun the run's stages (make -f Makefile.runs RUN, "
            "or each stage with --run-dir " +
            run_dir + "), or name the files with --model and --predictions and --out-dir");
  }
  return files;
}

bool FindStageRunOf(const std::string& path, StageRun* run) {
  const std::string provenance = FindProvenanceOf(path);
  if (provenance.empty()) return false;
  const nlohmann::json record = ReadJsonFileOrDiscarded(provenance);
  if (!record.is_object() || !record.contains("outputs") || !record["outputs"].is_array())
    return false;
  *run = ReadStageRun(provenance, record, nullptr);
  return true;
}

}  // namespace wattcal
