// The marks file a program writes for wattcal-capture --app (microbench/marks_file.h): every
// window it reads keeps the rules the recorder relies on (a step count, when given, is >= 1).
#include <cstdlib>

#include "fuzz_support.h"
#include "marks_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  try {
    for (const wattcal::capture::MarkedWindow& w : wattcal::capture::ReadMarks(path)) {
      if (!wattcal::capture::IsMarkName(w.name) || w.begin_ns <= 0 || w.end_ns < w.begin_ns ||
          w.begin_line < 1 || w.end_line <= w.begin_line || w.steps < 0) {
        std::abort();  // a window the reader should have refused
      }
    }
  } catch (const ::wattcal::InputError&) {
  }
  return 0;
}
