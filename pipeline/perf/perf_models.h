// Run time at another core frequency from counters measured at a base frequency: CRISP
// (Nath & Tullsen, MICRO'15, Eqs. 3-5 and the higher-frequency variant of §5.2), CRISP-L
// (CRISP §5.3) and the baselines of CRISP §2.1 the seed compares against.
//
// With s = f_base / f_target and every count in base-clock cycles (crisp_counters.h):
//
//   crisp         C total, L adjusted LCP, S_l load stalls, S_s store stalls:
//                   s >= 1:  T = max(L, s (L - S_l)) + max(C - L, s (C - L - S_s)) (CRISP Eqs. 3-5)
//                   s <  1:  T = L + S_s + s (C - L - S_s)                           (CRISP §5.2)
//   crisp_l       the same with L = load_outstanding_cycles (CRISP §5.3: every computation cycle
//                 overlapped by some load counts as overlapped by the critical path)
//   proportional  T = s C
//   stall         T = M + s (C - M),  M = stall_cycles                                (CRISP Eq. 2)
//   lead          the same with M = lead_cycles
//   crit          the same with M = crit_cycles
//   miss          the same with M = min(miss_cycles, C) (MISS's fixed-latency estimate can
//                 exceed the run time; more than all of it cannot be memory)
//
// and predicted_time_s = T / f_base. Every model returns C exactly at s = 1. The linear
// models are used the same way above and below the base frequency (CRISP Eq. 2 is symmetric).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/crisp_counters.h"

namespace wattcal {

enum class PerfModelKind { kCrisp, kCrispL, kProportional, kStall, kLead, kCrit, kMiss };

// Every model, in the order outputs list them.
const std::vector<PerfModelKind>& AllPerfModels();
// "crisp", "crisp_l", "proportional", "stall", "lead", "crit", "miss".
const char* PerfModelName(PerfModelKind model);
// The optional counter column a model needs ("" for crisp and proportional).
const char* PerfModelCounterColumn(PerfModelKind model);
// True when `counters` has what `model` needs.
bool PerfModelApplies(PerfModelKind model, const CrispCounters& counters);

// CRISP's contract (see above), in base-clock cycles. `s` = f_base / f_target > 0.
double CrispCycles(double total_cycles, double lcp_cycles, double load_stall_cycles,
                   double store_stall_cycles, double s);
// CRISP Eq. 2: T = memory + s (total - memory), in base-clock cycles.
double LinearModelCycles(double total_cycles, double memory_cycles, double s);

// Predicted run time in base-clock cycles / in seconds at `target_mhz` (> 0). The model must
// apply (PerfModelApplies); throws std::invalid_argument otherwise (a programming error).
double PredictCycles(PerfModelKind model, const CrispCounters& counters, double target_mhz);
double PredictTimeS(PerfModelKind model, const CrispCounters& counters, double target_mhz);

struct TimePredictionOptions {
  // Models to evaluate; empty = every model the counters allow (crisp and proportional always).
  std::vector<PerfModelKind> models;
  // Target core frequencies, MHz: finite, > 0, strictly ascending (default: the seven P-states
  // of CRISP's GTX 480, CRISP §4).
  std::vector<double> targets_mhz = {100, 200, 300, 400, 500, 600, 700};

  bool Check(std::string* error) const;
};

struct TimePrediction {
  std::string kernel;
  std::string model;  // PerfModelName, or any name in a times file read back
  double target_mhz = 0.0;
  double predicted_time_s = 0.0;
  int64_t line = 0;  // line in the file it was read from (0 when computed)
};

// Predictions for every kernel (input order) x model (AllPerfModels order) x target (ascending).
// Throws OptionError when `options` fails Check(), and InputError (naming `counters_path`, the
// kernel's line and the missing column) when a model asked for explicitly lacks its counter.
// Models left to the default whose column is absent are skipped; `skipped` (optional) receives
// their names.
std::vector<TimePrediction> PredictTimes(const std::vector<CrispCounters>& counters,
                                         const TimePredictionOptions& options,
                                         const std::string& counters_path,
                                         std::vector<std::string>* skipped = nullptr);

// kernel,model,target_mhz,predicted_time_s — one row per prediction, in the given order.
std::string TimesToCsv(const std::vector<TimePrediction>& rows);

// Reads a times file (the format above; target_mhz also as target_ghz/target_khz). Model names
// may be any non-empty text. Throws InputError for bad cells, times <= 0, and a repeated
// (kernel, model, target) triple.
std::vector<TimePrediction> ReadTimes(const std::string& path);

// One true (measured or simulated) run time.
struct ActualTime {
  std::string kernel;
  double target_mhz = 0.0;
  double actual_time_s = 0.0;
  int64_t line = 0;
};

// kernel,target_mhz,actual_time_s. Throws InputError for bad cells, times <= 0 and a repeated
// (kernel, target) pair.
std::vector<ActualTime> ReadActualTimes(const std::string& path);
std::string ActualTimesToCsv(const std::vector<ActualTime>& rows);

}  // namespace wattcal
