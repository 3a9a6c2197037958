// The microbenchmark suite of wattcal-capture (issue 13), decided without a GPU: which kernels
// run, at which launch configuration, under which names, and how many iterations a launch
// gets. The CUDA side (kernels.cu) only executes what this plan says.
//
// Groups (Benchmark::group):
//   idle          a sleeping kernel (__nanosleep): the SMs are occupied but issue almost nothing
//   unit          one functional unit per kernel: INT add/mul/mad/xorshift, FP32 FMA/add/mul,
//                 FP64 FMA/add/mul, FP16 HFMA2 (fp16_hfma2: ptxas issues half of them as
//                 HFMA2.MMA on the tensor pipe; fp16_hfma2_fma: all on the FMA pipe, see
//                 "FP16 and the tensor pipe" below), SFU sin/ex2/rsqrt, conversions (F2I/I2F/F2F),
//                 tensor cores FP16 (mma.sync m16n8k16 on sm_80+, wmma m16n16k16 below),
//                 shared load/store, shared bank conflicts, L1, L2 load/store, DRAM
//                 read/write/copy
//   tensor        the other tensor-core families: mma.sync BF16 (m16n8k16), TF32 (m16n8k8),
//                 INT8 (IMMA m16n8k32) and FP64 (DMMA m8n8k4), sm_80+; warpgroup MMAs
//                 (wgmma.mma_async, operands in shared memory) FP16, BF16 and FP8 E4M3, sm_90a
//                 (Hopper) only
//   atomic        atomicAdd on global memory (L2 reductions) and on shared memory
//   occupancy     at 1 and 2 blocks of 256 threads per SM: INT add, FP32/FP64 FMA, tensor
//                 FP16, shared/L2/DRAM loads, and every newer unit kernel (INT mad, FP64 mul,
//                 SFU ex2/rsqrt, conversions, shared conflicts, L2 stores) and every tensor
//                 and atomic kernel
//   fma_per_byte  k_mix with one DRAM (or L2) load and 1 ... 256 FP32 FMAs per load
//   unit_mix      two units together (INT + FP32, tensor + DRAM, FP64 + DRAM, SFU + shared)
//   sm_sweep      k_int_add on 1 ... all SMs, one 1024-thread block per SM (AccelWattch ACT_CORE)
//   lane_sweep    k_fp32_fma with 1 ... 32 active lanes per warp
//   toggle        DRAM write, DRAM read and FP32 FMA on words that differ from the previous one
//                 in 0, 25, 50 or 100% of their bits, at 8, 1 and 2 blocks of 256 per SM
//   mix           seeded random unit mixes of k_mix at 1, 4 and 8 blocks of 256 threads per SM
//   tensor_intensity
//                 every tensor family (mma.sync FP16/BF16/TF32 HMMA, INT8 IMMA, FP64 DMMA; wgmma
//                 FP16/BF16/FP8) on 1/8, 1/4, 3/8, 1/2 and 5/8 of the SMs, one 256-thread block
//                 per SM ("tensor_fp16_sm3of8"): below the board's power cap (issue 41)
//
// Below the cap (tensor_intensity). On the H100 every tensor family at full use reached the
// 700 W cap (datasets/captures/README.md), so TENSOR was trained only on random mixes (tensor
// utilisation up to 0.075). Tensor utilisation is the pipe's busy cycles over the elapsed
// cycles of every SM's four sub-partitions (sm__pipe_tensor_op_hmma_cycles_active.sum /
// (sm__cycles_elapsed.avg x SMs x 4); IMMA and DMMA have their own pipes' counters). One block
// of 256 threads per SM already keeps an SM's tensor pipes busy (tensor_fp16_occ_b1 read 0.98
// of the cycles on the H100, wgmma_fp16_occ_b1 0.98), so k of the N SMs give utilisation
// ~0.98 k/N: 0.12, 0.25, 0.37, 0.49 and 0.61 for k/N = 1/8 ... 5/8, spanning 0.1 to beyond half
// of full use (0.98). Power grows with the busy SMs from the idle floor (123 W at 2 busy SMs,
// sm_sweep on the H100): at 5/8 of the SMs a family whose full use would draw 900 W draws
// ~610 W, under the 700 W cap; 3/4 and more would reach it. Fewer SMs rather than a duty cycle:
// the same launch shape (one block per SM, as the SM sweep) for every family, wgmma's
// shared-memory layout included, and no timing inside the kernel to trust; the idle SMs'
// share is what the SM sweep trains (ACTIVE SM).
//
// FP16 and the tensor pipe. On sm_80 and later ptxas issues about half of a kernel's HFMA2s as
// HFMA2.MMA, which runs on the tensor pipe (fp16_hfma2 read tensor utilisation 0.875 on the
// H100, so FP16 and TENSOR were one column). fp16_hfma2_fma computes the same map with
// fma.rn.oob.f16x2 (sm_90: identical results for non-NaN operands), which ptxas never issues as
// HFMA2.MMA: cuobjdump -sass of the sm_90a code shows 128 HFMA2.OOB and no HFMA2.MMA in
// k_fp16_hfma2_fma, 320 HFMA2 and 326 HFMA2.MMA in k_fp16_hfma2 (CUDA 13.0). Without sm_90
// code it falls back to fma.rn.f16x2 (the split again). The tensor-pipe FP16 benchmarks are
// the HMMA ones (tensor_fp16 and its intensities: FP16 operands, no FP16 instruction count).
//
// Windows the cap can settle in. Benchmarks that reach the cap at full use (the FP16, BF16 and
// TF32 HMMA and the three wgmma families, at 8, 1 and 2 blocks of 256 per SM: the 18 windows
// flagged power_cap on the H100) run kCappedWindowS whatever --seconds says (Benchmark::
// window_s): wattcal-ingest's settle trim (0.3 s), the cap controller's settling (up to 1 s:
// 0.66-s windows were still moving in their second half), then 2 s of settled power and clock,
// points of the voltage-frequency curve.
//
// Compute capability: a benchmark carries the oldest (min_cc) and, for Hopper-only code, the
// newest (max_cc) compute capability it runs on; PlanForGpu leaves the others out, each with
// its reason (the suite itself needs 7.0: __nanosleep, tensor cores).
//
// Data (DataMode): every kernel starts from its input buffer and iterates a map that neither
// converges nor grows (x = x*x + c with c from the buffer, Fibonacci sums, LCGs and xorshift
// for integers, x = sin(3x) and expanding exp2 / rsqrt maps on the SFU; kernels.cu lists
// them), so operand bits keep toggling. On zero-filled buffers (--data zeros) every map stays
// at zero: the way many suites are written, measured here only for comparison (it
// under-predicts real applications by ~20%). The toggle group sets the toggle rate itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace wattcal::capture {

// The CUDA kernels of kernels.cu; their names (KernelName) are what Nsight Compute reports.
enum class KernelKind {
  kSleep,
  kIntAdd,
  kIntMul,
  kIntXorshift,
  kFp32Fma,
  kFp32Add,
  kFp32Mul,
  kFp64Fma,
  kFp64Add,
  kFp16Hfma2,
  kSfuSin,
  kTensor,
  kSharedLd,
  kSharedSt,
  kL1Ld,
  kL2Ld,
  kDramLd,
  kDramWrite,
  kDramCopy,
  kMix,
  kIntMad,
  kFp64Mul,
  kSfuEx2,
  kSfuRsqrt,
  kConvert,
  kSharedConflict,
  kL2Write,
  kAtomicGlobal,
  kAtomicShared,
  kTensorBf16,
  kTensorTf32,
  kTensorInt8,
  kTensorFp64,
  kWgmmaFp16,
  kWgmmaBf16,
  kWgmmaFp8,
  kFp16Hfma2Fma,
};

// The CUDA function name of a kernel ("k_fp32_fma").
const char* KernelName(KernelKind kind);
// Every kernel, in enum order.
std::vector<KernelKind> AllKernels();
// The compute capabilities (major * 10 + minor) a kernel runs on: from KernelMinCc (70 for
// the suite's own needs, 80 for the sm_80 mma.sync families) to KernelMaxCc (90 for the
// wgmma kernels, whose sm_90a code runs on Hopper only; 0 = no limit); KernelNeeds names the
// feature ("mma.sync bf16", ...; "" when the suite's own).
int KernelMinCc(KernelKind kind);
int KernelMaxCc(KernelKind kind);
const char* KernelNeeds(KernelKind kind);

// Per-iteration unit counts of k_mix (each one thread's instructions per loop iteration).
struct MixCounts {
  int fma = 0;     // FP32 FMAs
  int int_ops = 0; // INT adds/xors
  int fp64 = 0;    // FP64 FMAs
  int sfu = 0;     // __sinf
  int shared = 0;  // shared-memory loads
  int l2 = 0;      // global loads from an L2-resident region (bypassing L1)
  int dram = 0;    // global loads streaming through a buffer larger than L2
  int mma = 0;     // tensor-core MMAs (per warp)

  bool Empty() const;
};

struct Benchmark {
  // Unique name: the window's name in windows.csv ("fp32_fma", "sm_sweep_int_add_066", ...).
  std::string name;
  // idle, unit, tensor, atomic, occupancy, fma_per_byte, unit_mix, sm_sweep, lane_sweep,
  // toggle, mix or tensor_intensity.
  std::string group;
  KernelKind kernel = KernelKind::kFp32Fma;
  // Launch configuration: grid size (blocks), block size (threads), active lanes per warp.
  int64_t blocks = 0;
  int threads = 256;
  int lanes = 32;
  // Keep every block on its own SM (the SM sweep): the launch asks for enough dynamic shared
  // memory that two blocks cannot share an SM.
  bool one_block_per_sm = false;
  // k_mix only.
  MixCounts mix;
  // The toggle group: the percentage of bits in which each word differs from the previous
  // one (0, 25, 50 or 100); -1 elsewhere.
  int toggle_pct = -1;
  // The compute capabilities it runs on (the kernel's: KernelMinCc, KernelMaxCc).
  int min_cc = 70;
  int max_cc = 0;
  // Its window's length, s, when it needs its own (kCappedWindowS for those that reach the
  // power cap); 0 = the run's --seconds.
  double window_s = 0.0;
};

// The window of a benchmark that reaches the power cap at full use, s: the ingest's settle
// trim (kIngestSettleS), the cap controller's settling (kCapSettleS), then kSettledS measured.
constexpr double kIngestSettleS = 0.3;
constexpr double kCapSettleS = 1.0;
constexpr double kSettledS = 2.0;
constexpr double kCappedWindowS = kIngestSettleS + kCapSettleS + kSettledS;

// The fractions of the SMs (eighths) the tensor_intensity group runs on.
constexpr int kIntensityEighths[] = {1, 2, 3, 4, 5};

// A benchmark the GPU cannot run, and why.
struct SkippedBenchmark {
  std::string name;
  std::string reason;
};

struct SuiteOptions {
  // SMs of the GPU (the plan's grid sizes depend on it); --list without a GPU uses 132 (H100).
  int sm_count = 132;
  // Number of seeded random unit mixes.
  int mixes = 60;
  // Seed of the random mixes (and of the data the runner generates).
  uint64_t seed = 1;

  bool Check(std::string* error) const;
};

// The whole suite, in run order. Names are unique.
std::vector<Benchmark> BuildSuitePlan(const SuiteOptions& options);

// The benchmarks whose names match `only`: a comma-separated list of names, or else an
// ECMAScript regular expression matched against the whole name. Empty = all. Returns false
// with `error` set when `only` selects nothing or is not a valid expression.
bool SelectBenchmarks(const std::vector<Benchmark>& plan, const std::string& only,
                      std::vector<Benchmark>* selected, std::string* error);

// Whether a GPU of `compute_capability` (major * 10 + minor) runs `b`; when not, `reason`
// says why ("k_tensor_bf16 needs compute capability 8.0 or newer (mma.sync bf16); this GPU
// is 7.5").
bool RunsOn(const Benchmark& b, int compute_capability, std::string* reason);

// The benchmarks of `plan` a GPU of `compute_capability` runs, in plan order; the others go
// to `skipped` with their reason. `unavailable`, when given, adds what only the device knows:
// it returns why a benchmark cannot run ("" when it can).
std::vector<Benchmark> PlanForGpu(const std::vector<Benchmark>& plan, int compute_capability,
                                  std::vector<SkippedBenchmark>* skipped,
                                  const std::function<std::string(const Benchmark&)>& unavailable = nullptr);

// One line per reason: "not run: a, b, c: <reason>" (empty when nothing was skipped).
std::string SkippedListing(const std::vector<SkippedBenchmark>& skipped);

// One line per benchmark for --list: name, group, kernel, blocks x threads, lanes, mix counts,
// the compute capabilities it runs on and its toggle percentage.
std::string PlanListing(const std::vector<Benchmark>& plan);

// The planned wall time of a suite run, s, from the plan and the run's settings; the constants
// are what the first H100 campaign took (datasets/captures/h100/logs/device_capture.log: 216
// windows of 0.66 s + 0.3 s gap and 6 s idle took 224 s; their 216 profiled launches under one
// ncu, with its start and the device set-up, 58 s).
struct PlanTimingOptions {
  // --seconds: the window of a benchmark without its own, s.
  double seconds = 2.0;
  // --window-scale: every window (its own or --seconds) times this.
  double window_scale = 1.0;
  // --gap-ms: the idle gap before each window, ms.
  double gap_ms = 400.0;
  // --idle-s: the idle windows before and after the suite, s (each).
  double idle_s = 3.0;
  // --counters: one profiled launch per window under ncu.
  bool counters = false;
};
constexpr double kCalibrationS = 0.05;     // a benchmark's probe launches (224 - 213.4 s) / 216
constexpr double kProfiledLaunchS = 0.25;  // one launch under ncu (58 s / 216 with the start)
constexpr double kCountersStartS = 5.0;    // ncu's start, the child's buffers, its exit

struct PlanTiming {
  int benchmarks = 0;
  int own_windows = 0;      // benchmarks with their own window (window_s > 0)
  double power_s = 0.0;     // the power run: idle windows, gaps, calibration, windows
  double counters_s = 0.0;  // the counters run (0 without --counters)
  double total_s = 0.0;
};
PlanTiming PlannedSeconds(const std::vector<Benchmark>& plan, const PlanTimingOptions& options);
// "257 benchmarks (18 with their own window): power run 312 s, counters 69 s, 381 s in all".
std::string PlanTimingText(const PlanTiming& t);

// The window a benchmark runs, s: its own (window_s) or `seconds`, times `window_scale`.
double WindowSeconds(const Benchmark& b, double seconds, double window_scale);

// The planned time of one benchmark of the power run, s: its gap, its probe launches, its window.
double BenchmarkSeconds(const Benchmark& b, const PlanTimingOptions& options);

// Iterations for a launch of about `target_ms`, from a probe launch of `probe_iters` that took
// `probe_ms` (at least 1).
int64_t CalibratedIterations(int64_t probe_iters, double probe_ms, double target_ms);
// Iterations of the profiled launch: the power run's divided by `divisor` (at least 1).
int64_t ProfileIterations(int64_t power_iters, int divisor);

}  // namespace wattcal::capture
