// wattcal: the front door. `wattcal <stage> ...` runs wattcal-<stage> from the same folder.
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Stage {
  const char* name;
  const char* summary;
};

const Stage kStages[] = {
    {"synth", "generate measurements from a known truth (virtual GPU)"},
    {"ingest", "raw power logs and counter exports -> tidy CSVs"},
    {"calibrate", "measurements -> calibrated power model (DVFS, fixed)"},
    {"predict", "model + activity -> power at any V-F pair, per-component breakdown"},
    {"validate", "model vs. held-out measurements, or k-fold CV by benchmark"},
    {"constant", "constant power from frequency sweeps (AccelWattch Eq. 3)"},
    {"static", "power-gating and divergence-aware static power"},
    {"idle", "per-idle-SM power"},
    {"compare", "relative-architecture comparison"},
    {"port", "carry a model to another GPU or technology node"},
    {"perf", "CRISP run-time prediction at other core frequencies"},
    {"dvfs", "energy-, EDP- or ED2P-optimal V-F choice from run time and power"},
    {"report", "figures and an HTML/Markdown index per run"},
    {"check", "runs' headline figures against the expected values"},
};

std::string SelfDir() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  buffer[n] = '\0';
  return boost::filesystem::path(buffer).parent_path().string();
}

void PrintHelp(const std::string& dir) {
  std::printf("wattcal: calibrate GPU power models from measurement dumps and validate them.\n\n"
              "usage: wattcal <stage> [options]    (wattcal <stage> --help for a stage's options)\n\n"
              "stages:\n");
  for (const Stage& s : kStages) {
    const bool built = boost::filesystem::exists(dir + "/wattcal-" + s.name);
    std::printf("  %-10s %s%s\n", s.name, s.summary, built ? "" : "  [not built yet]");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = SelfDir();
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    PrintHelp(dir);
    return argc < 2 ? 1 : 0;
  }
  const std::string stage = argv[1];
  const std::string program = dir + "/wattcal-" + stage;
  if (!boost::filesystem::exists(program)) {
    std::fprintf(stderr, "error: unknown stage '%s'\n\n", stage.c_str());
    PrintHelp(dir);
    return 1;
  }
  std::vector<char*> args;
  std::string name = "wattcal-" + stage;
  args.push_back(name.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(program.c_str(), args.data());
  std::perror(("cannot run " + program).c_str());
  return 1;
}
