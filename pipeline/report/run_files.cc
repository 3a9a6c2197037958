#include "report/run_files.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "util/errors.h"
#include "util/json_file.h"
#include "util/logging.h"
#include "util/output.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace wattcal {
namespace {

// Depth below the run folder searched for provenance/ folders of stages run without --run-dir
// (run/a/provenance, run/a/b/provenance).
constexpr int kNestedProvenanceDepth = 2;

// One stage run from its (checked) record. Each output that is gone is warned about and noted;
// one whose bytes are not those recorded is refused (InputError). The report's own earlier
// records are not checked: it is about to replace what they list.
StageRun ReadStageRun(const std::string& provenance, const nlohmann::json& record,
                      std::vector<std::string>* notes) {
  StageRun run;
  run.provenance = provenance;
  run.stage = record.value("stage", "");
  const bool own = run.stage == "report";
  for (const nlohmann::json& o : record["outputs"]) {
    RunOutput out;
    out.path = ResolveRecordedOutput(provenance, o);
    out.run_path = o.value("run_path", "");
    out.role = o.value("role", "");
    if (own) {
      if (!out.path.empty()) run.outputs.push_back(std::move(out));
      continue;
    }
    if (out.path.empty()) {
      const std::string note = provenance + " lists " +
                               (out.run_path.empty() ? o.value("path", "") : out.run_path) +
                               ", which is gone from the run folder; left out";
      LogWarning(note);
      if (notes != nullptr) notes->push_back(note);
      continue;
    }
    // What the report shows is what the stage wrote: an output edited since is refused.
    const std::string sha = o.value("sha256", "");
    if (!sha.empty() && Sha256OfFile(out.path) != sha) {
      throw InputError(out.path, 0, "",
                       "changed since its stage wrote it: its SHA-256 is not the one " +
                           provenance +
                           " records. Rerun the stage that wrote it (or the run: make -f "
                           "Makefile.runs RUN), or remove the file and its record");
    }
    run.outputs.push_back(std::move(out));
  }
  return run;
}

// The folders of a run's stage outputs (README "Run folders"): a file there that no record lists
// lost its record (deleted or damaged) or was put there by hand.
const char* const kOutputFolders[] = {"model", "validation", "predictions", "comparison"};

// Files of the output folders of `run_dir` (tables, JSON, summaries) that are none of `listed`:
// each warned about and noted (they are not shown).
void NoteUnlistedOutputs(const std::string& run_dir, const std::set<std::string>& listed,
                         std::vector<std::string>* notes) {
  for (const char* folder : kOutputFolders) {
    const fs::path root = fs::path(run_dir) / folder;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    std::vector<std::string> unlisted;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (it->is_directory(ec)) {
        if (name == "provenance" || name.rfind('.', 0) == 0) it.disable_recursion_pending();
        continue;
      }
      const std::string ext = ToLower(it->path().extension().string());
      if (name.rfind('.', 0) == 0 || name.find(".tmp.") != std::string::npos ||
          name.find(".bak.") != std::string::npos ||
          (ext != ".json" && ext != ".csv" && ext != ".md"))
        continue;
      if (listed.count(fs::weakly_canonical(it->path(), ec).string()) == 0)
        unlisted.push_back(it->path().string());
    }
    std::sort(unlisted.begin(), unlisted.end());
    for (const std::string& f : unlisted) {
      const std::string note =
          f +
          ": no provenance record of the run folder lists it (its record deleted or damaged, "
          "or the file put there by hand): not shown; rerun the stage that writes it";
      LogWarning(note);
      notes->push_back(note);
    }
  }
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
  std::set<std::string> listed;  // every existing output of every record, the report's included
  for (const std::string& folder : folders) {
    std::vector<std::string> unreadable;
    for (const auto& [path, record] : ReadProvenanceRecords(folder, &unreadable)) {
      ++records;
      StageRun run = ReadStageRun(path, record, &files.notes);
      for (const RunOutput& o : run.outputs)
        listed.insert(fs::weakly_canonical(o.path, ec).string());
      if (run.stage == "report") continue;  // this report's own figures and index
      files.runs.push_back(std::move(run));
    }
    // A record that does not read may have listed any of the run's files: nothing it made could
    // be told from a file put there by hand.
    if (!unreadable.empty()) {
      throw InputError(unreadable.front(), 0, "",
                       "a provenance record of the run folder " + run_dir +
                           " does not read, so the run's files cannot be told: restore the "
                           "record, or rerun the stage that wrote it (make -f Makefile.runs RUN)");
    }
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
  NoteUnlistedOutputs(run_dir, listed, &files.notes);
  return files;
}

bool FindStageRunOf(const std::string& path, StageRun* run) {
  const std::string provenance = FindProvenanceOf(path);
  if (provenance.empty()) return false;
  // FindProvenanceOf returns checked records only; read again, it is checked again.
  const nlohmann::json record =
      ParseProvenanceRecord(provenance, ReadFileText(provenance, "provenance record"));
  *run = ReadStageRun(provenance, record, nullptr);
  return true;
}

}  // namespace wattcal
