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
#include <mutex>
#include <set>
#include <stdexcept>

#include "util/errors.h"
#include "util/json_check.h"
#include "util/sha256.h"

namespace fs = boost::filesystem;

namespace wattcal {

const char* WattcalVersion() { return WATTCAL_VERSION; }

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

void OutputSet::StageManifest(const std::string& final_path, const std::string& stage,
                              const std::vector<std::string>& inputs,
                              const nlohmann::json& options) {
  nlohmann::json manifest;
  manifest["wattcal_version"] = WattcalVersion();
  manifest["stage"] = stage;
  manifest["output"] = {{"path", final_path}, {"sha256", Sha256OfFile(TempPathOf(final_path))}};
  nlohmann::json input_list = nlohmann::json::array();
  for (const std::string& input : inputs) {
    input_list.push_back({{"path", input},
                          {"sha256", Sha256OfFile(input)},
                          {"bytes", static_cast<uint64_t>(fs::file_size(input))}});
  }
  manifest["inputs"] = input_list;
  manifest["options"] = options;
  StageText(final_path + ".manifest.json", DumpJson(manifest));
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
