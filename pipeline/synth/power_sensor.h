// The virtual GPU's board power as its sensor and nvidia-smi see it: a piecewise-constant
// power target (one value per kernel run or idle gap), lagged and first-order filtered, read
// every sensor_refresh_ms with Gaussian noise and temperature-dependent leakage, and polled by
// nvidia-smi at irregular intervals. Shared by every campaign the virtual GPU writes
// (virtual_gpu.h: TPDS-style V-F campaigns; accelwattch_sweeps.h: AccelWattch §4 sweeps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synth/virtual_gpu.h"
#include "util/rng.h"

namespace wattcal {

// 2026-01-01 00:00:00 UTC: every campaign's clock starts here (seconds since the Unix epoch).
constexpr double kCampaignEpochStartS = 1767225600.0;

// nvidia-smi's timestamp format, "YYYY/MM/DD HH:MM:SS.mmm" (printed as UTC).
std::string NvidiaSmiTimestamp(double epoch_s);

// Simulates the sensor and the poller. Time starts at 0 (= kCampaignEpochStartS in the log).
// Draws from `rng` in a fixed order, so one seed gives one log, byte for byte.
class PowerSensorSimulator {
 public:
  // `campaign` and `rng` must outlive the simulator.
  PowerSensorSimulator(const CampaignSpec& campaign, Rng* rng);

  // Runs `duration_s` seconds with the power target `target_w` at clocks (f_core, f_mem).
  void Run(double duration_s, double target_w, double f_core_mhz, double f_mem_mhz);

  // Seconds since the start of the campaign.
  double now_s() const { return now_s_; }
  // The nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,clocks.mem,
  // temperature.gpu --format=csv log so far, header included.
  const std::string& log() const { return log_; }
  // Rows of the log so far (header excluded).
  int64_t samples() const { return samples_; }

 private:
  struct Segment {
    double start_s, end_s, target_w;
  };

  double TargetAt(double t) const;
  void Refresh(double t);
  void Poll(double t, double f_core_mhz, double f_mem_mhz);

  const CampaignSpec& c_;
  Rng* rng_;
  std::vector<Segment> segments_;
  double now_s_ = 0.0;
  double last_refresh_s_ = 0.0;
  double next_poll_s_ = 0.0;
  bool initialised_ = false;
  double filtered_w_ = 0.0;
  double reading_w_ = 0.0;
  double temperature_c_;
  std::string log_ =
      "timestamp, index, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], "
      "temperature.gpu\n";
  int64_t samples_ = 0;
};

}  // namespace wattcal
