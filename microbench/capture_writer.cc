#include "capture_writer.h"

#include <fmt/format.h>

#include <cmath>
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

PowerColumns PowerColumns::Of(const PowerSample& probe) {
  PowerColumns c;
  c.power_instant = probe.power_instant_mw >= 0;
  c.energy = probe.energy_mj >= 0;
  c.sm_clock = probe.sm_clock_mhz >= 0;
  c.mem_clock = probe.mem_clock_mhz >= 0;
  c.temperature = probe.temperature_c >= 0;
  c.clocks_event_reasons = probe.has_clocks_event_reasons;
  c.power_limit = probe.power_limit_mw >= 0;
  return c;
}

std::string PowerLogHeader(const PowerColumns& c) {
  std::string s = "timestamp_us,power_mw";
  if (c.power_instant) s += ",power_instant_mw";
  if (c.energy) s += ",energy_mj";
  if (c.sm_clock) s += ",sm_clock_mhz";
  if (c.mem_clock) s += ",mem_clock_mhz";
  if (c.temperature) s += ",temperature_c";
  if (c.clocks_event_reasons) s += ",clocks_event_reasons";
  if (c.power_limit) s += ",power_limit_mw";
  return s + "\n";
}

std::string FieldLogHeader(const std::vector<std::string>& names) {
  std::string line = "timestamp_us";
  for (const std::string& n : names) line += "," + n;
  return line + "\n";
}

std::string FieldLogLine(const FieldSample& s) {
  std::string line = std::to_string(s.timestamp_us);
  for (double v : s.values) line += std::isfinite(v) ? fmt::format(",{:.3f}", v) : std::string(",");
  return line + "\n";
}

std::string PowerLogLine(const PowerSample& s, const PowerColumns& c) {
  std::string line = fmt::format("{},{}", s.timestamp_us, Value(s.power_mw));
  if (c.power_instant) line += "," + Value(s.power_instant_mw);
  if (c.energy) line += "," + Value(s.energy_mj);
  if (c.sm_clock) line += "," + Value(s.sm_clock_mhz);
  if (c.mem_clock) line += "," + Value(s.mem_clock_mhz);
  if (c.temperature) line += "," + Value(s.temperature_c);
  if (c.clocks_event_reasons) {
    line += "," + (s.has_clocks_event_reasons ? fmt::format("0x{:x}", s.clocks_event_reasons) : std::string("N/A"));
  }
  if (c.power_limit) line += "," + Value(s.power_limit_mw);
  return line + "\n";
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

PowerLogWriter::PowerLogWriter(const std::string& path, const PowerColumns& columns) : columns_(columns) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) throw std::runtime_error(fmt::format("{}: cannot write the power log", path));
  const std::string header = PowerLogHeader(columns_);
  std::fputs(header.c_str(), file_);
}

PowerLogWriter::~PowerLogWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void PowerLogWriter::Append(const PowerSample& s) {
  const std::string line = PowerLogLine(s, columns_);
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
