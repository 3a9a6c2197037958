#include "app_windows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>

#include "marks_file.h"
#include "util/errors.h"

namespace wattcal::capture {

namespace {

constexpr const char* kHeader = "kernel,start_us,end_us,run,mark,steps";
// The header before the steps column, still read.
constexpr const char* kHeaderWithoutSteps = "kernel,start_us,end_us,run,mark";

std::vector<std::string> SplitCommas(const std::string& line) {
  std::vector<std::string> fields(1);
  for (char c : line) {
    if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

bool IsWorkloadName(const std::string& s) {
  if (s.empty() || s.size() > 120 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
          c == '+'))
      return false;
  }
  return true;
}

std::string AppWindowProblem(const AppWindow& w) {
  if (!IsWorkloadName(w.window.kernel)) {
    return fmt::format("kernel '{}' is not a workload name (letters, digits and _ . - +)",
                       w.window.kernel);
  }
  if (w.window.start_us <= 0)
    return fmt::format("start_us {} is not a time since the epoch", w.window.start_us);
  if (w.window.end_us <= w.window.start_us) {
    return fmt::format(
        "end_us {} is not after start_us {}: a window of no length has nothing to measure",
        w.window.end_us, w.window.start_us);
  }
  if (w.run < 1) return fmt::format("run {} is not a run number (1, 2, ...)", w.run);
  if (!w.mark.empty() && !IsMarkName(w.mark)) {
    return fmt::format("mark '{}' is not a window name ({})", w.mark, kMarkNameRule);
  }
  if (w.steps < 0) return fmt::format("steps {} is not a step count (>= 1, empty when unknown)", w.steps);
  return "";
}

std::pair<size_t, size_t> FirstOverlap(const std::vector<AppWindow>& windows) {
  std::vector<size_t> order(windows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto key = [&](size_t i) {
    return std::make_pair(windows[i].window.kernel, windows[i].window.start_us);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  for (size_t k = 1; k < order.size(); ++k) {
    const AppWindow& before = windows[order[k - 1]];
    const AppWindow& after = windows[order[k]];
    if (before.window.kernel == after.window.kernel &&
        after.window.start_us < before.window.end_us) {
      return {order[k - 1], order[k]};
    }
  }
  return {std::string::npos, std::string::npos};
}

std::string AppWindowsCsv(const std::vector<AppWindow>& windows) {
  std::string s = std::string(kHeader) + "\n";
  for (const AppWindow& w : windows) {
    s += fmt::format("{},{},{},{},{},{}\n", w.window.kernel, w.window.start_us, w.window.end_us,
                     w.run, w.mark, w.steps > 0 ? std::to_string(w.steps) : std::string());
  }
  return s;
}

std::vector<AppWindow> ReadAppWindows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open the windows file");
  std::vector<AppWindow> out;
  std::vector<int64_t> lines;
  std::string line;
  int64_t n = 0;
  size_t fields = 6;
  while (std::getline(in, line)) {
    ++n;
    if (in.eof()) {
      throw InputError(path, n, "",
                       "the last line has no end of line: the file was cut short (a recording "
                       "stopped while writing it?)");
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1) {
      if (line != kHeader && line != kHeaderWithoutSteps) {
        throw InputError(
            path, 1, "",
            fmt::format("'{}' is not the header of an applications capture's windows ({})", line,
                        kHeader));
      }
      fields = line == kHeader ? 6 : 5;
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string> f = SplitCommas(line);
    if (f.size() != fields)
      throw InputError(path, n, "", fmt::format("expected {} fields, got {}", fields, f.size()));
    AppWindow w;
    w.window.kernel = f[0];
    int64_t run = 0;
    const char* columns[] = {"start_us", "end_us", "run"};
    int64_t* targets[] = {&w.window.start_us, &w.window.end_us, &run};
    for (int i = 0; i < 3; ++i) {
      if (!ParseWholeNumber(f[1 + i], targets[i])) {
        throw InputError(path, n, columns[i], fmt::format("'{}' is not a whole number", f[1 + i]));
      }
    }
    if (run > std::numeric_limits<int>::max())
      throw InputError(path, n, "run", fmt::format("{} is too large", run));
    w.run = static_cast<int>(run);
    w.mark = f[4];
    if (fields == 6 && !f[5].empty() && (!ParseWholeNumber(f[5], &w.steps) || w.steps < 1)) {
      throw InputError(path, n, "steps",
                       fmt::format("'{}' is not a step count: a whole number >= 1, or empty when "
                                   "the program gave none",
                                   f[5]));
    }
    const std::string problem = AppWindowProblem(w);
    if (!problem.empty()) throw InputError(path, n, "", problem);
    out.push_back(w);
    lines.push_back(n);
  }
  const auto [a, b] = FirstOverlap(out);
  if (b != std::string::npos) {
    throw InputError(
        path, lines[b], "",
        fmt::format("this window of '{}' ({} to {} us) overlaps the one on line {} ({} to {} us): "
                    "its energy would be counted twice",
                    out[b].window.kernel, out[b].window.start_us, out[b].window.end_us, lines[a],
                    out[a].window.start_us, out[a].window.end_us));
  }
  if (n == 0) throw InputError(path, 0, "", fmt::format("empty: expected the header {}", kHeader));
  return out;
}

}  // namespace wattcal::capture
