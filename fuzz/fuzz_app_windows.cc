// windows.csv of an applications capture (microbench/app_windows.h): every window it reads keeps
// the rules, and writing them back gives the same file (what the recorder rewrites when it adds).
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "app_windows.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  try {
    const std::vector<wattcal::capture::AppWindow> windows = wattcal::capture::ReadAppWindows(path);
    for (const wattcal::capture::AppWindow& w : windows) {
      if (!wattcal::capture::AppWindowProblem(w).empty()) std::abort();
    }
    if (wattcal::capture::FirstOverlap(windows).second != std::string::npos) std::abort();
    const std::string again = wattcal::capture::AppWindowsCsv(windows);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << again;
    if (wattcal::capture::AppWindowsCsv(wattcal::capture::ReadAppWindows(path)) != again)
      std::abort();
  } catch (const ::wattcal::InputError&) {
  }
  return 0;
}
