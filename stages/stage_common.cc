#include "stage_common.h"

#include <exception>

#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {
namespace {
bool g_quiet = false;
bool g_verbose = false;
}  // namespace

void AddLoggingOptions(CLI::App* app) {
  app->add_flag("-q,--quiet", g_quiet, "Only print warnings and errors");
  app->add_flag("-v,--verbose", g_verbose, "Print debugging detail");
}

int RunStageMain(CLI::App* app, int argc, char** argv, const std::function<int()>& body) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app->exit(e);
    return code == 0 ? kExitOk : kExitOptions;
  }
  SetLogLevel(g_quiet ? LogLevel::kWarning : (g_verbose ? LogLevel::kDebug : LogLevel::kInfo));
  try {
    return body();
  } catch (const OptionError& e) {
    LogError(e.what());
    return kExitOptions;
  } catch (const InputError& e) {
    LogError(e.what());
    return kExitInput;
  } catch (const FitError& e) {
    LogError(e.what());
    return kExitFit;
  } catch (const std::exception& e) {
    LogError(std::string("internal error: ") + e.what());
    return 4;
  }
}

}  // namespace wattcal
