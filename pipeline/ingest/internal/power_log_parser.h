// The base class of PowerLogReader's parsers (ingest/power_log_csv.cc, power_log_dmon.cc):
// the row interface, what the log holds and the GPU selection (power_log_parser.cc). Internal
// to ingest/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ingest/internal/power_log_fields.h"
#include "ingest/power_log.h"

namespace wattcal {

using power_log_internal::ValueStatus;

// ============================================================================= parsers

class PowerLogReader::Parser {
 public:
  Parser(std::string path, const PowerLogOptions& options, PowerLogSummary* stats)
      : path_(std::move(path)), options_(options), stats_(stats) {}
  virtual ~Parser() = default;

  // Reads the next row of the chosen GPU. Returns false at the end of the log. Sets
  // *power_status to kOk, or to why the row's power value is missing (kMissing for [N/A],
  // kEmpty, kNaN; the time is still filled in).
  virtual bool NextRow(PowerSample* sample, ValueStatus* power_status) = 0;

  // Called once at the end of the log: checks that PowerLogOptions::gpu was found.
  void Finish() const;

  PowerLogFormat format = PowerLogFormat::kNvidiaSmi;
  std::string power_field;
  PowerKind power_kind = PowerKind::kUnknown;
  bool has_core_clock = false;
  bool has_memory_clock = false;
  bool has_temperature = false;
  bool has_energy_counter = false;
  bool has_clock_reasons = false;
  bool has_power_limit = false;

 protected:
  // GPU selection. `ids` are the row's id values (index, uuid, ...); returns whether the row
  // belongs to the chosen GPU. With no gpu option, a second GPU is an InputError.
  bool SelectGpu(const std::string_view* ids, size_t count, int64_t line, const std::string& field);

  std::string path_;
  PowerLogOptions options_;
  PowerLogSummary* stats_;

 private:
  bool gpu_matched_ = false;
  bool have_first_gpu_ = false;
  std::string first_gpu_;
  int64_t first_gpu_line_ = 0;
  std::vector<std::string> seen_gpus_;
};

}  // namespace wattcal
