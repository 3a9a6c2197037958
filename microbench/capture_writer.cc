#include "capture_writer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace wattcal::capture {

namespace {

std::string Value(int64_t v) { return v < 0 ? std::string("N/A") : std::to_string(v); }

// Benchmark names are identifiers; anything else is quoted the CSV way.
std::string Field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace

std::string WindowsCsv(const std::vector<WindowRecord>& windows) {
  std::string s = "kernel,start_us,end_us,launches,iters,blocks,threads,lanes\n";
  for (const WindowRecord& w : windows) {
    s += fmt::format("{},{},{},{},{},{},{},{}\n", Field(w.kernel), w.start_us, w.end_us, w.launches,
                     w.iters, w.blocks, w.threads, w.lanes);
  }
  return s;
}

std::string IdleWindowsCsv(const std::vector<IdleRecord>& idle) {
  std::string s = "kernel,start_us,end_us\n";
  for (const IdleRecord& w : idle) s += fmt::format("{},{},{}\n", Field(w.kernel), w.start_us, w.end_us);
  return s;
}

std::string PowerLogHeader() {
  return "timestamp_us,power_mw,power_instant_mw,energy_mj,sm_clock_mhz,mem_clock_mhz,"
         "temperature_c,clocks_event_reasons,power_limit_mw\n";
}

std::string PowerLogLine(const PowerSample& s) {
  return fmt::format("{},{},{},{},{},{},{},{},{}\n", s.timestamp_us, Value(s.power_mw),
                     Value(s.power_instant_mw), Value(s.energy_mj), Value(s.sm_clock_mhz),
                     Value(s.mem_clock_mhz), Value(s.temperature_c),
                     s.has_clocks_event_reasons ? fmt::format("0x{:x}", s.clocks_event_reasons)
                                                : std::string("N/A"),
                     Value(s.power_limit_mw));
}

std::string ProfilePlanCsv(const std::vector<ProfileEntry>& entries) {
  std::string s = "name,iters\n";
  for (const ProfileEntry& e : entries) s += fmt::format("{},{}\n", e.name, e.iters);
  return s;
}

std::vector<ProfileEntry> ReadProfilePlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the profile plan", path));
  std::vector<ProfileEntry> entries;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (n == 1) {
      if (line != "name,iters") {
        throw std::runtime_error(fmt::format("{}:1: expected the header name,iters", path));
      }
      continue;
    }
    if (line.empty()) continue;
    const size_t comma = line.rfind(',');
    ProfileEntry e;
    if (comma == std::string::npos || comma == 0) {
      throw std::runtime_error(fmt::format("{}:{}: expected name,iters, got '{}'", path, n, line));
    }
    e.name = line.substr(0, comma);
    try {
      size_t used = 0;
      e.iters = std::stoll(line.substr(comma + 1), &used);
      if (used != line.size() - comma - 1 || e.iters < 1) throw std::invalid_argument("iters");
    } catch (const std::exception&) {
      throw std::runtime_error(
          fmt::format("{}:{}: iters: expected a whole number >= 1, got '{}'", path, n, line.substr(comma + 1)));
    }
    entries.push_back(e);
  }
  if (n == 0) throw std::runtime_error(fmt::format("{}: empty profile plan", path));
  return entries;
}

void WriteTextFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write", tmp));
    out << content;
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("{}: write failed", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot rename to {}: {}", tmp, path, ec.message()));
}

PowerLogWriter::PowerLogWriter(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) throw std::runtime_error(fmt::format("{}: cannot write the power log", path));
  const std::string header = PowerLogHeader();
  std::fputs(header.c_str(), file_);
}

PowerLogWriter::~PowerLogWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void PowerLogWriter::Append(const PowerSample& s) {
  const std::string line = PowerLogLine(s);
  std::fputs(line.c_str(), file_);
  ++samples_;
}

void PowerLogWriter::Flush() { std::fflush(file_); }

nlohmann::json CaptureJson(const CaptureInfo& info, const nlohmann::json& options) {
  auto opt = [](int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json j;
  j["format"] = "wattcal-capture";
  j["wattcal_version"] = WATTCAL_VERSION;
  j["gpu"] = {
      {"name", info.gpu_name},
      {"uuid", info.gpu_uuid},
      {"pci_bus_id", info.pci_bus_id},
      {"compute_capability", fmt::format("{}.{}", info.compute_capability / 10, info.compute_capability % 10)},
      {"sm_count", info.sm_count},
      {"power_limit_mw", opt(info.power_limit_mw)},
      {"max_sm_clock_mhz", opt(info.max_sm_clock_mhz)},
      {"max_mem_clock_mhz", opt(info.max_mem_clock_mhz)},
      {"idle_sm_clock_mhz", opt(info.idle_sm_clock_mhz)},
      {"idle_mem_clock_mhz", opt(info.idle_mem_clock_mhz)},
  };
  j["versions"] = {
      {"driver", info.driver_version},
      {"cuda_driver", info.cuda_driver_version},
      {"cuda_runtime", info.cuda_runtime_version},
      {"ncu", info.ncu_version},
  };
  j["options"] = options;
  return j;
}

}  // namespace wattcal::capture
