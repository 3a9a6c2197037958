// The microbenchmark suite of wattcal-capture (issue 13), decided without a GPU: which kernels
// run, at which launch configuration, under which names, and how many iterations a launch
// gets. The CUDA side (kernels.cu) only executes what this plan says.
//
// Groups (Benchmark::group):
//   idle          a sleeping kernel (__nanosleep): the SMs are occupied but issue almost nothing
//   unit          one functional unit per kernel: INT add/mul/mad/xorshift, FP32 FMA/add/mul,
//                 FP64 FMA/add/mul, FP16 HFMA2, SFU sin/ex2/rsqrt, conversions (F2I/I2F/F2F),
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
  // toggle or mix.
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
};

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

// Iterations for a launch of about `target_ms`, from a probe launch of `probe_iters` that took
// `probe_ms` (at least 1).
int64_t CalibratedIterations(int64_t probe_iters, double probe_ms, double target_ms);
// Iterations of the profiled launch: the power run's divided by `divisor` (at least 1).
int64_t ProfileIterations(int64_t power_iters, int divisor);

}  // namespace wattcal::capture
