// All-or-nothing outputs and their provenance (SPEC.md "Contracts every stage keeps").
//
// A stage stages every file it writes under a temporary name beside its final path,
// and renames them all at the end, only when everything succeeded; otherwise the
// temporaries are removed, so no partial output is ever left behind.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace wattcal {

// The version written into every provenance and model file.
const char* WattcalVersion();

// The source revision the binaries were built from (git describe when CMake configured).
const char* SourceRevision();

// The command line of this run, as RunStageMain received it (recorded in provenance files).
void SetCommandLine(int argc, char** argv);
const std::vector<std::string>& CommandLine();

// The run folder of this stage run (wattcal-<stage> --run-dir): its provenance record goes to
// DIR/provenance/ and names every output relative to DIR. "" (the default): the deepest folder
// that holds all of the run's outputs.
void SetRunFolder(const std::string& dir);
const std::string& RunFolder();

// Where a stage run's provenance goes: RUN/provenance/SUB/STAGE-NAME.json for its first output
// RUN/SUB/NAME, RUN the run folder (`run_dir`; empty: the output's own folder). One file per stage
// run, replaced by a rerun with the same outputs. OptionError when the output is not inside
// `run_dir`.
std::string ProvenancePathFor(const std::string& first_output, const std::string& stage,
                              const std::string& run_dir = "");

// The run folder a provenance file belongs to: the parent of the `provenance` folder above it.
std::string RunFolderOfProvenance(const std::string& provenance_file);

// Checks the parsed provenance record `record` read from `file`: format "wattcal-provenance", a
// string stage, an outputs array of objects, each with a non-empty string path, a string run_path
// (absent or "" only in records from before it) that names a file inside the run folder (relative,
// no "..", no absolute path), and string role and sha256 (64 hex digits) and a whole bytes count
// when present; inputs, when present, an array of objects with a string path. InputError naming
// `file` and the field ("outputs[2].run_path") otherwise.
void CheckProvenanceRecord(const std::string& file, const nlohmann::json& record);

// Parses `text`, the bytes of the provenance record `file`, and checks it (CheckProvenanceRecord):
// InputError naming the file, and the line of a JSON syntax error.
nlohmann::json ParseProvenanceRecord(const std::string& file, const std::string& text);

// Every provenance record under `dir`/provenance/ (any depth), sorted by path: (file, content).
// A file there that does not read as one (ParseProvenanceRecord) is left out; its error
// ("FILE:LINE: why") is listed in `unreadable` when given.
std::vector<std::pair<std::string, nlohmann::json>> ReadProvenanceRecords(
    const std::string& dir, std::vector<std::string>* unreadable = nullptr);

// Where an output listed in a (checked) provenance record is now: its run_path below the record's
// run folder; in records from before run_path, its path as written when that lies inside the run
// folder, else its file name beside provenance/. Never a file outside the record's run folder (a
// copy elsewhere is not the output); "" when there is no such file.
std::string ResolveRecordedOutput(const std::string& provenance_file, const nlohmann::json& output);

// Every provenance file under `root` (any depth) checked against the files it names: an output
// whose bytes no longer have the recorded SHA-256 is `changed`, one that is gone is `missing`.
struct ProvenanceCheck {
  int files = 0;                     // provenance files read
  int verified = 0;                  // outputs whose SHA-256 matches
  std::vector<std::string> changed;  // "OUTPUT (PROVENANCE)"
  std::vector<std::string> missing;
  std::vector<std::string> unreadable;  // provenance files that do not parse
};
// Adds what it finds under `root` to `check` (several roots add up).
void VerifyProvenance(const std::string& root, ProvenanceCheck* check);

// The provenance file that lists `path` among its outputs, in the provenance/ folder of the
// output's folder or of one up to four folders above it (its run folder); "" when none does.
std::string FindProvenanceOf(const std::string& path);

// Hex SHA-256 of a file's bytes (throws InputError if it cannot be read); the hash a reader
// computed while it read the unchanged file when there is one (util/sha256.h).
std::string Sha256OfFile(const std::string& path);

// A file's identity: device and inode, symlinks resolved. Two paths name the same file exactly
// when their identities are equal (hard links and symlinks included).
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity& o) const { return device == o.device && inode == o.inode; }
};

// The identity of the existing file or directory at `path`; false when it does not exist.
bool GetFileIdentity(const std::string& path, FileIdentity* identity);

// Registers a file this run reads (`option` names the flag that gave it, for messages).
// RunStageMain registers every input before the stage body runs; OutputSet::Stage then
// refuses to write onto any registered input (OptionError), whatever path reaches it.
void RegisterInputFile(const std::string& option, const std::string& path);

// Throws OptionError when `path` is one of the registered inputs: "OPTION PATH is the same
// file as input OPTION PATH".
void CheckNotAnInput(const std::string& option, const std::string& path);

// Forgets the registered inputs (tests).
void ClearRegisteredInputs();

// "cannot write PATH: REASON" with REASON from errno (or `ec` when given).
std::string CannotWriteMessage(const std::string& path, int errno_value);

// All-or-nothing set of output files.
//
// Stage() gives a temporary path beside each final path; Commit() renames them all while holding
// an exclusive flock(2) on every output directory, so two runs writing the same outputs commit one
// after the other and the result is always one run's whole set. An existing output is kept as a
// hard-link backup until every rename succeeded; when a rename fails, the renamed outputs are
// restored from their backups (or removed when they did not exist) and nothing changes.
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();  // Removes staged files that were not committed.
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Returns the temporary path to write instead of `final_path`. Creates the parent
  // directory of `final_path` if needed (removed again when the set is not committed).
  // OptionError when `final_path` is a registered input (RegisterInputFile).
  std::string Stage(const std::string& final_path);

  // Stages `content` for `final_path` (writes the temporary file now).
  void StageText(const std::string& final_path, const std::string& content);

  // Records the staged output `final_path` in this run's provenance: the stage, its inputs
  // (SHA-256 and size), its effective options, and the output's `role` (what it is to the
  // stage: "model", "predictions", "metrics", ...; "" = none recorded). Commit() writes one
  // provenance file for all of them (ProvenancePathFor the first, in RunFolder()): stage, argv,
  // version, source revision, options, inputs, and every output with its path as written, its
  // run_path (relative to the run folder), role, SHA-256 and size. Nothing beside the output.
  void StageProvenance(const std::string& final_path, const std::string& stage,
                       const std::vector<std::string>& inputs, const nlohmann::json& options,
                       const std::string& role = "");

  // Renames every staged file onto its final path, all or none (see the class comment).
  // OptionError with the reason when a rename fails; the old outputs are then untouched.
  void Commit();

  // The final paths staged so far, in the order staged, without the provenance record: after
  // Commit(), the files the run wrote (a stage's StageSummary::written).
  std::vector<std::string> Outputs() const;

  // The staged temporary path for `final_path` (must have been staged).
  const std::string& TempPathOf(const std::string& final_path) const;

 private:
  std::vector<std::pair<std::string, std::string>> staged_;  // (final, temp)
  // The provenance being gathered (empty until StageProvenance) and its outputs, in order.
  nlohmann::ordered_json provenance_;
  std::vector<std::string> recorded_;
  std::string provenance_path_;                   // the record Commit() staged, once it has
  std::vector<std::string> created_directories_;  // by Stage(), deepest first
  bool committed_ = false;
};

// Writes `value` as JSON with two-space indentation and a trailing newline.
std::string DumpJson(const nlohmann::json& value);

}  // namespace wattcal
