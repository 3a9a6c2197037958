// The CUDA kernels of the suite (suite_plan.h says which run, how) and the CUDA implementation
// of BenchmarkDevice. Host code here stays minimal: no fmt or JSON, only what launches.
//
// Data. Every kernel starts from words of the input buffer (random, or zeros) and iterates a
// map that keeps its operands toggling without growing or converging:
//   FP32/FP64/FP16 FMA  x = x*x + c, c in [-1.98, -1.6]: the real quadratic map, chaotic and
//                       bounded in [c, c*c + c] (inside (-2, 2)); on zeros x = c = 0 stays 0
//   FP add              x = c - x (two values, every bit of both differs at random)
//   FP32 mul            x = (x * r) * (1/r), r in [1, 2): x and x*r alternate
//   INT add             a += b; b += a (Fibonacci mod 2^32)     INT mul  x *= m (m odd)
//   INT xorshift        x ^= x << 13; x ^= x >> 17; x ^= x << 5
//   SFU                 x = sin(3x) (chaotic on [-1, 1])
//   tensor              D = A*B + D with two random A/B fragment sets alternating
//   memory              loads of random words (summed); stores of an LCG's values
// On zero-filled buffers every map stays at 0 (the LCG's increment is 0 too).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmark_device.h"

// The kernels are extern "C" at global scope, so that Nsight Compute names them plainly
// ("k_fp32_fma"), as suite_plan.cc's KernelName does.
struct KParams {
  const uint32_t* in;
  uint32_t* out;
  unsigned long long mask;     // words of each big buffer - 1 (a power of two)
  unsigned long long l2_mask;  // words of the L2-resident region - 1
  long long iters;
  int lanes;
  int sleep_ns;
  unsigned lcg_inc;
  int n_fma, n_int, n_fp64, n_sfu, n_shared, n_l2, n_dram, n_mma;
};

constexpr int kSharedWords = 2048;  // 8 KB of shared memory per block
constexpr int kChains = 8;          // independent dependency chains per thread
constexpr int kUnroll = 16;         // steps per chain per loop iteration

__device__ __forceinline__ unsigned long long Gid() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long Threads() {
  return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}
__device__ __forceinline__ uint32_t Word(const KParams& p, unsigned long long k) {
  return p.in[(Gid() * 16 + k) & p.mask];
}
// A word as a value in [-1, 1) (0 -> 0).
__device__ __forceinline__ float Signed(uint32_t w) { return static_cast<int32_t>(w) * 4.656612873e-10f; }
// A word as the quadratic map's constant in [-1.98, -1.6] (0 -> 0).
__device__ __forceinline__ float MapConst(uint32_t w) {
  return w == 0 ? 0.0f : -(1.6f + 0.38f * (w >> 8) * 5.9604645e-08f);
}
__device__ __forceinline__ bool LaneActive(const KParams& p) { return (threadIdx.x & 31) < p.lanes; }
// Keeps a result alive: one store per thread at the end.
__device__ __forceinline__ void Sink(const KParams& p, uint32_t v) { p.out[Gid() & p.mask] = v; }

extern "C" __global__ void k_sleep(KParams p) {
  for (long long i = 0; i < p.iters; ++i) __nanosleep(p.sleep_ns);
}

extern "C" __global__ void k_int_add(KParams p) {
  extern __shared__ uint32_t unused_dynamic_shared[];  // one block per SM (sm_sweep)
  if (!LaneActive(p)) return;
  uint32_t a[kChains / 2], b[kChains / 2];
#pragma unroll
  for (int c = 0; c < kChains / 2; ++c) a[c] = Word(p, 2 * c), b[c] = Word(p, 2 * c + 1);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains / 2; ++c) a[c] += b[c], b[c] += a[c];
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int c = 0; c < kChains / 2; ++c) s ^= a[c] ^ b[c];
  Sink(p, s);
}

extern "C" __global__ void k_int_mul(KParams p) {
  uint32_t x[kChains], m[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = Word(p, c), m[c] = Word(p, c + 8) | 1u;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] *= m[c];
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s ^= x[c];
  Sink(p, s);
}

extern "C" __global__ void k_int_xorshift(KParams p) {
  uint32_t x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = Word(p, c);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll / 4; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] ^= x[c] << 13, x[c] ^= x[c] >> 17, x[c] ^= x[c] << 5;
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s ^= x[c];
  Sink(p, s);
}

template <typename T>
__device__ __forceinline__ T Fma(T a, T b, T c);
template <>
__device__ __forceinline__ float Fma(float a, float b, float c) { return fmaf(a, b, c); }
template <>
__device__ __forceinline__ double Fma(double a, double b, double c) { return fma(a, b, c); }
template <>
__device__ __forceinline__ __half2 Fma(__half2 a, __half2 b, __half2 c) { return __hfma2(a, b, c); }

template <typename T>
__device__ __forceinline__ T FromFloat(float f);
template <>
__device__ __forceinline__ float FromFloat(float f) { return f; }
template <>
__device__ __forceinline__ double FromFloat(float f) { return f; }
template <>
__device__ __forceinline__ __half2 FromFloat(float f) { return __floats2half2_rn(f, f * 0.75f); }

template <typename T>
__device__ __forceinline__ uint32_t Bits(T v);
template <>
__device__ __forceinline__ uint32_t Bits(float v) { return __float_as_uint(v); }
template <>
__device__ __forceinline__ uint32_t Bits(double v) {
  const unsigned long long b = __double_as_longlong(v);
  return static_cast<uint32_t>(b ^ (b >> 32));
}
template <>
__device__ __forceinline__ uint32_t Bits(__half2 v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

// x = x*x + c on kChains chains (FFMA, DFMA or HFMA2), lanes >= p.lanes idle.
template <typename T>
__device__ __forceinline__ void QuadraticMap(const KParams& p) {
  if (!LaneActive(p)) return;
  T x[kChains], c[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) {
    x[k] = FromFloat<T>(Signed(Word(p, k)));
    c[k] = FromFloat<T>(MapConst(Word(p, k + 8)));
  }
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) x[k] = Fma<T>(x[k], x[k], c[k]);
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= Bits<T>(x[k]);
  Sink(p, s);
}

extern "C" __global__ void k_fp32_fma(KParams p) { QuadraticMap<float>(p); }
extern "C" __global__ void k_fp64_fma(KParams p) { QuadraticMap<double>(p); }
extern "C" __global__ void k_fp16_hfma2(KParams p) { QuadraticMap<__half2>(p); }

// x = c - x (FADD/DADD).
template <typename T>
__device__ __forceinline__ void Alternate(const KParams& p) {
  T x[kChains], c[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) x[k] = Signed(Word(p, k)), c[k] = Signed(Word(p, k + 8));
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) x[k] = c[k] - x[k];
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= Bits<T>(x[k]);
  Sink(p, s);
}

extern "C" __global__ void k_fp32_add(KParams p) { Alternate<float>(p); }
extern "C" __global__ void k_fp64_add(KParams p) { Alternate<double>(p); }

extern "C" __global__ void k_fp32_mul(KParams p) {
  float x[kChains], r[kChains], q[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) {
    x[k] = Signed(Word(p, k));
    const uint32_t w = Word(p, k + 8);
    r[k] = 1.0f + (w >> 8) * 5.9604645e-08f * (w != 0);
    q[k] = 1.0f / r[k];
  }
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll / 2; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) x[k] = (x[k] * r[k]) * q[k];
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= __float_as_uint(x[k]);
  Sink(p, s);
}

extern "C" __global__ void k_sfu_sin(KParams p) {
  float x[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) x[k] = Signed(Word(p, k));
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) x[k] = __sinf(3.0f * x[k]);
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= __float_as_uint(x[k]);
  Sink(p, s);
}

#if __CUDA_ARCH__ >= 800
// Two 16-bit halves in [-1, 1) from a word (0 -> 0, 0).
__device__ __forceinline__ uint32_t HalfPair(uint32_t w) {
  const __half2 h = __floats2half2_rn(static_cast<int16_t>(w & 0xffff) * 3.0517578e-05f,
                                      static_cast<int16_t>(w >> 16) * 3.0517578e-05f);
  uint32_t b;
  memcpy(&b, &h, sizeof b);
  return b;
}
#endif

// Tensor-core state of one warp: two A/B fragment sets alternate so that the multipliers'
// inputs change every MMA; two accumulators.
struct TensorState {
#if __CUDA_ARCH__ >= 800
  uint32_t a[2][4], b[2][2];
  float d[2][4];
#else
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> a[2];
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::col_major> b[2];
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> d[2];
#endif

  __device__ void Init(const KParams& p) {
#if __CUDA_ARCH__ >= 800
    for (int s = 0; s < 2; ++s) {
      for (int k = 0; k < 4; ++k) a[s][k] = HalfPair(Word(p, s * 6 + k)), d[s][k] = 0.0f;
      for (int k = 0; k < 2; ++k) b[s][k] = HalfPair(Word(p, s * 6 + 4 + k));
    }
#else
    for (int s = 0; s < 2; ++s) {
      for (int k = 0; k < a[s].num_elements; ++k) a[s].x[k] = __float2half(Signed(Word(p, s * 16 + k)));
      for (int k = 0; k < b[s].num_elements; ++k) b[s].x[k] = __float2half(Signed(Word(p, s * 16 + k + 7)));
      nvcuda::wmma::fill_fragment(d[s], 0.0f);
    }
#endif
  }

  // One MMA on accumulator `acc` with operand set `set` (m16n8k16 on sm_80+, m16n16k16 wmma).
  __device__ __forceinline__ void Step(int acc, int set) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[acc][0]), "+f"(d[acc][1]), "+f"(d[acc][2]), "+f"(d[acc][3])
        : "r"(a[set][0]), "r"(a[set][1]), "r"(a[set][2]), "r"(a[set][3]), "r"(b[set][0]),
          "r"(b[set][1]));
#else
    nvcuda::wmma::mma_sync(d[acc], a[set], b[set], d[acc]);
#endif
  }

  __device__ uint32_t Digest() const {
#if __CUDA_ARCH__ >= 800
    return __float_as_uint(d[0][0] + d[1][3]);
#else
    return __float_as_uint(d[0].x[0] + d[1].x[0]);
#endif
  }
};

extern "C" __global__ void k_tensor_hmma(KParams p) {
  TensorState t;
  t.Init(p);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll / 2; ++u) {
      t.Step(0, 0);
      t.Step(1, 1);
      t.Step(0, 1);
      t.Step(1, 0);
    }
  }
  Sink(p, t.Digest());
}

__device__ __forceinline__ void FillShared(const KParams& p, uint32_t* sh) {
  for (int k = threadIdx.x; k < kSharedWords; k += blockDim.x) {
    sh[k] = p.in[(static_cast<unsigned long long>(blockIdx.x) * kSharedWords + k) & p.mask];
  }
  __syncthreads();
}

extern "C" __global__ void k_shared_ld(KParams p) {
  __shared__ uint32_t sh[kSharedWords];
  FillShared(p, sh);
  uint32_t acc[4] = {0, 0, 0, 0};
  uint32_t base = threadIdx.x;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[c] += sh[(base + (u * 4 + c) * 32) & (kSharedWords - 1)];
    }
    base += 61;
  }
  Sink(p, acc[0] ^ acc[1] ^ acc[2] ^ acc[3]);
}

extern "C" __global__ void k_shared_st(KParams p) {
  __shared__ uint32_t sh[kSharedWords];
  uint32_t v = Word(p, 0);
  uint32_t base = threadIdx.x;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll * 4; ++u) sh[(base + u * 32) & (kSharedWords - 1)] = v ^ u;
    v = v * 1664525u + p.lcg_inc;
    base += 61;
  }
  __syncthreads();
  Sink(p, sh[threadIdx.x & (kSharedWords - 1)]);
}

// Loads from a 16 KB region per block: L1 hits after the first pass.
extern "C" __global__ void k_l1_ld(KParams p) {
  const uint32_t* region = p.in + ((static_cast<unsigned long long>(blockIdx.x) * 4096) & p.mask & ~4095ull);
  uint32_t acc[4] = {0, 0, 0, 0};
  uint32_t base = threadIdx.x;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[c] += __ldg(region + ((base + (u * 4 + c) * 32) & 4095));
    }
    base += 64 * 32 + 61;
  }
  Sink(p, acc[0] ^ acc[1] ^ acc[2] ^ acc[3]);
}

// Coalesced loads streaming over a region (L2-resident or larger than L2).
template <bool kL2>
__device__ __forceinline__ void Stream(const KParams& p) {
  const unsigned long long mask = kL2 ? p.l2_mask : p.mask;
  const unsigned long long n = Threads();
  unsigned long long idx = Gid();
  uint32_t acc[4] = {0, 0, 0, 0};
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const uint32_t* a = p.in + ((idx + (u * 4 + c) * n) & mask);
        acc[c] += kL2 ? __ldcg(a) : __ldcs(a);
      }
    }
    idx += 16 * n;
  }
  Sink(p, acc[0] ^ acc[1] ^ acc[2] ^ acc[3]);
}

extern "C" __global__ void k_l2_ld(KParams p) { Stream<true>(p); }
extern "C" __global__ void k_dram_ld(KParams p) { Stream<false>(p); }

extern "C" __global__ void k_dram_write(KParams p) {
  const unsigned long long n = Threads();
  unsigned long long idx = Gid();
  uint32_t v = Word(p, 0);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) __stcs(p.out + ((idx + u * n) & p.mask), v ^ u);
    v = v * 1664525u + p.lcg_inc;
    idx += 16 * n;
  }
}

extern "C" __global__ void k_dram_copy(KParams p) {
  const unsigned long long n = Threads();
  unsigned long long idx = Gid();
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const unsigned long long k = (idx + u * n) & p.mask;
      __stcs(p.out + k, __ldcs(p.in + k));
    }
    idx += 8 * n;
  }
}

// The parameterised mix: per iteration n_fma FP32 FMAs, n_int INT ops, n_fp64 FP64 FMAs,
// n_sfu sines, n_shared shared loads, n_l2 L2 loads, n_dram DRAM loads, n_mma MMAs.
extern "C" __global__ void k_mix(KParams p) {
  __shared__ uint32_t sh[kSharedWords];
  if (p.n_shared > 0) FillShared(p, sh);
  float f0 = Signed(Word(p, 0)), f1 = Signed(Word(p, 1));
  const float c0 = MapConst(Word(p, 2)), c1 = MapConst(Word(p, 3));
  double d0 = Signed(Word(p, 4));
  const double cd = MapConst(Word(p, 5));
  float s0 = Signed(Word(p, 6));
  uint32_t ia = Word(p, 7), ib = Word(p, 8), acc = 0;
  TensorState t;
  if (p.n_mma > 0) t.Init(p);
  const unsigned long long n = Threads();
  unsigned long long idx_l2 = Gid(), idx_dram = Gid();
  uint32_t sbase = threadIdx.x;
  for (long long i = 0; i < p.iters; ++i) {
    int k = 0;
    for (; k + 2 <= p.n_fma; k += 2) f0 = fmaf(f0, f0, c0), f1 = fmaf(f1, f1, c1);
    if (k < p.n_fma) f0 = fmaf(f0, f0, c0);
    for (k = 0; k + 2 <= p.n_int; k += 2) ia += ib, ib ^= ia;
    if (k < p.n_int) ia += ib;
    for (k = 0; k < p.n_fp64; ++k) d0 = fma(d0, d0, cd);
    for (k = 0; k < p.n_sfu; ++k) s0 = __sinf(3.0f * s0);
    for (k = 0; k < p.n_shared; ++k) acc += sh[(sbase + k * 32) & (kSharedWords - 1)];
    sbase += 61;
    for (k = 0; k < p.n_l2; ++k) acc += __ldcg(p.in + ((idx_l2 + k * n) & p.l2_mask));
    idx_l2 += 4 * n;
    for (k = 0; k < p.n_dram; ++k) acc += __ldcs(p.in + ((idx_dram + k * n) & p.mask));
    idx_dram += 4 * n;
    for (k = 0; k < p.n_mma; ++k) t.Step(k & 1, (k >> 1) & 1);
  }
  uint32_t digest = __float_as_uint(f0) ^ __float_as_uint(f1) ^ ia ^ ib ^ acc ^ __float_as_uint(s0) ^
                    static_cast<uint32_t>(__double_as_longlong(d0));
  if (p.n_mma > 0) digest ^= t.Digest();
  Sink(p, digest);
}

namespace wattcal::capture {

namespace {

using KernelFn = void (*)(KParams);

KernelFn Function(KernelKind kind) {
  switch (kind) {
    case KernelKind::kSleep: return k_sleep;
    case KernelKind::kIntAdd: return k_int_add;
    case KernelKind::kIntMul: return k_int_mul;
    case KernelKind::kIntXorshift: return k_int_xorshift;
    case KernelKind::kFp32Fma: return k_fp32_fma;
    case KernelKind::kFp32Add: return k_fp32_add;
    case KernelKind::kFp32Mul: return k_fp32_mul;
    case KernelKind::kFp64Fma: return k_fp64_fma;
    case KernelKind::kFp64Add: return k_fp64_add;
    case KernelKind::kFp16Hfma2: return k_fp16_hfma2;
    case KernelKind::kSfuSin: return k_sfu_sin;
    case KernelKind::kTensor: return k_tensor_hmma;
    case KernelKind::kSharedLd: return k_shared_ld;
    case KernelKind::kSharedSt: return k_shared_st;
    case KernelKind::kL1Ld: return k_l1_ld;
    case KernelKind::kL2Ld: return k_l2_ld;
    case KernelKind::kDramLd: return k_dram_ld;
    case KernelKind::kDramWrite: return k_dram_write;
    case KernelKind::kDramCopy: return k_dram_copy;
    case KernelKind::kMix: return k_mix;
  }
  return nullptr;
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}

class CudaDevice : public BenchmarkDevice {
 public:
  CudaDevice(int index, DataMode data, uint64_t seed) : index_(index), data_(data) {
    Check(cudaSetDevice(index), "cudaSetDevice");
    // Block (rather than spin) while waiting for a launch: the host thread that waits shares
    // the CPU with the NVML sampler. Not essential: a refusal is ignored.
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) cudaGetLastError();
    Check(cudaGetDeviceProperties(&prop_, index), "cudaGetDeviceProperties");
    // Two buffers of up to 512 MiB (an eighth of the memory each on small GPUs): far beyond L2.
    unsigned long long words = 1ull << 27;
    while (words > (1ull << 20) && words * 4 * 8 > prop_.totalGlobalMem) words >>= 1;
    mask_ = words - 1;
    // The L2 region: at most a quarter of L2, a power of two.
    unsigned long long l2 = 1ull << 10;
    while (l2 * 2 * 4 * 4 <= static_cast<unsigned long long>(std::max(prop_.l2CacheSize, 4096))) l2 *= 2;
    l2_mask_ = l2 - 1;
    Check(cudaMalloc(&in_, words * 4), "cudaMalloc (input buffer)");
    Check(cudaMalloc(&out_, words * 4), "cudaMalloc (output buffer)");
    Check(cudaMemset(out_, 0, words * 4), "cudaMemset");
    // Input words: xorshift64* from the seed, generated on the host (no set-up kernel to
    // show up among the profiled launches), or zeros.
    if (data == DataMode::kZeros) {
      Check(cudaMemset(in_, 0, words * 4), "cudaMemset");
    } else {
      std::vector<uint32_t> chunk(1u << 22);
      uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
      if (s == 0) s = 1;
      for (unsigned long long at = 0; at < words; at += chunk.size()) {
        for (uint32_t& w : chunk) {
          s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
          w = static_cast<uint32_t>((s * 0x2545F4914F6CDD1Dull) >> 32);
          if (w == 0) w = 1;  // 0 means "zero data" to the kernels' maps
        }
        Check(cudaMemcpy(in_ + at, chunk.data(), chunk.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
      }
    }
    Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    for (cudaEvent_t& e : done_) Check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    Check(cudaEventCreate(&start_), "cudaEventCreate");
    Check(cudaEventCreate(&stop_), "cudaEventCreate");
    // One block per SM: more dynamic shared memory than half an SM holds.
    one_per_sm_smem_ = static_cast<int>(std::min<size_t>(prop_.sharedMemPerMultiprocessor / 2 + 1024,
                                                         prop_.sharedMemPerBlockOptin));
    Check(cudaFuncSetAttribute(k_int_add, cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem_),
          "cudaFuncSetAttribute");
    Check(cudaDeviceSynchronize(), "set-up");
  }

  ~CudaDevice() override {
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : done_) cudaEventDestroy(e);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
    cudaFree(in_);
    cudaFree(out_);
  }

  const cudaDeviceProp& prop() const { return prop_; }

  double TimedLaunch(const Benchmark& b, int64_t iters) override {
    Synchronize();
    Check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    Enqueue(b, iters);
    Check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    Check(cudaEventSynchronize(stop_), "kernel");
    float ms = 0.0f;
    Check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

  void Launch(const Benchmark& b, int64_t iters) override {
    Enqueue(b, iters);
    Check(cudaEventRecord(done_[next_ % 2], stream_), "cudaEventRecord");
    ++next_;
    // At most one launch queued behind the running one.
    if (next_ >= 2) Check(cudaEventSynchronize(done_[next_ % 2]), "kernel");
  }

  void Synchronize() override { Check(cudaStreamSynchronize(stream_), "kernel"); }

 private:
  void Enqueue(const Benchmark& b, int64_t iters) {
    KParams p;
    std::memset(&p, 0, sizeof p);
    p.in = in_;
    p.out = out_;
    p.mask = mask_;
    p.l2_mask = l2_mask_;
    p.iters = iters;
    p.lanes = b.lanes;
    p.sleep_ns = 1000;
    p.lcg_inc = data_ == DataMode::kZeros ? 0u : 1013904223u;
    p.n_fma = b.mix.fma, p.n_int = b.mix.int_ops, p.n_fp64 = b.mix.fp64, p.n_sfu = b.mix.sfu;
    p.n_shared = b.mix.shared, p.n_l2 = b.mix.l2, p.n_dram = b.mix.dram, p.n_mma = b.mix.mma;
    const size_t smem = b.one_block_per_sm && b.kernel == KernelKind::kIntAdd ? one_per_sm_smem_ : 0;
    Function(b.kernel)<<<static_cast<unsigned>(b.blocks), b.threads, smem, stream_>>>(p);
    Check(cudaGetLastError(), KernelName(b.kernel));
  }

  int index_;
  DataMode data_;
  cudaDeviceProp prop_{};
  uint32_t* in_ = nullptr;
  uint32_t* out_ = nullptr;
  unsigned long long mask_ = 0, l2_mask_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_[2] = {nullptr, nullptr};
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  int64_t next_ = 0;
  int one_per_sm_smem_ = 0;
};

}  // namespace

std::unique_ptr<BenchmarkDevice> OpenCudaDevice(int index, DataMode data, uint64_t seed,
                                                CudaDeviceInfo* info, std::string* error) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    *error = std::string("no CUDA GPU answers: ") +
             (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices") +
             " (wattcal-capture must run on a machine with an NVIDIA GPU and its driver)";
    return nullptr;
  }
  if (index < 0 || index >= count) {
    *error = "--device " + std::to_string(index) + ": there are " + std::to_string(count) + " GPUs";
    return nullptr;
  }
  try {
    auto device = std::make_unique<CudaDevice>(index, data, seed);
    const cudaDeviceProp& prop = device->prop();
    if (prop.major < 7) {
      *error = std::string(prop.name) + " has compute capability " + std::to_string(prop.major) + "." +
               std::to_string(prop.minor) + ": the suite needs sm_70 or newer (__nanosleep, tensor cores)";
      return nullptr;
    }
    info->name = prop.name;
    info->compute_capability = prop.major * 10 + prop.minor;
    info->sm_count = prop.multiProcessorCount;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) info->pci_bus_id = bus;
    const unsigned char* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
    char uuid[64];
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                  u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    info->uuid = uuid;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    return device;
  } catch (const std::exception& ex) {
    *error = ex.what();
    return nullptr;
  }
}

}  // namespace wattcal::capture
