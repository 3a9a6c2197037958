// The NVML sampler thread of wattcal-capture (the suite and --app alike): one reading every
// sample_ms, stamped with the system clock, appended to a power log (nvml_power.csv's columns,
// those the GPU's first reading gave); with a FieldRecording, the meter's GPM metrics too, one row
// per tick into the field log (gpm_fields.csv, capture_writer.h FieldLogHeader).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include "capture_writer.h"
#include "runner.h"

namespace wattcal::capture {

class Sampler {
 public:
  // Starts sampling into a new file `path` (written with its header).
  // `fields.path` not empty: also records fields.gpm_metric_ids there (the meter's
  // StartFieldSampling has succeeded).
  Sampler(PowerMeter& meter, const std::string& path, double sample_ms, const FieldRecording& fields = {})
      : meter_(meter),
        writer_(path, PowerColumns::Of(meter.Read())),  // the columns this GPU's NVML gives
        period_(std::chrono::duration<double, std::milli>(sample_ms)) {
    if (!fields.path.empty()) {
      field_file_ = std::fopen(fields.path.c_str(), "wb");
      if (field_file_ == nullptr) throw std::runtime_error("cannot write " + fields.path);
      std::fputs(FieldLogHeader(fields.names).c_str(), field_file_);
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~Sampler() { Stop(); }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  // Takes one last reading and stops; the file is complete afterwards.
  void Stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      writer_.Flush();
    }
    if (field_file_ != nullptr) {
      std::fclose(field_file_);
      field_file_ = nullptr;
    }
  }
  int64_t samples() const { return samples_; }
  // Blocks until the log holds a reading (so that windows start inside it).
  void WaitForFirstSample() const {
    while (samples_ == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

 private:
  using Clock = std::chrono::steady_clock;
  void Loop() {
    auto next = Clock::now();
    int64_t since_flush = 0;
    while (!stop_) {
      Tick();
      if (++since_flush >= 200) {
        writer_.Flush();
        if (field_file_ != nullptr) std::fflush(field_file_);
        since_flush = 0;
      }
      next += std::chrono::duration_cast<Clock::duration>(period_);
      const auto now = Clock::now();
      if (next < now) next = now;  // fell behind: no burst of catch-up readings
      std::this_thread::sleep_until(next);
    }
    Tick();
  }
  // One power reading and, when recording fields, the GPM metrics since the previous tick.
  void Tick() {
    writer_.Append(meter_.Read());
    if (field_file_ != nullptr) std::fputs(FieldLogLine(meter_.ReadFields()).c_str(), field_file_);
    ++samples_;
  }

  PowerMeter& meter_;
  PowerLogWriter writer_;
  std::chrono::duration<double, std::milli> period_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> samples_{0};
  std::FILE* field_file_ = nullptr;  // the field log, when recording fields
  std::thread thread_;
};

}  // namespace wattcal::capture
