#include "io/ubench_cfg.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "util/errors.h"
#include "util/text_input.h"

namespace wattcal {

namespace {

bool ParseInt64(const std::string& text, int64_t* value) {
  if (text.empty()) return false;
  size_t pos = 0;
  try {
    *value = std::stoll(text, &pos);
  } catch (const std::exception&) {
    return false;
  }
  return pos == text.size();
}

}  // namespace

std::vector<UbenchConfig> ReadUbenchCfg(const std::string& path, int sm_count, int warp_size) {
  std::ifstream in(path);
  if (!in)
    throw InputError(path, 0, "",
                     std::string("cannot open the ubench list") + ": " + std::strerror(errno));
  std::vector<UbenchConfig> lines;
  std::string text;
  int64_t line_no = 0;
  static const char* kFields[] = {"name", "iterations", "active_sms", "lanes_per_warp"};
  while (std::getline(in, text)) {
    ++line_no;
    if (line_no == 1) StripUtf8ByteOrderMark(&text);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    std::istringstream words(text);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    if (fields.empty() || fields[0][0] == '#') continue;
    if (fields.size() < 2) {
      throw InputError(path, line_no, "iterations",
                       "expected `<name> <iterations> [active SMs] [lanes per warp]`");
    }
    if (fields.size() > 4) {
      throw InputError(path, line_no, "",
                       fmt::format("{} fields, expected at most 4 "
                                   "(`<name> <iterations> [active SMs] "
                                   "[lanes per warp]`)",
                                   fields.size()));
    }
    UbenchConfig c;
    c.name = fields[0];
    c.line = line_no;
    c.active_sms = sm_count;
    c.lanes_per_warp = warp_size;
    int64_t v = 0;
    if (!ParseInt64(fields[1], &v) || v <= 0) {
      throw InputError(path, line_no, kFields[1], "'" + fields[1] + "' is not a positive integer");
    }
    c.iterations = v;
    if (fields.size() >= 3) {
      if (!ParseInt64(fields[2], &v) || v < 1 || v > sm_count) {
        throw InputError(path, line_no, kFields[2],
                         fmt::format("'{}' is not an SM count in [1, {}]", fields[2], sm_count));
      }
      c.active_sms = static_cast<int>(v);
    }
    if (fields.size() == 4) {
      if (!ParseInt64(fields[3], &v) || v < 1 || v > warp_size) {
        throw InputError(path, line_no, kFields[3],
                         fmt::format("'{}' is not a lane count in [1, {}]", fields[3], warp_size));
      }
      c.lanes_per_warp = static_cast<int>(v);
    }
    lines.push_back(c);
  }
  if (lines.empty()) throw InputError(path, 0, "", "the ubench list names no microbenchmark");
  return lines;
}

}  // namespace wattcal
