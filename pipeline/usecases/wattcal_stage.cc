#include "usecases/wattcal_stage.h"

#include <unistd.h>

#include <boost/filesystem.hpp>
#include <fmt/format.h>

namespace wattcal {

namespace {

struct StageEntry {
  const char* name;
  const char* summary;
};

const StageEntry kStages[] = {
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
    {"fields", "DCGM / NVML GPM fields: field tables -> corpus, per-job energy from sacct"},
    {"fleet", "many GPUs' captures -> per-GPU models, how the GPUs differ (fleet report)"},
    {"report", "figures and an HTML/Markdown index per run"},
    {"check", "runs' headline figures against the expected values"},
};

std::string Help(const std::string& dir) {
  std::string s =
      "wattcal: calibrate GPU power models from measurement dumps and validate them.\n\n"
      "usage: wattcal <stage> [options]    (wattcal <stage> --help for a stage's options)\n\n"
      "stages:\n";
  for (const StageEntry& e : kStages) {
    const bool built = boost::filesystem::exists(dir + "/wattcal-" + e.name);
    s += fmt::format("  {:<10} {}{}\n", e.name, e.summary, built ? "" : "  [not built yet]");
  }
  return s;
}

}  // namespace

std::string ExecutableDir() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  buffer[n] = '\0';
  return boost::filesystem::path(buffer).parent_path().string();
}

WattcalStageReport RunWattcalStage(const WattcalStageOptions& o) {
  o.Check();
  WattcalStageReport r;
  const std::vector<std::string>& args = o.args;
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    r.summary = Help(o.program_dir);
    r.exit_code = args.empty() ? 1 : 0;
    return r;
  }
  const std::string program = o.program_dir + "/wattcal-" + args[0];
  if (!boost::filesystem::exists(program)) {
    r.error = "error: unknown stage '" + args[0] + "'\n\n";
    r.summary = Help(o.program_dir);
    r.exit_code = 1;
    return r;
  }
  r.program = program;
  r.argv.push_back("wattcal-" + args[0]);
  r.argv.insert(r.argv.end(), args.begin() + 1, args.end());
  return r;
}

}  // namespace wattcal
