#include "test_support.h"

#include "util/output.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <sstream>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "util/errors.h"

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

std::string SamplesDir() {
  if (const char* env = std::getenv("WATTCAL_SAMPLES")) {
    return fs::is_directory(env) ? std::string(env) : std::string();
  }
  const fs::path candidate = fs::path(WATTCAL_SOURCE_DIR) / ".." / "shared" / "samples";
  return fs::is_directory(candidate) ? fs::canonical(candidate).string() : std::string();
}

std::string Sample(const std::string& relative) {
  const std::string dir = SamplesDir();
  return dir.empty() ? std::string() : dir + "/" + relative;
}

bool DataRequired() {
  const char* v = std::getenv("WATTCAL_REQUIRE_DATA");
  return v != nullptr && std::string(v) == "1";
}

namespace {

bool KeepTestDirs() {
  const char* v = std::getenv("WATTCAL_KEEP_TEST_DIRS");
  return v != nullptr && std::string(v) == "1";
}

// The scratch folders made since the last test (or suite, or the program) ended.
struct ScratchFolders {
  std::vector<fs::path> test, suite, program;
};
ScratchFolders& Made() {
  static ScratchFolders folders;
  return folders;
}

void Remember(std::vector<fs::path>* list, const fs::path& dir) {
  if (std::find(list->begin(), list->end(), dir) == list->end()) list->push_back(dir);
}

// Removes `dirs` when `passed` (and WATTCAL_KEEP_TEST_DIRS is not 1), else names each one kept.
void Release(std::vector<fs::path>* dirs, bool passed, const std::string& whose) {
  for (const fs::path& dir : *dirs) {
    if (passed && !KeepTestDirs()) {
      boost::system::error_code ec;
      fs::remove_all(dir, ec);
    } else {
      std::cout << "scratch folder kept: " << dir.string() << " ("
                << (passed ? "WATTCAL_KEEP_TEST_DIRS=1" : whose + " failed") << ")\n";
    }
  }
  dirs->clear();
}

// Removes each test's scratch folders when it ends, and the suites' and the program's when they
// do (kept when they failed, or with WATTCAL_KEEP_TEST_DIRS=1). Listeners hear a test's end
// before the result printer, so the kept folder is named above "[  FAILED  ]".
class ScratchCleaner : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    Release(&Made().test, !info.result()->Failed(), "the test");
  }
  void OnTestSuiteEnd(const ::testing::TestSuite& suite) override {
    Release(&Made().suite, !suite.Failed(), "a test of the suite");
  }
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    Release(&Made().program, !unit.Failed(), "a test");
  }
};

const bool kScratchCleanerInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ScratchCleaner);
  return true;
}();

fs::path FreshDir(const std::string& name) {
  std::string safe = name;
  for (char& c : safe) {
    if (c == '/') c = '_';
  }
  const fs::path dir = fs::temp_directory_path() / safe;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

std::string ScratchDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "wattcal_test_" + std::to_string(getpid());
  if (info != nullptr) name += std::string("_") + info->test_suite_name() + "_" + info->name();
  const fs::path dir = FreshDir(name);
  Remember(info != nullptr ? &Made().test : &Made().program, dir);
  return dir.string();
}

std::string SuiteScratchDir(const std::string& suite) {
  const fs::path dir = FreshDir("wattcal_test_suite_" + suite + "_" + std::to_string(getpid()));
  Remember(&Made().suite, dir);
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

std::string FixturePath(const std::string& relative) {
  return (fs::path(WATTCAL_SOURCE_DIR) / "tests" / "fixtures" / relative).string();
}

std::string GpmtoolFixture::Text(const std::vector<std::string>& edited_rows) const {
  std::string text = header;
  for (const std::string& row : edited_rows) text += row + "\n";
  return text;
}

const GpmtoolFixture& SmallGpmtoolFixture() {
  static const GpmtoolFixture fixture = [] {
    const std::string path = FixturePath("gpmtool/train_sp_int_dram.csv");
    std::istringstream in(ReadFile(path));
    GpmtoolFixture f;
    std::string line;
    for (int i = 0; i < 4 && std::getline(in, line); ++i) f.header += line + "\n";
    while (std::getline(in, line)) {
      if (!line.empty()) f.rows.push_back(line);
    }
    f.first_row_line = 5;
    if (f.rows.empty()) ADD_FAILURE() << path << ": no rows (the fixture is missing or empty)";
    return f;
  }();
  return fixture;
}

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

CommandResult RunExecutable(const std::string& program, const std::vector<std::string>& args) {
  const std::string binary = std::string(WATTCAL_BIN_DIR) + "/" + program;
  // A missing binary would exit 127 through the shell, which an assertion on "non-zero" takes
  // for a refusal: it is a failure of its own.
  if (::access(binary.c_str(), X_OK) != 0) {
    ADD_FAILURE() << binary << " is not a built executable";
    return {127, binary + ": not built"};
  }
  std::string command = Quote(binary);
  for (const std::string& a : args) command += " " + Quote(a);
  CommandResult r = RunShell(command);
  // The shell reports a stage killed by signal N as 128 + N; no wattcal stage exits above 4, so
  // a crash never passes for an error exit.
  if (r.exit_code >= 128) {
    ADD_FAILURE() << program << " was killed by signal " << r.exit_code - 128 << " (exit "
                  << r.exit_code << "):\n"
                  << r.output;
  }
  return r;
}

namespace {

// Sends this process's stdout and stderr (file descriptors 1 and 2, so that iostreams, stdio and
// the programs a stage starts write there too) to an unlinked temporary file while it lives.
class CapturedOutput {
 public:
  CapturedOutput() {
    char path[] = "/tmp/wattcal_stage_output_XXXXXX";
    fd_ = ::mkstemp(path);
    if (fd_ < 0) throw std::runtime_error("cannot create a file for the stage's output");
    ::unlink(path);
    Flush();
    saved_out_ = ::dup(1);
    saved_err_ = ::dup(2);
    ::dup2(fd_, 1);
    ::dup2(fd_, 2);
  }
  CapturedOutput(const CapturedOutput&) = delete;
  CapturedOutput& operator=(const CapturedOutput&) = delete;
  ~CapturedOutput() {
    Restore();
    ::close(fd_);
  }
  // Puts stdout and stderr back and returns what was written meanwhile.
  std::string Finish() {
    Restore();
    std::string text;
    ::lseek(fd_, 0, SEEK_SET);
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd_, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
    return text;
  }

 private:
  static void Flush() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(stdout);
    std::fflush(stderr);
  }
  void Restore() {
    if (saved_out_ < 0) return;
    Flush();
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
    ::close(saved_out_);
    ::close(saved_err_);
    saved_out_ = saved_err_ = -1;
  }
  int fd_ = -1;
  int saved_out_ = -1;
  int saved_err_ = -1;
};

}  // namespace

CommandResult RunStage(const std::string& program, const std::vector<std::string>& args) {
  const StageCommand command = FindStageCommand(program);
  if (command == nullptr) return RunExecutable(program, args);
  std::vector<std::string> words = {program};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  CapturedOutput captured;
  CommandResult r;
  r.exit_code = command(static_cast<int>(words.size()), argv.data());
  r.output = captured.Finish();
  return r;
}

void ParseCommandLine(CLI::App* app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  app->parse(reversed);
}

std::string ShellQuote(const std::string& s) { return Quote(s); }

CommandResult RunShell(const std::string& shell_command) {
  const std::string command = "{ " + shell_command + "; } 2>&1";
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

std::string Python3() { return WATTCAL_PYTHON3; }

bool PythonHas(const std::string& modules) {
  if (Python3().empty()) return false;
  return RunShell(Quote(Python3()) + " -c " + Quote("import " + modules) + " >/dev/null 2>&1")
             .exit_code == 0;
}

void ExpectRefused(const CommandResult& r, int code, const std::vector<std::string>& mentions,
                   const std::vector<std::string>& outputs) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  for (const std::string& m : mentions) {
    EXPECT_NE(r.output.find(m), std::string::npos) << "expected '" << m << "' in\n" << r.output;
  }
  for (const std::string& o : outputs) {
    EXPECT_FALSE(fs::exists(o)) << o << " was left behind by a refused run";
    EXPECT_FALSE(HasProvenance(o)) << o << " has a provenance record after a refused run";
  }
}

Corpus CorpusFromColumns(const std::vector<std::string>& names,
                         const std::vector<std::vector<double>>& columns, const std::string& path,
                         bool measured) {
  Corpus c;
  c.path = path;
  if (!measured) c.kind = CorpusKind::kActivity;
  c.layout.domains.push_back({"core", 1000.0, names});
  const int n = static_cast<int>(columns.front().size());
  c.util_frac.resize(n, static_cast<int>(columns.size()));
  if (measured) c.power_w.resize(n);
  for (int i = 0; i < n; ++i) {
    c.benchmark.push_back("b" + std::to_string(i));
    c.line.push_back(i + 2);
    if (measured) c.power_w(i) = 100.0 + i;
    for (size_t j = 0; j < columns.size(); ++j)
      c.util_frac(i, static_cast<int>(j)) = columns[j][static_cast<size_t>(i)];
  }
  return c;
}

std::vector<double> Uniform(std::mt19937* rng, int n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(*rng);
  return v;
}

unsigned SeedFromTestName() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  // FNV-1a: stable across runs and platforms (std::hash is not guaranteed to be).
  unsigned h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return h;
}

void ExpectInputError(const std::function<void()>& body, int64_t line,
                      const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "expected an InputError at line " << line;
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
    }
  }
}

bool Warned(const std::vector<std::string>& warnings, const std::vector<std::string>& parts) {
  for (const std::string& w : warnings) {
    bool all = true;
    for (const std::string& p : parts) all = all && w.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

namespace {

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i)
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

}  // namespace

void ExpectFigurePng(const std::string& path, const FigureSize& size) {
  const std::string png = ReadFile(path);
  ASSERT_GT(png.size(), 33u) << path;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << path;
  EXPECT_EQ(png.substr(12, 4), "IHDR") << path;
  EXPECT_EQ(BigEndian32(png, 16), static_cast<uint32_t>(size.width_px)) << path;
  EXPECT_EQ(BigEndian32(png, 20), static_cast<uint32_t>(size.height_px)) << path;
  // Complete: the file ends with the IEND chunk.
  EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND") << path;
}

void ExpectFigureSvg(const std::string& path, const FigureSize& size) {
  const std::string svg = ReadFile(path);
  ASSERT_FALSE(svg.empty()) << path;
  EXPECT_TRUE(svg.rfind("<?xml", 0) == 0 || svg.rfind("<svg", 0) == 0) << svg.substr(0, 80);
  EXPECT_NE(svg.find("<svg"), std::string::npos) << path;
  EXPECT_NE(svg.find(fmt::format("width=\"{}\" height=\"{}\"", size.width_px, size.height_px)),
            std::string::npos)
      << path;
  EXPECT_NE(svg.find(fmt::format("viewBox=\"0 0 {} {}\"", size.width_px, size.height_px)),
            std::string::npos)
      << path;
  EXPECT_NE(svg.find("</svg>"), std::string::npos) << path;
}

FigureSize PngSize(const std::string& path) {
  const std::string png = ReadFile(path);
  if (png.size() < 24 || png.substr(12, 4) != "IHDR") return {0, 0};
  return {static_cast<int>(BigEndian32(png, 16)), static_cast<int>(BigEndian32(png, 20))};
}

std::string ProvenancePath(const std::string& output) { return FindProvenanceOf(output); }

bool HasProvenance(const std::string& output) { return !FindProvenanceOf(output).empty(); }

void RecordStageRun(const std::string& run_dir, const std::string& stage,
                    const std::vector<std::pair<std::string, std::string>>& outputs) {
  const std::string previous = RunFolder();
  SetRunFolder(run_dir);
  {
    OutputSet set;
    for (const auto& [path, role] : outputs) {
      set.StageText(path, ReadFile(path));
      set.StageProvenance(path, stage, {}, nlohmann::json::object(), role);
    }
    set.Commit();
  }
  SetRunFolder(previous);
}

}  // namespace wattcal::testing
