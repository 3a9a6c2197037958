#include "suite_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <set>

namespace wattcal::capture {

namespace {

struct KernelEntry {
  KernelKind kind;
  const char* name;
  int min_cc = 70;  // the suite's own needs (__nanosleep, tensor cores)
  int max_cc = 0;
  const char* needs = "";
};

constexpr KernelEntry kKernels[] = {
    {KernelKind::kSleep, "k_sleep"},
    {KernelKind::kIntAdd, "k_int_add"},
    {KernelKind::kIntMul, "k_int_mul"},
    {KernelKind::kIntXorshift, "k_int_xorshift"},
    {KernelKind::kFp32Fma, "k_fp32_fma"},
    {KernelKind::kFp32Add, "k_fp32_add"},
    {KernelKind::kFp32Mul, "k_fp32_mul"},
    {KernelKind::kFp64Fma, "k_fp64_fma"},
    {KernelKind::kFp64Add, "k_fp64_add"},
    {KernelKind::kFp16Hfma2, "k_fp16_hfma2"},
    {KernelKind::kSfuSin, "k_sfu_sin"},
    {KernelKind::kTensor, "k_tensor_hmma"},
    {KernelKind::kSharedLd, "k_shared_ld"},
    {KernelKind::kSharedSt, "k_shared_st"},
    {KernelKind::kL1Ld, "k_l1_ld"},
    {KernelKind::kL2Ld, "k_l2_ld"},
    {KernelKind::kDramLd, "k_dram_ld"},
    {KernelKind::kDramWrite, "k_dram_write"},
    {KernelKind::kDramCopy, "k_dram_copy"},
    {KernelKind::kMix, "k_mix"},
    {KernelKind::kIntMad, "k_int_mad"},
    {KernelKind::kFp64Mul, "k_fp64_mul"},
    {KernelKind::kSfuEx2, "k_sfu_ex2"},
    {KernelKind::kSfuRsqrt, "k_sfu_rsqrt"},
    {KernelKind::kConvert, "k_convert"},
    {KernelKind::kSharedConflict, "k_shared_conflict"},
    {KernelKind::kL2Write, "k_l2_write"},
    {KernelKind::kAtomicGlobal, "k_atomic_global"},
    {KernelKind::kAtomicShared, "k_atomic_shared"},
    {KernelKind::kTensorBf16, "k_tensor_bf16", 80, 0, "mma.sync bf16"},
    {KernelKind::kTensorTf32, "k_tensor_tf32", 80, 0, "mma.sync tf32"},
    {KernelKind::kTensorInt8, "k_tensor_int8", 80, 0, "mma.sync s8, IMMA"},
    {KernelKind::kTensorFp64, "k_tensor_fp64_dmma", 80, 0, "mma.sync f64, DMMA"},
    {KernelKind::kWgmmaFp16, "k_wgmma_fp16", 90, 90, "wgmma.mma_async, sm_90a: Hopper"},
    {KernelKind::kWgmmaBf16, "k_wgmma_bf16", 90, 90, "wgmma.mma_async, sm_90a: Hopper"},
    {KernelKind::kWgmmaFp8, "k_wgmma_fp8", 90, 90, "wgmma.mma_async, sm_90a: Hopper"},
    {KernelKind::kFp16Hfma2Fma, "k_fp16_hfma2_fma"},
};

const KernelEntry* Entry(KernelKind kind) {
  for (const KernelEntry& e : kKernels) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

std::string CcText(int cc) { return fmt::format("{}.{}", cc / 10, cc % 10); }

// Blocks of 256 threads per SM for the unit kernels: 2048 threads, full occupancy.
constexpr int kUnitBlocksPerSm = 8;
constexpr int kUnitThreads = 256;

Benchmark Make(const std::string& name, const std::string& group, KernelKind kind, int64_t blocks,
               int threads) {
  Benchmark b;
  b.name = name;
  b.group = group;
  b.kernel = kind;
  b.blocks = blocks;
  b.threads = threads;
  b.min_cc = KernelMinCc(kind);
  b.max_cc = KernelMaxCc(kind);
  return b;
}

std::string MixName(int index, const MixCounts& m, int blocks_per_sm) {
  return fmt::format("mix{:03d}_f{}_i{}_d{}_s{}_h{}_l{}_m{}_t{}_b{}", index, m.fma, m.int_ops,
                     m.fp64, m.sfu, m.shared, m.l2, m.dram, m.mma, blocks_per_sm);
}

// The SM counts of the sweep: powers of two up to 16, then eighths of the GPU, then all.
std::vector<int> SweepSms(int sm_count) {
  std::set<int> points;
  for (int p = 1; p <= 16 && p <= sm_count; p *= 2) points.insert(p);
  for (int k = 1; k <= 8; ++k) {
    points.insert(std::max(1, static_cast<int>(std::lround(sm_count * k / 8.0))));
  }
  points.insert(sm_count);
  return {points.begin(), points.end()};
}

}  // namespace

const char* KernelName(KernelKind kind) {
  const KernelEntry* e = Entry(kind);
  return e ? e->name : "k_unknown";
}

int KernelMinCc(KernelKind kind) {
  const KernelEntry* e = Entry(kind);
  return e ? e->min_cc : 70;
}

int KernelMaxCc(KernelKind kind) {
  const KernelEntry* e = Entry(kind);
  return e ? e->max_cc : 0;
}

const char* KernelNeeds(KernelKind kind) {
  const KernelEntry* e = Entry(kind);
  return e ? e->needs : "";
}

std::vector<KernelKind> AllKernels() {
  std::vector<KernelKind> all;
  for (const KernelEntry& e : kKernels) all.push_back(e.kind);
  return all;
}

bool MixCounts::Empty() const {
  return fma == 0 && int_ops == 0 && fp64 == 0 && sfu == 0 && shared == 0 && l2 == 0 &&
         dram == 0 && mma == 0;
}

bool SuiteOptions::Check(std::string* error) const {
  if (sm_count < 1 || sm_count > 4096) {
    *error = fmt::format("sm_count: {} is not an SM count in [1, 4096]", sm_count);
    return false;
  }
  if (mixes < 0 || mixes > 10000) {
    *error = fmt::format("--mixes: {} is not a count in [0, 10000]", mixes);
    return false;
  }
  return true;
}

namespace {

struct UnitEntry {
  const char* name;
  const char* group;
  KernelKind kind;
};

// The first units, one per kernel (also at lower occupancies: kOccupancyUnits).
constexpr UnitEntry kFirstUnits[] = {
    {"int_add", "unit", KernelKind::kIntAdd},       {"int_mul", "unit", KernelKind::kIntMul},
    {"int_xorshift", "unit", KernelKind::kIntXorshift}, {"fp32_fma", "unit", KernelKind::kFp32Fma},
    {"fp32_add", "unit", KernelKind::kFp32Add},     {"fp32_mul", "unit", KernelKind::kFp32Mul},
    {"fp64_fma", "unit", KernelKind::kFp64Fma},     {"fp64_add", "unit", KernelKind::kFp64Add},
    {"fp16_hfma2", "unit", KernelKind::kFp16Hfma2}, {"sfu_sin", "unit", KernelKind::kSfuSin},
    {"tensor_fp16", "unit", KernelKind::kTensor},   {"shared_ld", "unit", KernelKind::kSharedLd},
    {"shared_st", "unit", KernelKind::kSharedSt},   {"l1_ld", "unit", KernelKind::kL1Ld},
    {"l2_ld", "unit", KernelKind::kL2Ld},           {"dram_ld", "unit", KernelKind::kDramLd},
    {"dram_write", "unit", KernelKind::kDramWrite}, {"dram_copy", "unit", KernelKind::kDramCopy},
};
constexpr const char* kOccupancyUnits[] = {"int_add", "fp32_fma", "fp64_fma", "tensor_fp16",
                                           "shared_ld", "l2_ld", "dram_ld"};

// The units added with the tensor, atomic and toggle groups, and those groups' kernels: all
// of them also at lower occupancies.
constexpr UnitEntry kMoreUnits[] = {
    {"int_mad", "unit", KernelKind::kIntMad},
    {"fp64_mul", "unit", KernelKind::kFp64Mul},
    {"sfu_ex2", "unit", KernelKind::kSfuEx2},
    {"sfu_rsqrt", "unit", KernelKind::kSfuRsqrt},
    {"convert", "unit", KernelKind::kConvert},
    {"shared_conflict", "unit", KernelKind::kSharedConflict},
    {"l2_write", "unit", KernelKind::kL2Write},
    {"tensor_bf16", "tensor", KernelKind::kTensorBf16},
    {"tensor_tf32", "tensor", KernelKind::kTensorTf32},
    {"tensor_int8", "tensor", KernelKind::kTensorInt8},
    {"tensor_fp64", "tensor", KernelKind::kTensorFp64},
    {"wgmma_fp16", "tensor", KernelKind::kWgmmaFp16},
    {"wgmma_bf16", "tensor", KernelKind::kWgmmaBf16},
    {"wgmma_fp8", "tensor", KernelKind::kWgmmaFp8},
    {"atomic_global", "atomic", KernelKind::kAtomicGlobal},
    {"atomic_shared", "atomic", KernelKind::kAtomicShared},
};

// Added with issue 41, at full occupancy only: FP16 on the FMA pipe alone.
constexpr UnitEntry kFmaPipeUnits[] = {
    {"fp16_hfma2_fma", "unit", KernelKind::kFp16Hfma2Fma},
};

// The tensor families, by their unit's name (tensor_intensity: "<name>_sm<k>of8").
constexpr UnitEntry kTensorFamilies[] = {
    {"tensor_fp16", "tensor_intensity", KernelKind::kTensor},
    {"tensor_bf16", "tensor_intensity", KernelKind::kTensorBf16},
    {"tensor_tf32", "tensor_intensity", KernelKind::kTensorTf32},
    {"tensor_int8", "tensor_intensity", KernelKind::kTensorInt8},
    {"tensor_fp64", "tensor_intensity", KernelKind::kTensorFp64},
    {"wgmma_fp16", "tensor_intensity", KernelKind::kWgmmaFp16},
    {"wgmma_bf16", "tensor_intensity", KernelKind::kWgmmaBf16},
    {"wgmma_fp8", "tensor_intensity", KernelKind::kWgmmaFp8},
};

// The kernels that reached the 700 W cap at full use on the H100 (at 8, 1 and 2 blocks of 256
// per SM): their full-use windows get kCappedWindowS.
bool ReachesCapAtFullUse(KernelKind kind) {
  switch (kind) {
    case KernelKind::kTensor:
    case KernelKind::kTensorBf16:
    case KernelKind::kTensorTf32:
    case KernelKind::kWgmmaFp16:
    case KernelKind::kWgmmaBf16:
    case KernelKind::kWgmmaFp8: return true;
    default: return false;
  }
}

// One unit per kernel at full occupancy, then the same at 1 and 2 blocks of 256 per SM.
void AddUnits(int64_t sms, std::vector<Benchmark>* plan) {
  const int64_t full = sms * kUnitBlocksPerSm;
  for (const UnitEntry& u : kFirstUnits) plan->push_back(Make(u.name, u.group, u.kind, full, kUnitThreads));
  for (const UnitEntry& u : kMoreUnits) plan->push_back(Make(u.name, u.group, u.kind, full, kUnitThreads));
  for (const UnitEntry& u : kFmaPipeUnits) plan->push_back(Make(u.name, u.group, u.kind, full, kUnitThreads));
  std::vector<UnitEntry> lower;
  for (const char* name : kOccupancyUnits) {
    for (const UnitEntry& u : kFirstUnits) {
      if (std::string(u.name) == name) lower.push_back(u);
    }
  }
  lower.insert(lower.end(), std::begin(kMoreUnits), std::end(kMoreUnits));
  for (const UnitEntry& u : lower) {
    for (int b : {1, 2}) {
      plan->push_back(Make(fmt::format("{}_occ_b{}", u.name, b), "occupancy", u.kind, sms * b, kUnitThreads));
    }
  }
}

// FP32 FMAs per DRAM load and per L2 load; two units together.
void AddUnitMixes(int64_t sms, std::vector<Benchmark>* plan) {
  const int64_t full = sms * kUnitBlocksPerSm;
  for (int f : {0, 1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    Benchmark b = Make(fmt::format("fma_per_dram_{:03d}", f), "fma_per_byte", KernelKind::kMix, full, kUnitThreads);
    b.mix.fma = f;
    b.mix.dram = 1;
    plan->push_back(b);
  }
  for (int f : {4, 32}) {
    Benchmark b = Make(fmt::format("fma_per_l2_{:03d}", f), "fma_per_byte", KernelKind::kMix, full, kUnitThreads);
    b.mix.fma = f;
    b.mix.l2 = 1;
    plan->push_back(b);
  }
  Benchmark b = Make("mix_int_fp32", "unit_mix", KernelKind::kMix, full, kUnitThreads);
  b.mix.fma = 16;
  b.mix.int_ops = 16;
  plan->push_back(b);
  b = Make("mix_tensor_dram", "unit_mix", KernelKind::kMix, full, kUnitThreads);
  b.mix.mma = 4;
  b.mix.dram = 1;
  plan->push_back(b);
  b = Make("mix_fp64_dram", "unit_mix", KernelKind::kMix, full, kUnitThreads);
  b.mix.fp64 = 8;
  b.mix.dram = 1;
  plan->push_back(b);
  b = Make("mix_sfu_shared", "unit_mix", KernelKind::kMix, full, kUnitThreads);
  b.mix.sfu = 4;
  b.mix.shared = 4;
  plan->push_back(b);
}

// SM sweep (k_int_add, one 1024-thread block per SM) and lane sweep (k_fp32_fma with 1 ... 32
// active lanes per warp, 4 blocks of 256 per SM).
void AddSweeps(int sm_count, std::vector<Benchmark>* plan) {
  for (int n : SweepSms(sm_count)) {
    Benchmark b = Make(fmt::format("sm_sweep_int_add_{:03d}", n), "sm_sweep", KernelKind::kIntAdd, n, 1024);
    b.one_block_per_sm = true;
    plan->push_back(b);
  }
  for (int lanes : {1, 2, 4, 8, 12, 16, 20, 24, 28, 32}) {
    Benchmark b = Make(fmt::format("lane_sweep_fp32_fma_{:02d}", lanes), "lane_sweep", KernelKind::kFp32Fma,
                       static_cast<int64_t>(sm_count) * 4, kUnitThreads);
    b.lanes = lanes;
    plan->push_back(b);
  }
}

// Toggle sweep: DRAM write, DRAM read and FP32 FMA on words that differ from the previous one
// in 0, 25, 50 or 100% of their bits, at 8 (no suffix), 1 and 2 blocks of 256 threads per SM.
void AddToggleSweep(int64_t sms, std::vector<Benchmark>* plan) {
  const std::pair<const char*, KernelKind> toggled[] = {
      {"dram_write", KernelKind::kDramWrite}, {"dram_ld", KernelKind::kDramLd}, {"fp32_fma", KernelKind::kFp32Fma}};
  for (const auto& [name, kind] : toggled) {
    for (int pct : {0, 25, 50, 100}) {
      for (int bps : {kUnitBlocksPerSm, 1, 2}) {
        const std::string suffix = bps == kUnitBlocksPerSm ? "" : fmt::format("_b{}", bps);
        Benchmark b = Make(fmt::format("toggle_{}_{:03d}{}", name, pct, suffix), "toggle", kind, sms * bps,
                           kUnitThreads);
        b.toggle_pct = pct;
        plan->push_back(b);
      }
    }
  }
}

// Every tensor family on k/8 of the SMs (kIntensityEighths), one block of 256 threads per SM.
void AddTensorIntensities(int sm_count, std::vector<Benchmark>* plan) {
  for (const UnitEntry& u : kTensorFamilies) {
    for (int eighths : kIntensityEighths) {
      const int64_t sms = std::max<int64_t>(1, std::lround(sm_count * eighths / 8.0));
      Benchmark b =
          Make(fmt::format("{}_sm{}of8", u.name, eighths), u.group, u.kind, sms, kUnitThreads);
      b.one_block_per_sm = true;
      plan->push_back(b);
    }
  }
}

// Seeded random mixes at 1, 4 and 8 blocks of 256 threads per SM.
void AddRandomMixes(const SuiteOptions& options, std::vector<Benchmark>* plan) {
  std::mt19937_64 rng(options.seed);
  auto draw = [&](int max, double p_zero) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (u(rng) < p_zero) return 0;
    return std::uniform_int_distribution<int>(1, max)(rng);
  };
  const int occupancies[] = {1, 4, 8};
  for (int i = 0; i < options.mixes; ++i) {
    MixCounts m;
    do {
      m.fma = draw(32, 0.25);
      m.int_ops = draw(16, 0.35);
      m.fp64 = draw(4, 0.6);
      m.sfu = draw(4, 0.6);
      m.shared = draw(4, 0.5);
      m.l2 = draw(2, 0.6);
      m.dram = draw(2, 0.6);
      m.mma = draw(2, 0.7);
    } while (m.Empty());
    const int bps = occupancies[i % 3];
    Benchmark b = Make(MixName(i, m, bps), "mix", KernelKind::kMix,
                       static_cast<int64_t>(options.sm_count) * bps, kUnitThreads);
    b.mix = m;
    plan->push_back(b);
  }
}

}  // namespace

std::vector<Benchmark> BuildSuitePlan(const SuiteOptions& options) {
  const int64_t sms = options.sm_count;
  std::vector<Benchmark> plan;
  // The sleeping kernel first: occupied SMs that issue almost nothing.
  plan.push_back(Make("idle_sleep", "idle", KernelKind::kSleep, sms * kUnitBlocksPerSm, kUnitThreads));
  AddUnits(sms, &plan);
  AddUnitMixes(sms, &plan);
  AddSweeps(options.sm_count, &plan);
  AddToggleSweep(sms, &plan);
  AddRandomMixes(options, &plan);
  AddTensorIntensities(options.sm_count, &plan);
  for (Benchmark& b : plan) {
    const bool full_use = b.group == "unit" || b.group == "tensor" || b.group == "occupancy";
    if (full_use && ReachesCapAtFullUse(b.kernel)) b.window_s = kCappedWindowS;
  }
  return plan;
}

bool SelectBenchmarks(const std::vector<Benchmark>& plan, const std::string& only,
                      std::vector<Benchmark>* selected, std::string* error) {
  selected->clear();
  if (only.empty()) {
    *selected = plan;
    return true;
  }
  // A comma list of exact names when every item is a name of the plan.
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= only.size()) {
    const size_t comma = only.find(',', start);
    const size_t end = comma == std::string::npos ? only.size() : comma;
    if (end > start) items.push_back(only.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::set<std::string> names;
  for (const Benchmark& b : plan) names.insert(b.name);
  const bool all_names = !items.empty() && std::all_of(items.begin(), items.end(), [&](const std::string& s) {
    return names.count(s) > 0;
  });
  if (all_names) {
    const std::set<std::string> wanted(items.begin(), items.end());
    for (const Benchmark& b : plan) {
      if (wanted.count(b.name)) selected->push_back(b);
    }
    return true;
  }
  std::regex re;
  try {
    re = std::regex(only, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    *error = fmt::format("--only: '{}' is neither a comma list of benchmark names nor a valid "
                         "regular expression ({})",
                         only, e.what());
    return false;
  }
  for (const Benchmark& b : plan) {
    if (std::regex_match(b.name, re)) selected->push_back(b);
  }
  if (selected->empty()) {
    *error = fmt::format("--only: '{}' selects no benchmark (see --list)", only);
    return false;
  }
  return true;
}

bool RunsOn(const Benchmark& b, int compute_capability, std::string* reason) {
  const char* needs = KernelNeeds(b.kernel);
  const std::string what = *needs ? fmt::format(" ({})", needs) : std::string();
  if (compute_capability < b.min_cc) {
    *reason = fmt::format("{} needs compute capability {} or newer{}; this GPU is {}", KernelName(b.kernel),
                          CcText(b.min_cc), what, CcText(compute_capability));
    return false;
  }
  if (b.max_cc > 0 && compute_capability > b.max_cc) {
    *reason = fmt::format("{} runs only up to compute capability {}{}; this GPU is {}", KernelName(b.kernel),
                          CcText(b.max_cc), what, CcText(compute_capability));
    return false;
  }
  return true;
}

std::vector<Benchmark> PlanForGpu(const std::vector<Benchmark>& plan, int compute_capability,
                                  std::vector<SkippedBenchmark>* skipped,
                                  const std::function<std::string(const Benchmark&)>& unavailable) {
  std::vector<Benchmark> runs;
  skipped->clear();
  for (const Benchmark& b : plan) {
    std::string reason;
    if (RunsOn(b, compute_capability, &reason) && unavailable) reason = unavailable(b);
    if (reason.empty()) {
      runs.push_back(b);
    } else {
      skipped->push_back({b.name, reason});
    }
  }
  return runs;
}

std::string SkippedListing(const std::vector<SkippedBenchmark>& skipped) {
  std::vector<std::pair<std::string, std::string>> by_reason;  // reason, names; first-seen order
  for (const SkippedBenchmark& s : skipped) {
    auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& r) { return r.first == s.reason; });
    if (it == by_reason.end()) {
      by_reason.emplace_back(s.reason, s.name);
    } else {
      it->second += ", " + s.name;
    }
  }
  std::string out;
  for (const auto& [reason, names] : by_reason) out += fmt::format("not run: {}: {}\n", names, reason);
  return out;
}

std::string PlanListing(const std::vector<Benchmark>& plan) {
  std::string s =
      "name,group,kernel,blocks,threads,lanes,fma,int,fp64,sfu,shared,l2,dram,mma,min_cc,max_cc,"
      "toggle_pct,one_block_per_sm,window_s\n";
  for (const Benchmark& b : plan) {
    const MixCounts& m = b.mix;
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", b.name, b.group,
                     KernelName(b.kernel), b.blocks, b.threads, b.lanes, m.fma, m.int_ops, m.fp64,
                     m.sfu, m.shared, m.l2, m.dram, m.mma, b.min_cc, b.max_cc, b.toggle_pct,
                     b.one_block_per_sm ? 1 : 0, b.window_s);
  }
  return s;
}

double WindowSeconds(const Benchmark& b, double seconds, double window_scale) {
  return (b.window_s > 0.0 ? b.window_s : seconds) * window_scale;
}

double BenchmarkSeconds(const Benchmark& b, const PlanTimingOptions& options) {
  return WindowSeconds(b, options.seconds, options.window_scale) + options.gap_ms * 1e-3 +
         kCalibrationS;
}

PlanTiming PlannedSeconds(const std::vector<Benchmark>& plan, const PlanTimingOptions& options) {
  PlanTiming t;
  t.benchmarks = static_cast<int>(plan.size());
  t.power_s = 2.0 * options.idle_s + options.gap_ms * 1e-3;  // the gap before idle_after too
  for (const Benchmark& b : plan) {
    t.own_windows += b.window_s > 0.0;
    t.power_s += BenchmarkSeconds(b, options);
  }
  if (options.counters) {
    t.counters_s = kCountersStartS + kProfiledLaunchS * static_cast<double>(plan.size());
  }
  t.total_s = t.power_s + t.counters_s;
  return t;
}

std::string PlanTimingText(const PlanTiming& t) {
  return fmt::format(
      "{} benchmarks ({} with their own window): power run {:.0f} s, counters {:.0f} s, {:.0f} s "
      "in all",
      t.benchmarks, t.own_windows, t.power_s, t.counters_s, t.total_s);
}

int64_t CalibratedIterations(int64_t probe_iters, double probe_ms, double target_ms) {
  if (!(probe_ms > 0.0) || probe_iters < 1) return std::max<int64_t>(1, probe_iters);
  const double iters = std::round(static_cast<double>(probe_iters) * target_ms / probe_ms);
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(iters, 1e15)));
}

int64_t ProfileIterations(int64_t power_iters, int divisor) {
  if (divisor < 1) divisor = 1;
  return std::max<int64_t>(1, (power_iters + divisor / 2) / divisor);
}

}  // namespace wattcal::capture
