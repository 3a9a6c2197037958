#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

namespace fs = boost::filesystem;

namespace wattcal::testing {

std::string DatasetsDir() {
  if (const char* env = std::getenv("WATTCAL_DATASETS")) {
    return fs::is_directory(env) ? std::string(env) : std::string();
  }
  const fs::path candidate = fs::path(WATTCAL_SOURCE_DIR) / ".." / "shared" / "datasets";
  return fs::is_directory(candidate) ? fs::canonical(candidate).string() : std::string();
}

std::string Dataset(const std::string& relative) {
  const std::string dir = DatasetsDir();
  return dir.empty() ? std::string() : dir + "/" + relative;
}

std::string ScratchDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "wattcal_test_" + std::to_string(getpid());
  if (info != nullptr) name += std::string("_") + info->test_suite_name() + "_" + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool FileExists(const std::string& path) { return fs::exists(path); }

namespace {
std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}
}  // namespace

CommandResult RunStage(const std::string& program, const std::vector<std::string>& args) {
  std::string command = Quote(std::string(WATTCAL_BIN_DIR) + "/" + program);
  for (const std::string& a : args) command += " " + Quote(a);
  command += " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

unsigned SeedFromTestName() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  // FNV-1a: stable across runs and platforms (std::hash is not guaranteed to be).
  unsigned h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace wattcal::testing
