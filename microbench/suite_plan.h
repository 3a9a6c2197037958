// The microbenchmark suite of wattcal-capture (issue 13), decided without a GPU: which kernels
// run, at which launch configuration, under which names, and how many iterations a launch
// gets. The CUDA side (kernels.cu) only executes what this plan says.
//
// Groups (Benchmark::group):
//   idle          a sleeping kernel (__nanosleep): the SMs are occupied but issue almost nothing
//   unit          one functional unit per kernel: INT add/mul/xorshift, FP32 FMA/add/mul,
//                 FP64 FMA/add, FP16 HFMA2, SFU sin, tensor cores (mma.sync m16n8k16 on sm_80+,
//                 wmma m16n16k16 on sm_70), shared load/store, L1, L2, DRAM read/write/copy
//   occupancy     unit kernels at 1 and 2 blocks of 256 threads per SM
//   fma_per_byte  k_mix with one DRAM (or L2) load and 1 ... 256 FP32 FMAs per load
//   unit_mix      two units together (INT + FP32, tensor + DRAM, FP64 + DRAM)
//   sm_sweep      k_int_add on 1 ... all SMs, one 1024-thread block per SM (AccelWattch ACT_CORE)
//   lane_sweep    k_fp32_fma with 1 ... 32 active lanes per warp
//   mix           seeded random unit mixes of k_mix at 1, 4 and 8 blocks of 256 threads per SM
//
// Data (DataMode): every kernel starts from its input buffer and iterates a map that neither
// converges nor grows (x = x*a + b with a = -(1 - 2^-23) and b from the buffer, Fibonacci
// sums and xorshift for integers, x = sin(3x) on the SFU), so operand bits keep toggling.
// On zero-filled buffers (--data zeros) every map stays at zero: the way many suites are
// written, measured here only for comparison (it under-predicts real applications by ~20%).
#pragma once

#include <cstdint>
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
};

// The CUDA function name of a kernel ("k_fp32_fma").
const char* KernelName(KernelKind kind);
// Every kernel, in enum order.
std::vector<KernelKind> AllKernels();

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
  // idle, unit, occupancy, fma_per_byte, unit_mix, sm_sweep, lane_sweep or mix.
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

// One line per benchmark for --list: name, group, kernel, blocks x threads, lanes, mix counts.
std::string PlanListing(const std::vector<Benchmark>& plan);

// Iterations for a launch of about `target_ms`, from a probe launch of `probe_iters` that took
// `probe_ms` (at least 1).
int64_t CalibratedIterations(int64_t probe_iters, double probe_ms, double target_ms);
// Iterations of the profiled launch: the power run's divided by `divisor` (at least 1).
int64_t ProfileIterations(int64_t power_iters, int divisor);

}  // namespace wattcal::capture
