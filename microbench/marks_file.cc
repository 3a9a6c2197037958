#include "marks_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "util/errors.h"

namespace wattcal::capture {

namespace {

// A whole number of nanoseconds > 0 that fits an int64.
bool ParseNs(const std::string& text, int64_t* ns) { return ParseWholeNumber(text, ns) && *ns > 0; }

// The rest of `line` after its first `words` words (the reason of an `invalid` line).
std::string Rest(const std::string& line, int words) {
  size_t i = 0;
  for (int w = 0; w < words; ++w) {
    i = line.find_first_not_of(" \t", i);
    i = i == std::string::npos ? i : line.find_first_of(" \t", i);
    if (i == std::string::npos) return "";
  }
  i = line.find_first_not_of(" \t", i);
  return i == std::string::npos ? "" : line.substr(i);
}

// The step count of an `end` line: a whole number >= 1.
int64_t ParseSteps(const std::string& text, const std::string& path, int64_t line) {
  int64_t steps = 0;
  if (!ParseWholeNumber(text, &steps)) {
    throw InputError(path, line, "",
                     fmt::format("'{}' is not a step count: the fourth field of an 'end' line is the "
                                 "steps the program ran in the window, a whole number >= 1 (digits "
                                 "only, no sign)",
                                 text));
  }
  if (steps == 0) {
    throw InputError(path, line, "",
                     "a step count of zero: a window that ran no step has no energy per step (give "
                     "the steps the window ran, >= 1, or leave the field out)");
  }
  return steps;
}

}  // namespace

bool ParseWholeNumber(const std::string& text, int64_t* value) {
  if (text.empty() || text.size() > 19) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *value = static_cast<int64_t>(v);
  return true;
}

const char* const kMarkNameRule =
    "one word: 1 to 200 bytes without white space, control bytes, ',' or '\"' (windows.csv's mark "
    "column holds it)";

bool IsMarkName(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == ',' || c == '"') return false;
  }
  return true;
}

std::vector<MarkedWindow> ReadMarks(const std::string& path) {
  std::vector<MarkedWindow> windows;
  std::ifstream in(path, std::ios::binary);
  if (!in) return windows;
  std::string line;
  int64_t number = 0;
  bool open = false;
  MarkedWindow current;
  bool ended_with_newline = true;
  while (std::getline(in, line)) {
    ++number;
    ended_with_newline = !in.eof();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::string verb, name, time, steps, extra;
    words >> verb;
    if (verb.empty() || verb[0] == '#') continue;
    words >> name >> time >> steps >> extra;
    if (verb == "invalid") {  // a helper's refusal of a mark (marks.h, wattcal_marks.py)
      throw InputError(path, number, "",
                       fmt::format("the marks helper refused a mark: {} (the program went on without that "
                                   "window: fix the name, then record again)",
                                   Rest(line, 1).empty() ? std::string("no reason given") : Rest(line, 1)));
    }
    if ((verb != "begin" && verb != "end") || name.empty() || time.empty() || !extra.empty() ||
        (verb == "begin" && !steps.empty())) {
      throw InputError(path, number, "",
                       fmt::format("'{}' is not a mark: expected 'begin NAME NANOSECONDS' or 'end NAME "
                                   "NANOSECONDS [STEPS]'{}",
                                   line, ended_with_newline ? "" : " (the line is cut short: did the program stop "
                                                                   "while writing it?)"));
    }
    int64_t ns = 0;
    if (!ParseNs(time, &ns)) {
      throw InputError(path, number, "",
                       fmt::format("'{}' is not a time: marks carry CLOCK_REALTIME in whole nanoseconds since the "
                                   "Unix epoch",
                                   time));
    }
    if (!IsMarkName(name)) {
      throw InputError(path, number, "",
                       fmt::format("the window name '{}' is not {}", name, kMarkNameRule));
    }
    if (verb == "begin") {
      if (open) {
        throw InputError(path, number, "",
                         fmt::format("'begin {}' inside the window '{}' begun on line {}: marked windows do not "
                                     "nest (end '{}' first, or record the two as separate --app runs)",
                                     name, current.name, current.begin_line, current.name));
      }
      current = MarkedWindow();
      current.name = name;
      current.begin_ns = ns;
      current.begin_line = number;
      open = true;
      continue;
    }
    if (!open) {
      throw InputError(path, number, "",
                       fmt::format("'end {}' without a 'begin {}' before it (unmatched end)", name, name));
    }
    if (name != current.name) {
      throw InputError(path, number, "",
                       fmt::format("'end {}' but the open window is '{}' (begun on line {})", name, current.name,
                                   current.begin_line));
    }
    if (ns < current.begin_ns) {
      throw InputError(path, number, "",
                       fmt::format("'end {}' at {} ns is before its begin on line {} ({} ns)", name, ns,
                                   current.begin_line, current.begin_ns));
    }
    current.end_ns = ns;
    current.end_line = number;
    if (!steps.empty()) current.steps = ParseSteps(steps, path, number);
    windows.push_back(current);
    open = false;
  }
  if (open) {
    throw InputError(path, current.begin_line, "",
                     fmt::format("'begin {}' is never ended (did the program stop inside the window?)",
                                 current.name));
  }
  return windows;
}

}  // namespace wattcal::capture
