#include "synth/power_sensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace wattcal {

std::string NvidiaSmiTimestamp(double epoch_s) {
  const int64_t ms_total = static_cast<int64_t>(std::llround(epoch_s * 1000.0));
  const std::time_t seconds = static_cast<std::time_t>(ms_total / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     static_cast<int>(ms_total % 1000));
}

PowerSensorSimulator::PowerSensorSimulator(const CampaignSpec& campaign, Rng* rng)
    : c_(campaign), rng_(rng), temperature_c_(campaign.ambient_c) {}

void PowerSensorSimulator::Run(double duration_s, double target_w, double f_core_mhz,
                               double f_mem_mhz) {
  segments_.push_back({now_s_, now_s_ + duration_s, target_w});
  if (!initialised_) Refresh(now_s_);
  const double end_s = now_s_ + duration_s;
  while (true) {
    const double next_refresh_s = last_refresh_s_ + c_.sensor_refresh_ms * 1e-3;
    const double next_poll_s = next_poll_s_;
    if (std::min(next_refresh_s, next_poll_s) >= end_s) break;
    if (next_refresh_s <= next_poll_s) {
      Refresh(next_refresh_s);
    } else {
      Poll(next_poll_s, f_core_mhz, f_mem_mhz);
      next_poll_s_ += rng_->Uniform(c_.sample_interval_min_ms, c_.sample_interval_max_ms) * 1e-3;
    }
  }
  now_s_ = end_s;
  // Segments older than the lag are no longer needed.
  while (segments_.size() > 2 && segments_[1].end_s < now_s_ - 1.0)
    segments_.erase(segments_.begin());
}

double PowerSensorSimulator::TargetAt(double t) const {
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    if (t >= it->start_s) return it->target_w;
  }
  return segments_.empty() ? 0.0 : segments_.front().target_w;
}

void PowerSensorSimulator::Refresh(double t) {
  const double dt = t - last_refresh_s_;
  const double target = TargetAt(t - c_.sensor_lag_ms * 1e-3);
  if (!initialised_) {
    filtered_w_ = target;
    initialised_ = true;
  }
  const double tau_s = (target > filtered_w_ ? c_.rise_tau_ms : c_.decay_tau_ms) * 1e-3;
  filtered_w_ += (target - filtered_w_) * (1.0 - std::exp(-dt / tau_s));
  temperature_c_ += (c_.ambient_c + c_.thermal_resistance_c_per_w * filtered_w_ - temperature_c_) *
                    (1.0 - std::exp(-dt / c_.thermal_tau_s));
  const double leakage = 1.0 + c_.leakage_per_c * (temperature_c_ - c_.reference_c);
  reading_w_ = filtered_w_ * leakage + c_.sensor_noise_w * rng_->Normal();
  last_refresh_s_ = t;
}

void PowerSensorSimulator::Poll(double t, double f_core_mhz, double f_mem_mhz) {
  // nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,clocks.mem,temperature.gpu
  log_ += fmt::format("{}, 0, {:.2f} W, {} MHz, {} MHz, {}\n",
                      NvidiaSmiTimestamp(kCampaignEpochStartS + t), reading_w_, f_core_mhz,
                      f_mem_mhz, static_cast<int>(std::lround(temperature_c_)));
  ++samples_;
}

}  // namespace wattcal
