// All-or-nothing outputs and their manifests (SPEC.md "Contracts every stage keeps").
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

// The version written into every manifest and model file.
const char* WattcalVersion();

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

  // Stages `final_path`.manifest.json describing the staged output `final_path`:
  // inputs with their SHA-256, the effective options and the version.
  void StageManifest(const std::string& final_path, const std::string& stage,
                     const std::vector<std::string>& inputs, const nlohmann::json& options);

  // Renames every staged file onto its final path, all or none (see the class comment).
  // OptionError with the reason when a rename fails; the old outputs are then untouched.
  void Commit();

  // The staged temporary path for `final_path` (must have been staged).
  const std::string& TempPathOf(const std::string& final_path) const;

 private:
  std::vector<std::pair<std::string, std::string>> staged_;  // (final, temp)
  std::vector<std::string> created_directories_;  // by Stage(), deepest first
  bool committed_ = false;
};

// Writes `value` as JSON with two-space indentation and a trailing newline.
std::string DumpJson(const nlohmann::json& value);

}  // namespace wattcal
