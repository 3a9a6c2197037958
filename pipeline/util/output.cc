#include "util/output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <boost/filesystem.hpp>
#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

#include "util/errors.h"
#include "util/json_check.h"
#include "util/json_file.h"
#include "util/sha256.h"

namespace fs = boost::filesystem;

namespace wattcal {

const char* WattcalVersion() { return WATTCAL_VERSION; }

const char* SourceRevision() {
#ifdef WATTCAL_SOURCE_REVISION
  return WATTCAL_SOURCE_REVISION;
#else
  return WATTCAL_VERSION;
#endif
}

namespace {
std::vector<std::string>& CommandLineStore() {
  static std::vector<std::string> argv;
  return argv;
}
}  // namespace

void SetCommandLine(int argc, char** argv) {
  CommandLineStore().assign(argv, argv + argc);
  // The program by its name: the same run from another build folder is the same run.
  if (!CommandLineStore().empty())
    CommandLineStore()[0] = fs::path(CommandLineStore()[0]).filename().string();
}

const std::vector<std::string>& CommandLine() { return CommandLineStore(); }

namespace {
std::string& RunFolderStore() {
  static std::string dir;
  return dir;
}

// `path` relative to `dir`, both made absolute first ("" when `path` is not inside `dir`).
std::string RelativeInside(const std::string& path, const std::string& dir) {
  const fs::path rel =
      fs::absolute(fs::path(path))
          .lexically_normal()
          .lexically_relative(fs::absolute(fs::path(dir.empty() ? "." : dir)).lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return "";
  return rel.generic_string();
}
}  // namespace

void SetRunFolder(const std::string& dir) { RunFolderStore() = dir; }
const std::string& RunFolder() { return RunFolderStore(); }

std::string ProvenancePathFor(const std::string& first_output, const std::string& stage,
                              const std::string& run_dir) {
  const fs::path out(first_output);
  fs::path run = run_dir.empty() ? out.parent_path() : fs::path(run_dir);
  if (run.empty()) run = ".";
  const std::string relative = RelativeInside(first_output, run.string());
  if (relative.empty()) {
    throw OptionError("output " + first_output + " is not inside the run folder --run-dir " +
                      run_dir + " (its provenance goes to " + run_dir + "/provenance/)");
  }
  const fs::path sub = fs::path(relative).parent_path();
  return (run / "provenance" / sub / (stage + "-" + out.filename().string() + ".json")).string();
}

std::string RunFolderOfProvenance(const std::string& provenance_file) {
  for (fs::path dir = fs::path(provenance_file).parent_path(); !dir.empty();
       dir = dir.parent_path()) {
    if (dir.filename() == "provenance")
      return dir.parent_path().empty() ? "." : dir.parent_path().string();
  }
  return fs::path(provenance_file).parent_path().string();
}

namespace {

bool IsHexSha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

// The optional member `key` of `object` when it is a string ("" when absent); InputError naming
// `field` when it is there with another type.
std::string OptionalString(const std::string& file, const nlohmann::json& object,
                           const std::string& key, const std::string& field) {
  if (!object.contains(key)) return "";
  if (!object[key].is_string()) {
    throw InputError(file, 0, field,
                     "expected a string, got " + std::string(object[key].type_name()) +
                         ": not a valid provenance record");
  }
  return object[key].get<std::string>();
}

}  // namespace

void CheckProvenanceRecord(const std::string& file, const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("format") ||
      record["format"] != "wattcal-provenance") {
    throw InputError(file, 0, "format",
                     "not a wattcal provenance record (expected an object with \"format\": "
                     "\"wattcal-provenance\")");
  }
  OptionalString(file, record, "stage", "stage");
  if (!record.contains("outputs") || !record["outputs"].is_array()) {
    throw InputError(file, 0, "outputs", "expected an array of the stage run's outputs");
  }
  if (record.contains("inputs")) {
    if (!record["inputs"].is_array())
      throw InputError(file, 0, "inputs", "expected an array of the stage run's inputs");
    for (size_t i = 0; i < record["inputs"].size(); ++i) {
      const nlohmann::json& in = record["inputs"][i];
      const std::string field = fmt::format("inputs[{}]", i);
      if (!in.is_object()) throw InputError(file, 0, field, "expected an object");
      OptionalString(file, in, "path", field + ".path");
    }
  }
  for (size_t i = 0; i < record["outputs"].size(); ++i) {
    const nlohmann::json& o = record["outputs"][i];
    const std::string field = fmt::format("outputs[{}]", i);
    if (!o.is_object()) throw InputError(file, 0, field, "expected an object");
    if (OptionalString(file, o, "path", field + ".path").empty())
      throw InputError(file, 0, field + ".path", "missing: every output names its file");
    OptionalString(file, o, "role", field + ".role");
    const std::string sha = OptionalString(file, o, "sha256", field + ".sha256");
    if (o.contains("sha256") && !IsHexSha256(sha)) {
      throw InputError(file, 0, field + ".sha256",
                       "'" + sha + "' is not a SHA-256 (64 hexadecimal digits)");
    }
    if (o.contains("bytes") && !o["bytes"].is_number_unsigned())
      throw InputError(file, 0, field + ".bytes", "expected a whole number of bytes");
    const std::string run_path = OptionalString(file, o, "run_path", field + ".run_path");
    if (run_path.empty()) continue;
    const fs::path p(run_path);
    bool up = false;
    for (const fs::path& part : p) up = up || part == "..";
    if (p.is_absolute() || p.has_root_name() || p.has_root_directory() || up) {
      throw InputError(file, 0, field + ".run_path",
                       "'" + run_path +
                           "' leads outside the run folder (a run_path is relative to the run "
                           "folder, without '..'): refusing to follow it");
    }
  }
}

nlohmann::json ParseProvenanceRecord(const std::string& file, const std::string& text) {
  nlohmann::json j = ParseJsonText(file, text);
  CheckProvenanceRecord(file, j);
  return j;
}

std::vector<std::pair<std::string, nlohmann::json>> ReadProvenanceRecords(
    const std::string& dir, std::vector<std::string>* unreadable) {
  std::vector<std::string> files;
  const fs::path root = fs::path(dir.empty() ? "." : dir) / "provenance";
  boost::system::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && fs::is_regular_file(it->path())) {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, nlohmann::json>> records;
  for (const std::string& f : files) {
    try {
      records.emplace_back(f, ParseProvenanceRecord(f, ReadFileText(f, "provenance record")));
    } catch (const InputError& e) {
      if (unreadable != nullptr) unreadable->push_back(e.what());
    }
  }
  return records;
}

std::string ResolveRecordedOutput(const std::string& provenance_file,
                                  const nlohmann::json& output) {
  const std::string run = RunFolderOfProvenance(provenance_file);
  const std::string run_path = output.value("run_path", "");
  if (!run_path.empty()) {
    const fs::path in_run = fs::path(run) / run_path;
    return fs::is_regular_file(in_run) ? in_run.string() : "";
  }
  // Records from before run_path: the path as written when it lies in the run folder, else the
  // file name beside provenance/.
  const std::string written = output.value("path", "");
  if (written.empty()) return "";
  if (!RelativeInside(written, run).empty() && fs::is_regular_file(written)) return written;
  const fs::path beside = fs::path(run) / fs::path(written).filename();
  return fs::is_regular_file(beside) ? beside.string() : "";
}

void VerifyProvenance(const std::string& root, ProvenanceCheck* check) {
  ProvenanceCheck& c = *check;
  // Every folder under `root` (itself included) that holds a provenance/ folder.
  std::vector<std::string> runs;
  boost::system::error_code ec;
  if (fs::is_directory(fs::path(root) / "provenance", ec)) runs.push_back(root);
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    boost::system::error_code entry_ec;
    if (!fs::is_directory(it->path(), entry_ec)) continue;
    if (it->path().filename() == "provenance") {
      it.disable_recursion_pending();
      continue;
    }
    if (fs::is_directory(it->path() / "provenance", entry_ec)) runs.push_back(it->path().string());
  }
  std::sort(runs.begin(), runs.end());
  for (const std::string& run : runs) {
    for (const auto& [f, j] : ReadProvenanceRecords(run, &c.unreadable)) {
      ++c.files;
      for (const nlohmann::json& o : j["outputs"]) {
        const std::string out = ResolveRecordedOutput(f, o);
        if (out.empty()) {
          c.missing.push_back(o.value("path", "") + " (" + f + ")");
        } else if (Sha256OfFile(out) != o.value("sha256", "")) {
          c.changed.push_back(out + " (" + f + ")");
        } else {
          ++c.verified;
        }
      }
    }
  }
}

std::string FindProvenanceOf(const std::string& path) {
  fs::path folder =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  // The output's folder first, then up to four folders above it (its run folder, from a file in
  // data/tidy/apps/).
  for (int up = 0; up < 5 && !folder.empty(); ++up, folder = folder.parent_path()) {
    const std::string relative = RelativeInside(path, folder.string());
    for (const auto& [f, j] : ReadProvenanceRecords(folder.string())) {
      for (const nlohmann::json& o : j["outputs"]) {
        const std::string run_path = o.value("run_path", "");
        if (o.value("path", "") == path || (!run_path.empty() && run_path == relative)) return f;
        // Records from before run_path: the same file name, in the output's own folder.
        if (run_path.empty() && up == 0 &&
            fs::path(o.value("path", "")).filename() == fs::path(path).filename()) {
          return f;
        }
      }
    }
  }
  return "";
}

bool GetFileIdentity(const std::string& path, FileIdentity* identity) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;  // stat follows symlinks
  identity->device = static_cast<uint64_t>(st.st_dev);
  identity->inode = static_cast<uint64_t>(st.st_ino);
  return true;
}

namespace {
struct RegisteredInput {
  std::string option;
  std::string path;
  FileIdentity identity;
};
std::mutex g_inputs_mutex;
std::vector<RegisteredInput>& RegisteredInputs() {
  static std::vector<RegisteredInput> inputs;
  return inputs;
}
std::atomic<unsigned> g_temp_counter{0};
}  // namespace

void RegisterInputFile(const std::string& option, const std::string& path) {
  FileIdentity identity;
  if (!GetFileIdentity(path, &identity)) return;  // a missing input is its reader's error
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  RegisteredInputs().push_back({option, path, identity});
}

void CheckNotAnInput(const std::string& option, const std::string& path) {
  FileIdentity identity;
  if (!GetFileIdentity(path, &identity)) return;
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  for (const RegisteredInput& input : RegisteredInputs()) {
    if (input.identity == identity) {
      throw OptionError((option.empty() ? "output " : option + " ") + path +
                        " is the same file as input " +
                        (input.option.empty() ? "" : input.option + " ") + input.path +
                        ": refusing to overwrite an input (choose another output path)");
    }
  }
}

void ClearRegisteredInputs() {
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  RegisteredInputs().clear();
}

std::string CannotWriteMessage(const std::string& path, int errno_value) {
  return "cannot write " + path + ": " +
         (errno_value != 0 ? std::string(std::strerror(errno_value)) : std::string("write failed"));
}

std::string Sha256OfFile(const std::string& path) {
  // A reader that streamed the whole file hashed it as it read (util/sha256.h).
  std::string remembered;
  if (RememberedFileSha256(path, &remembered)) return remembered;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw InputError(path, 0, "",
                     std::string("cannot open file for reading: ") + std::strerror(errno));
  }
  Sha256Hasher hasher;
  std::vector<unsigned char> buffer(1 << 16);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) hasher.Update(buffer.data(), n);
  std::fclose(f);
  return hasher.HexDigest();
}

OutputSet::~OutputSet() {
  if (committed_) return;
  for (const auto& [final_path, temp] : staged_) {
    boost::system::error_code ec;
    fs::remove(temp, ec);
  }
  // Folders Stage() created, deepest first; fs::remove leaves one that is not empty.
  std::vector<std::string> dirs = created_directories_;
  std::sort(dirs.begin(), dirs.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& dir : dirs) {
    boost::system::error_code ec;
    fs::remove(dir, ec);
  }
}

std::string OutputSet::Stage(const std::string& final_path) {
  for (const auto& entry : staged_) {
    if (entry.first == final_path) return entry.second;
  }
  const fs::path target(final_path);
  if (target.has_parent_path()) {
    boost::system::error_code ec;
    // Remember the folders this creates (deepest first): a run that fails removes them again.
    for (fs::path dir = target.parent_path(); !dir.empty() && !fs::exists(dir, ec);
         dir = dir.parent_path()) {
      created_directories_.push_back(dir.string());
    }
    // An existing folder, "." included ("./name"), is used as it is: Boost's create_directories
    // fails on a path ending in a dot.
    if (!fs::is_directory(target.parent_path(), ec)) {
      fs::create_directories(target.parent_path(), ec);
      if (ec)
        throw OptionError("cannot create directory " + target.parent_path().string() + ": " +
                          ec.message());
    }
  }
  CheckNotAnInput("", final_path);
  std::string temp =
      final_path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(g_temp_counter++);
  staged_.emplace_back(final_path, temp);
  return temp;
}

void OutputSet::StageText(const std::string& final_path, const std::string& content) {
  const std::string temp = Stage(final_path);
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) throw OptionError(CannotWriteMessage(final_path, errno));
  const size_t written = std::fwrite(content.data(), 1, content.size(), f);
  int error = written == content.size() ? 0 : (errno != 0 ? errno : EIO);
  if (std::fflush(f) != 0 && error == 0) error = errno;
  if (std::fclose(f) != 0 && error == 0) error = errno;
  if (error != 0) throw OptionError(CannotWriteMessage(final_path, error));
}

const std::string& OutputSet::TempPathOf(const std::string& final_path) const {
  for (const auto& entry : staged_) {
    if (entry.first == final_path) return entry.second;
  }
  throw std::logic_error("OutputSet: " + final_path + " was not staged");
}

void OutputSet::StageProvenance(const std::string& final_path, const std::string& stage,
                                const std::vector<std::string>& inputs,
                                const nlohmann::json& options, const std::string& role) {
  if (provenance_.empty()) {
    provenance_["format"] = "wattcal-provenance";
    provenance_["stage"] = stage;
    provenance_["wattcal_version"] = WattcalVersion();
    provenance_["source_revision"] = SourceRevision();
    provenance_["argv"] = CommandLine();
    provenance_["options"] = options;
    provenance_["inputs"] = nlohmann::ordered_json::array();
    provenance_["outputs"] = nlohmann::ordered_json::array();
  }
  for (const std::string& input : inputs) {
    bool seen = false;
    for (const auto& i : provenance_["inputs"]) seen = seen || i["path"] == input;
    if (seen) continue;
    provenance_["inputs"].push_back({{"path", input},
                                     {"sha256", Sha256OfFile(input)},
                                     {"bytes", static_cast<uint64_t>(fs::file_size(input))}});
  }
  const std::string temp = TempPathOf(final_path);
  // run_path is filled in by Commit, once the run folder is known.
  nlohmann::ordered_json output = {{"path", final_path}, {"run_path", ""}};
  if (!role.empty()) output["role"] = role;
  output.update(nlohmann::ordered_json{{"sha256", Sha256OfFile(temp)},
                                       {"bytes", static_cast<uint64_t>(fs::file_size(temp))}});
  // An output made with other options than the run's first (one stage writing two kinds of
  // file) carries its own.
  if (nlohmann::ordered_json(options) != provenance_["options"]) output["options"] = options;
  provenance_["outputs"].push_back(output);
  recorded_.push_back(final_path);
}

namespace {
// Exclusive flock(2) on a set of directories, taken in sorted order (no deadlock between two
// runs), released on destruction.
class DirectoryLocks {
 public:
  explicit DirectoryLocks(const std::set<std::string>& directories) {
    for (const std::string& dir : directories) {
      const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) {
        throw OptionError("cannot lock output directory " + dir + ": " + std::strerror(errno));
      }
      while (::flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        const int error = errno;
        ::close(fd);
        throw OptionError("cannot lock output directory " + dir + ": " + std::strerror(error));
      }
      fds_.push_back(fd);
    }
  }
  ~DirectoryLocks() {
    for (int fd : fds_) {
      ::flock(fd, LOCK_UN);
      ::close(fd);
    }
  }
  DirectoryLocks(const DirectoryLocks&) = delete;
  DirectoryLocks& operator=(const DirectoryLocks&) = delete;

 private:
  std::vector<int> fds_;
};

std::string DirectoryOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  boost::system::error_code ec;
  const fs::path canonical = fs::canonical(parent.empty() ? fs::path(".") : parent, ec);
  return ec ? (parent.empty() ? std::string(".") : parent.string()) : canonical.string();
}
}  // namespace

std::vector<std::string> OutputSet::Outputs() const {
  std::vector<std::string> paths;
  for (const auto& [final_path, temp_path] : staged_) {
    if (final_path != provenance_path_) paths.push_back(final_path);
  }
  return paths;
}

void OutputSet::Commit() {
  if (!recorded_.empty()) {
    // In the run folder (--run-dir), else in the deepest folder that holds every output (a stage
    // writing into sub-folders keeps one provenance file, in the folder above them).
    fs::path run = RunFolder();
    if (run.empty()) {
      run = fs::path(recorded_.front()).parent_path();
      for (const std::string& r : recorded_) {
        // The folders both paths share, element by element ("out/a" is no folder of "out/ab").
        const fs::path dir = fs::path(r).parent_path();
        fs::path shared;
        for (auto a = run.begin(), b = dir.begin(); a != run.end() && b != dir.end() && *a == *b;
             ++a, ++b) {
          shared /= *a;
        }
        run = shared;
      }
    }
    const std::string path =
        ProvenancePathFor(recorded_.front(), provenance_["stage"].get<std::string>(),
                          run.empty() ? "." : run.string());
    for (nlohmann::ordered_json& o : provenance_["outputs"]) {
      const std::string written = o["path"].get<std::string>();
      o["run_path"] = RelativeInside(written, run.empty() ? "." : run.string());
      if (o["run_path"] == "") {
        throw OptionError("output " + written + " is not inside the run folder --run-dir " +
                          run.string());
      }
    }
    recorded_.clear();  // staged once, even when Commit is retried
    provenance_path_ = path;
    StageText(path, provenance_.dump(2) + "\n");
  }
  std::set<std::string> directories;
  for (const auto& entry : staged_) directories.insert(DirectoryOf(entry.first));
  const DirectoryLocks locks(directories);

  // Keep each existing output as a hard-link backup until every rename succeeded.
  struct Step {
    std::string final_path;
    std::string backup;  // empty: the output did not exist
    bool renamed = false;
  };
  std::vector<Step> steps;
  auto remove_backups = [&steps]() {
    for (const Step& step : steps) {
      if (!step.backup.empty()) ::unlink(step.backup.c_str());
    }
  };
  auto roll_back = [&steps]() {
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if (!it->renamed) continue;
      if (!it->backup.empty()) {
        ::rename(it->backup.c_str(), it->final_path.c_str());
      } else {
        ::unlink(it->final_path.c_str());
      }
    }
    for (const Step& step : steps) {
      if (!step.backup.empty()) ::unlink(step.backup.c_str());
    }
  };
  for (const auto& [final_path, temp] : staged_) {
    Step step;
    step.final_path = final_path;
    struct stat st;
    if (::lstat(final_path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      step.backup =
          final_path + ".bak." + std::to_string(getpid()) + "." + std::to_string(g_temp_counter++);
      if (::link(final_path.c_str(), step.backup.c_str()) != 0) {
        // No hard links here (e.g. some network file systems): copy instead.
        boost::system::error_code ec;
        fs::copy_file(final_path, step.backup, fs::copy_option::overwrite_if_exists, ec);
        if (ec) {
          const std::string message =
              "cannot back up " + final_path + " before replacing it: " + ec.message();
          remove_backups();
          throw OptionError(message);
        }
      }
    }
    steps.push_back(step);
  }
  for (size_t i = 0; i < staged_.size(); ++i) {
    const std::string& final_path = staged_[i].first;
    const std::string& temp = staged_[i].second;
    if (::rename(temp.c_str(), final_path.c_str()) != 0) {
      const int error = errno;
      roll_back();
      throw OptionError("cannot write " + final_path + " (moving " + temp +
                        " onto it): " + std::strerror(error) + "; no output was changed");
    }
    steps[i].renamed = true;
  }
  remove_backups();
  committed_ = true;
}

std::string DumpJson(const nlohmann::json& value) {
  CheckJsonNumbersFinite(value);  // never a silent `null` for NaN or infinity
  return value.dump(2) + "\n";
}

}  // namespace wattcal
