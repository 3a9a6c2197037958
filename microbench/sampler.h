// The NVML sampler thread of wattcal-capture (the suite and --app alike): one reading every
// sample_ms, stamped with the system clock, appended to a power log (nvml_power.csv's columns,
// those the GPU's first reading gave).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "capture_writer.h"
#include "runner.h"

namespace wattcal::capture {

class Sampler {
 public:
  // Starts sampling into a new file `path` (written with its header).
  Sampler(PowerMeter& meter, const std::string& path, double sample_ms)
      : meter_(meter),
        writer_(path, PowerColumns::Of(meter.Read())),  // the columns this GPU's NVML gives
        period_(std::chrono::duration<double, std::milli>(sample_ms)) {
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
      writer_.Append(meter_.Read());
      ++samples_;
      if (++since_flush >= 200) {
        writer_.Flush();
        since_flush = 0;
      }
      next += std::chrono::duration_cast<Clock::duration>(period_);
      const auto now = Clock::now();
      if (next < now) next = now;  // fell behind: no burst of catch-up readings
      std::this_thread::sleep_until(next);
    }
    writer_.Append(meter_.Read());
    ++samples_;
  }

  PowerMeter& meter_;
  PowerLogWriter writer_;
  std::chrono::duration<double, std::milli> period_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> samples_{0};
  std::thread thread_;
};

}  // namespace wattcal::capture
