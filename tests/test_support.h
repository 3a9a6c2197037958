// Helpers shared by the tests: where the real datasets are, scratch directories, and
// running a stage executable as a user would.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "io/corpus.h"
#include "report/gnuplot_figure.h"  // GnuplotAvailable()

namespace CLI {
class App;
}  // namespace CLI

namespace wattcal::testing {

// The one way of finding the shared data. ../shared/datasets beside the checkout (or
// $WATTCAL_DATASETS); empty when absent.
std::string DatasetsDir();

// Path of a file under the datasets folder ("" when the folder is absent).
std::string Dataset(const std::string& relative);

// ../shared/samples beside the checkout (or $WATTCAL_SAMPLES); empty when absent. Sample: a file
// under it ("" when the folder is absent).
std::string SamplesDir();
std::string Sample(const std::string& relative);

// True when WATTCAL_REQUIRE_DATA=1 (.ci/run sets it): what a test needs from outside the repo —
// the shared datasets and samples, gnuplot, python3 — is then required, and its absence fails
// the test instead of skipping it.
bool DataRequired();

// A fresh empty directory for the running test (removed and recreated on each call), under the
// system's temporary folder. It is removed when the test ends, unless the test failed (then the
// test's output names it: "scratch folder kept: DIR") or WATTCAL_KEEP_TEST_DIRS=1 is set.
std::string ScratchDir();
// The same for the outputs a test suite's SetUpTestSuite shares with its tests (ScratchDir needs a
// running test): removed when the suite ends unless one of its tests failed, or
// WATTCAL_KEEP_TEST_DIRS=1. The process id keeps test binaries of different build folders, run at
// the same time, apart.
std::string SuiteScratchDir(const std::string& suite);

// The Python interpreter the build found (CMake: the first python3 on PATH that imports numpy and
// scipy, else the first python3), for every script a test runs; "" when none was found.
std::string Python3();
// Whether Python3() imports each of `modules` ("numpy, scipy").
bool PythonHas(const std::string& modules);

// Writes `content` to `path` and returns `path`.
std::string WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);
bool FileExists(const std::string& path);

// A file under tests/fixtures/ (the repository's own small inputs; no outside data).
std::string FixturePath(const std::string& relative);

// tests/fixtures/gpmtool/train_sp_int_dram.csv split for tests that edit it in memory: `header`
// is its four header lines (with their newlines), `rows` its data rows (without newlines), the
// first on line `first_row_line`. Text(rows) joins a header and rows back into a file.
struct GpmtoolFixture {
  std::string header;
  std::vector<std::string> rows;
  int first_row_line = 0;
  std::string Text(const std::vector<std::string>& edited_rows) const;
};
const GpmtoolFixture& SmallGpmtoolFixture();

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs the stage `program` ("wattcal-calibrate") with `args` as a user would, and captures its
// stdout and stderr together: in this process, through the same command its executable's main
// calls (stages/commands.h: parsing, checks, exit status), with file descriptors 1 and 2 sent
// to a file meanwhile. A program that is not a stage command (wattcal, wattcal-capture) runs as
// RunExecutable.
CommandResult RunStage(const std::string& program, const std::vector<std::string>& args);
// Runs the executable build/bin/<program> with `args` (each shell-quoted) and captures its
// output. A program that is not built, or that a signal killed (exit 128 + N), fails the
// calling test.
CommandResult RunExecutable(const std::string& program, const std::vector<std::string>& args);
// Parses `args` (without the program's name) with `app`, as a stage's command does; CLI11's
// errors (CLI::ParseError: an unknown name, a failed check) propagate.
void ParseCommandLine(CLI::App* app, const std::vector<std::string>& args);
// Runs a /bin/sh command line and captures its stdout and stderr together.
CommandResult RunShell(const std::string& command);
// `s` quoted for /bin/sh.
std::string ShellQuote(const std::string& s);

// The provenance file that lists `output` among its outputs (util/output.h FindProvenanceOf);
// "" when none does. HasProvenance: whether one does.
std::string ProvenancePath(const std::string& output);
bool HasProvenance(const std::string& output);

// A stage's refusal (STYLE.md rule 6, SPEC.md "Contracts every stage keeps"): exit status `code`
// exactly (RunStage already fails a crash or a missing binary), every one of `mentions` in its
// output (the file:line, field or option the message names), and none of `outputs` on disk
// afterwards, nor a provenance record naming one.
void ExpectRefused(const CommandResult& r, int code, const std::vector<std::string>& mentions,
                   const std::vector<std::string>& outputs);

// Records files a test wrote by hand into the run folder `run_dir` as the outputs of one run of
// `stage`, each {path, role}: the provenance record that stage would have left in
// run_dir/provenance/ (what wattcal-report finds a run's files through). The files keep their bytes.
void RecordStageRun(const std::string& run_dir, const std::string& stage,
                    const std::vector<std::pair<std::string, std::string>>& outputs);

// A one-domain corpus ("core", default 1000 MHz) read from `path`, one benchmark per row ("b0",
// "b1", ... on lines 2, 3, ...) with the given utilisation columns: an activity corpus, or with
// `measured` a training corpus whose row i drew 100 + i W.
Corpus CorpusFromColumns(const std::vector<std::string>& names,
                         const std::vector<std::vector<double>>& columns,
                         const std::string& path = "synthetic.csv", bool measured = false);
// `n` utilisations drawn uniformly from [0, 1).
std::vector<double> Uniform(std::mt19937* rng, int n);

// A test seed derived from the running test's name (STYLE.md rule 4).
unsigned SeedFromTestName();

// Runs `body`; expects an InputError at `line` whose message holds every one of `parts`.
void ExpectInputError(const std::function<void()>& body, int64_t line,
                      const std::vector<std::string>& parts);

// Whether one of `warnings` holds every one of `parts`.
bool Warned(const std::vector<std::string>& warnings, const std::vector<std::string>& parts);

// Figures are sized for one paper column (report/gnuplot_figure.h): 800 x 600 unless the figure
// says otherwise (the square scatter, charts that grow with their workloads or benchmarks).
// A complete PNG of that size: signature, IHDR first with width and height, IEND last.
void ExpectFigurePng(const std::string& path, const FigureSize& size = FigureSize());
// A complete SVG document of that size: XML declaration or <svg> first, its width, height and
// view box, closed by </svg>.
void ExpectFigureSvg(const std::string& path, const FigureSize& size = FigureSize());
// The width and height in a PNG's IHDR ({0, 0} when the file is not a PNG).
FigureSize PngSize(const std::string& path);

}  // namespace wattcal::testing
// A test that needs something from outside the repository: skipped with a clear message when
// it is absent, or failed when DataRequired() (CI). Usable in a test body or SetUp().
#define WATTCAL_NEED(present, what)                                   \
  do {                                                                \
    if (!(present)) {                                                 \
      if (::wattcal::testing::DataRequired()) {                       \
        FAIL() << what << " (WATTCAL_REQUIRE_DATA=1: required here)"; \
      } else {                                                        \
        GTEST_SKIP() << what;                                         \
      }                                                               \
    }                                                                 \
  } while (0)

// Gnuplot, for the figures named.
#define WATTCAL_REQUIRE_GNUPLOT(figures)                                   \
  WATTCAL_NEED(::wattcal::GnuplotAvailable(),                              \
               "gnuplot not found: install gnuplot (e.g. apt-get install " \
               "gnuplot-nox) and re-run cmake to test the " figures)

// Python3() with `modules` ("numpy, scipy") importable, for what `what` names.
#define WATTCAL_REQUIRE_PYTHON(modules, what)                          \
  WATTCAL_NEED(::wattcal::testing::PythonHas(modules),                 \
               "python3 with " modules " not found (the build found '" \
                   << ::wattcal::testing::Python3()                    \
                   << "'; scripts/install_deps.sh installs them, then re-run cmake): " what)

// ../shared/datasets.
#define WATTCAL_REQUIRE_DATASETS()                                                                 \
  WATTCAL_NEED(!::wattcal::testing::DatasetsDir().empty(),                                         \
               "real datasets not found: expected ../shared/datasets beside the checkout (or set " \
               "WATTCAL_DATASETS)")

// ../shared/samples.
#define WATTCAL_REQUIRE_SAMPLES()                                                                \
  WATTCAL_NEED(!::wattcal::testing::SamplesDir().empty(),                                        \
               "profiler samples not found: expected ../shared/samples beside the checkout (or " \
               "set WATTCAL_SAMPLES)")
