// Shared by the fuzz targets: wattcal's parsers read files, so each input is written to a
// per-process scratch file first. Any exception other than the documented error types, a
// crash or a sanitizer report is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "util/errors.h"
#include "util/logging.h"

namespace wattcal::fuzz {

inline const std::string& ScratchPath() {
  static const std::string path = "/tmp/wattcal_fuzz_" + std::to_string(getpid()) + ".csv";
  return path;
}

inline const std::string& WriteInput(const uint8_t* data, size_t size) {
  SetLogLevel(LogLevel::kQuiet);
  std::FILE* f = std::fopen(ScratchPath().c_str(), "wb");
  if (f != nullptr) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return ScratchPath();
}

}  // namespace wattcal::fuzz

// Runs `body`; the errors a parser may legitimately throw for bad input are swallowed.
#define WATTCAL_FUZZ_BODY(body)            \
  try {                                    \
    body;                                  \
  } catch (const ::wattcal::InputError&) { \
  } catch (const ::wattcal::OptionError&) { \
  }                                        \
  return 0
