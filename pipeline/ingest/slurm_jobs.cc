// sacct --parsable2 tables (ingest/slurm_jobs.h).
#include "ingest/slurm_jobs.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <string_view>

#include "ingest/power_log.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

std::vector<std::string_view> SplitBar(std::string_view line) {
  std::vector<std::string_view> cells;
  for (;;) {
    const size_t bar = line.find('|');
    cells.push_back(line.substr(0, bar));
    if (bar == std::string_view::npos) return cells;
    line.remove_prefix(bar + 1);
  }
}

// A whole number of at most 6 digits; -1 otherwise.
int SmallNumber(std::string_view s) {
  if (s.empty() || s.size() > 6) return -1;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// "0-1,3" -> {0, 1, 3}; false when `text` is not such a list.
bool ParseIndexList(std::string_view text, std::vector<int>* out) {
  out->clear();
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    const int a = SmallNumber(item.substr(0, dash));
    const int b = dash == std::string_view::npos ? a : SmallNumber(item.substr(dash + 1));
    if (a < 0 || b < a || b - a > 1024) return false;
    for (int i = a; i <= b; ++i) out->push_back(i);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return !out->empty();
}

// The indices of Slurm's `IDX:0-1,3` detail inside a cell (up to `)` or the end); false when
// the cell holds none.
bool FindIdx(std::string_view cell, std::vector<int>* out) {
  const size_t at = cell.find("IDX:");
  if (at == std::string_view::npos) return false;
  std::string_view rest = cell.substr(at + 4);
  rest = rest.substr(0, rest.find(')'));
  return ParseIndexList(rest, out);
}

// gres/gpu=N (also gres/gpu:h100=N) in AllocTRES; 0 when absent.
int GpuCount(std::string_view tres) {
  size_t at = 0;
  while ((at = tres.find("gres/gpu", at)) != std::string_view::npos) {
    const size_t eq = tres.find('=', at);
    const size_t end = tres.find(',', at);
    if (eq != std::string_view::npos && (end == std::string_view::npos || eq < end)) {
      const std::string_view key = tres.substr(at, eq - at);
      if (key == "gres/gpu") return SmallNumber(tres.substr(eq + 1, end - eq - 1));
    }
    at += 8;
  }
  return 0;
}

class SacctReader {
 public:
  SacctReader(const std::string& path, const SlurmOptions& options)
      : path_(path), options_(options) {}

  std::vector<SlurmJob> Read() {
    const std::string text = ReadFileText(path_, "sacct table");
    std::string_view rest = StripUtf8ByteOrderMark(std::string_view(text));
    std::vector<SlurmJob> jobs;
    int64_t line = 0;
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      std::string_view l = rest.substr(0, nl);
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      ++line;
      while (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (TrimView(l).empty()) continue;
      if (header_.empty()) {
        SetHeader(l, line);
        continue;
      }
      const std::vector<std::string_view> cells = SplitBar(l);
      if (cells.size() != header_.size()) {
        throw InputError(path_, line, "",
                         fmt::format("{} cells, but the header names {} columns (sacct "
                                     "--parsable2 separates them with '|')",
                                     cells.size(), header_.size()));
      }
      const std::string_view id = cells[Col("JobID")];
      if (id.find('.') != std::string_view::npos) continue;  // a job step
      jobs.push_back(Job(cells, line));
    }
    if (header_.empty()) throw InputError(path_, 0, "", "empty sacct table");
    return jobs;
  }

 private:
  void SetHeader(std::string_view l, int64_t line) {
    for (std::string_view name : SplitBar(l)) header_.emplace_back(TrimView(name));
    for (const char* required : {"JobID", "Start", "End"}) {
      if (Find(required) < 0) {
        throw InputError(path_, line, required,
                         "missing column: print the table with sacct --parsable2 "
                         "--format=JobID,Start,End,NodeList,AllocTRES");
      }
    }
  }
  int Find(std::string_view name) const {
    for (size_t i = 0; i < header_.size(); ++i) {
      if (ToLower(header_[i]) == ToLower(name)) return static_cast<int>(i);
    }
    return -1;
  }
  size_t Col(std::string_view name) const { return static_cast<size_t>(Find(name)); }

  double Time(std::string_view cell, int64_t line, const char* column) const {
    double t = 0.0;
    if (!ParseSmiTimestamp(cell.data(), cell.size(), &t)) {
      throw InputError(
          path_, line, column,
          fmt::format("expected a time like 2026-11-29T10:00:00, got '{}'", std::string(cell)));
    }
    return t - options_.utc_offset_h * 3600.0;
  }

  SlurmJob Job(const std::vector<std::string_view>& cells, int64_t line) const {
    SlurmJob job;
    job.path = path_;
    job.line = line;
    job.job_id = std::string(cells[Col("JobID")]);
    job.start_s = Time(cells[Col("Start")], line, "Start");
    const std::string_view end = cells[Col("End")];
    job.end_s = end == "Unknown" || end == "None" ? std::numeric_limits<double>::quiet_NaN()
                                                  : Time(end, line, "End");
    if (job.end_s < job.start_s) {
      throw InputError(path_, line, "End", "the job ends before it starts");
    }
    if (Find("NodeList") >= 0) job.nodes = std::string(cells[Col("NodeList")]);
    if (Find("AllocTRES") >= 0) job.gpu_count = GpuCount(cells[Col("AllocTRES")]);
    for (const char* column : {"GPUs", "GpuIdx", "GRES_IDX"}) {
      const int c = Find(column);
      if (c < 0 || cells[c].empty()) continue;
      if (!FindIdx(cells[c], &job.gpus) && !ParseIndexList(cells[c], &job.gpus)) {
        throw InputError(path_, line, column,
                         fmt::format("expected GPU indices like 0,1 or 0-3 or IDX:0-1, got '{}'",
                                     std::string(cells[c])));
      }
    }
    for (size_t c = 0; c < cells.size() && job.gpus.empty(); ++c) FindIdx(cells[c], &job.gpus);
    if (!job.gpus.empty()) {
      if (job.gpu_count > 0 && job.gpu_count != static_cast<int>(job.gpus.size())) {
        throw InputError(path_, line, "AllocTRES",
                         fmt::format("gres/gpu={} but the job's GPU indices name {}", job.gpu_count,
                                     job.gpus.size()));
      }
      job.gpu_count = static_cast<int>(job.gpus.size());
    }
    return job;
  }

  const std::string& path_;
  const SlurmOptions& options_;
  std::vector<std::string> header_;
};

}  // namespace

std::vector<SlurmJob> ReadSacctJobs(const std::string& path, const SlurmOptions& options) {
  return SacctReader(path, options).Read();
}

bool NodeListHas(const std::string& node_list, const std::string& node) {
  // Split at the commas outside brackets: "a1,b[2-3,5]" -> "a1", "b[2-3,5]".
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= node_list.size(); ++i) {
    if (i < node_list.size() && node_list[i] == '[') ++depth;
    if (i < node_list.size() && node_list[i] == ']') --depth;
    if (i < node_list.size() && !(node_list[i] == ',' && depth == 0)) continue;
    const std::string item = node_list.substr(begin, i - begin);
    begin = i + 1;
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      if (item == node) return true;
      continue;
    }
    const std::string prefix = item.substr(0, open);
    if (node.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string suffix = node.substr(prefix.size());
    std::string_view ranges(item);
    ranges = ranges.substr(open + 1, ranges.find(']') - open - 1);
    while (!ranges.empty()) {
      const size_t comma = ranges.find(',');
      const std::string_view r = ranges.substr(0, comma);
      const size_t dash = r.find('-');
      const std::string_view lo = r.substr(0, dash);
      const std::string_view hi = dash == std::string_view::npos ? lo : r.substr(dash + 1);
      // Zero-padded ranges (01-04): the node's number has the same width.
      if (suffix.size() == lo.size() && SmallNumber(suffix) >= SmallNumber(lo) &&
          SmallNumber(suffix) <= SmallNumber(hi) && SmallNumber(suffix) >= 0)
        return true;
      if (comma == std::string_view::npos) break;
      ranges.remove_prefix(comma + 1);
    }
  }
  return false;
}

}  // namespace wattcal
