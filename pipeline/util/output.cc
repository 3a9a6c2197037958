#include "util/output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/filesystem.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>

#include "util/errors.h"
#include "util/json_check.h"
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
  if (!CommandLineStore().empty()) CommandLineStore()[0] = fs::path(CommandLineStore()[0]).filename().string();
}

const std::vector<std::string>& CommandLine() { return CommandLineStore(); }

std::string ProvenancePathFor(const std::string& first_output, const std::string& stage) {
  const fs::path out(first_output);
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  return (dir / "provenance" / (stage + "-" + out.filename().string() + ".json")).string();
}

void VerifyProvenance(const std::string& root, ProvenanceCheck* check) {
  ProvenanceCheck& c = *check;
  boost::system::error_code ec;
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.parent_path().filename() == "provenance" && p.extension() == ".json" && fs::is_regular_file(p)) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f.string());
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || j.value("format", "") != "wattcal-provenance" || !j.contains("outputs")) {
      c.unreadable.push_back(f.string());
      continue;
    }
    ++c.files;
    for (const nlohmann::json& o : j["outputs"]) {
      // As written on the command line (relative to where the stage ran), else beside provenance/.
      fs::path out(o.value("path", ""));
      if (!fs::is_regular_file(out)) out = f.parent_path().parent_path() / out.filename();
      if (!fs::is_regular_file(out)) {
        c.missing.push_back(o.value("path", "") + " (" + f.string() + ")");
      } else if (Sha256OfFile(out.string()) != o.value("sha256", "")) {
        c.changed.push_back(out.string() + " (" + f.string() + ")");
      } else {
        ++c.verified;
      }
    }
  }
}

std::string FindProvenanceOf(const std::string& path) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  const std::string parent = p.parent_path().string();
  fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  // The output's folder first, then up to three folders above it (a stage that wrote into
  // sub-folders keeps its provenance in the folder above them).
  for (int up = 0; up < 4 && !folder.empty(); ++up, folder = folder.parent_path()) {
    const fs::path dir = folder / "provenance";
    boost::system::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".json") files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      std::ifstream in(f);
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (!j.is_object() || !j.contains("outputs") || !j["outputs"].is_array()) continue;
      for (const nlohmann::json& o : j["outputs"]) {
        const std::string written = o.value("path", "");
        if (written == path) return f;
        // Written from another working folder: the same name, at the same place below `folder`.
        const fs::path w(written);
        if (w.filename().string() == name && (up == 0 || fs::path(parent).filename() == w.parent_path().filename())) {
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
      if (ec) throw OptionError("cannot create directory " + target.parent_path().string() + ": " +
                                ec.message());
    }
  }
  CheckNotAnInput("", final_path);
  std::string temp = final_path + ".tmp." + std::to_string(getpid()) + "." +
                     std::to_string(g_temp_counter++);
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
                                const std::vector<std::string>& inputs, const nlohmann::json& options) {
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
  nlohmann::ordered_json output = {{"path", final_path},
                                   {"sha256", Sha256OfFile(temp)},
                                   {"bytes", static_cast<uint64_t>(fs::file_size(temp))}};
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

void OutputSet::Commit() {
  if (!recorded_.empty()) {
    // Beside the outputs: in the deepest folder that holds them all (a stage writing into
    // sub-folders keeps one provenance file, in the folder above them).
    fs::path common = fs::path(recorded_.front()).parent_path();
    for (const std::string& r : recorded_) {
      // The folders both paths share, element by element ("out/a" is no folder of "out/ab").
      const fs::path dir = fs::path(r).parent_path();
      fs::path shared;
      for (auto a = common.begin(), b = dir.begin(); a != common.end() && b != dir.end() && *a == *b; ++a, ++b) {
        shared /= *a;
      }
      common = shared;
    }
    const std::string path = ProvenancePathFor((common / fs::path(recorded_.front()).filename()).string(),
                                               provenance_["stage"].get<std::string>());
    recorded_.clear();  // staged once, even when Commit is retried
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
      step.backup = final_path + ".bak." + std::to_string(getpid()) + "." +
                    std::to_string(g_temp_counter++);
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
      throw OptionError("cannot write " + final_path + " (moving " + temp + " onto it): " +
                        std::strerror(error) + "; no output was changed");
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
