// All-or-nothing outputs and their manifests (SPEC.md "Contracts every stage keeps").
//
// A stage stages every file it writes under a temporary name beside its final path,
// and renames them all at the end, only when everything succeeded; otherwise the
// temporaries are removed, so no partial output is ever left behind.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace wattcal {

// The version written into every manifest and model file.
const char* WattcalVersion();

// Hex SHA-256 of a file's bytes (throws InputError if it cannot be read).
std::string Sha256OfFile(const std::string& path);

class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();  // Removes staged files that were not committed.
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Returns the temporary path to write instead of `final_path`. Creates the parent
  // directory of `final_path` if needed.
  std::string Stage(const std::string& final_path);

  // Stages `content` for `final_path` (writes the temporary file now).
  void StageText(const std::string& final_path, const std::string& content);

  // Stages `final_path`.manifest.json describing the staged output `final_path`:
  // inputs with their SHA-256, the effective options and the version.
  void StageManifest(const std::string& final_path, const std::string& stage,
                     const std::vector<std::string>& inputs, const nlohmann::json& options);

  // Renames every staged file onto its final path.
  void Commit();

  // The staged temporary path for `final_path` (must have been staged).
  const std::string& TempPathOf(const std::string& final_path) const;

 private:
  std::vector<std::pair<std::string, std::string>> staged_;  // (final, temp)
  bool committed_ = false;
};

// Writes `value` as JSON with two-space indentation and a trailing newline.
std::string DumpJson(const nlohmann::json& value);

}  // namespace wattcal
