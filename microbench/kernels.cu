// The CUDA kernels of the suite (suite_plan.h says which run, how) and the CUDA implementation
// of BenchmarkDevice. Host code here stays minimal: no fmt or JSON, only what launches. The
// compute kernels are here; the tensor-core kernels are in tensor_kernels.cuh, the memory
// kernels in memory_kernels.cuh, what they share in kernel_common.cuh (one translation unit).
//
// Data. Every kernel starts from words of the input buffer (random, or zeros) and iterates a
// map that keeps its operands toggling without growing or converging:
//   FP32/FP64/FP16 FMA  x = x*x + c, c in [-1.98, -1.6]: the real quadratic map, chaotic and
//                       bounded in [c, c*c + c] (inside (-2, 2)); on zeros x = c = 0 stays 0
//   FP add              x = c - x (two values, every bit of both differs at random)
//   FP32/FP64 mul       x = (x * r) * (1/r), r in [1, 2): x and x*r alternate
//   INT add             a += b; b += a (Fibonacci mod 2^32)     INT mul  x *= m (m odd)
//   INT mad             x = x*m + a (an LCG of full period: m = 1 mod 4, a odd)
//   INT xorshift        x ^= x << 13; x ^= x >> 17; x ^= x << 5
//   SFU sin             x = sin(3x) (chaotic on [-1, 1])
//   SFU ex2             y = (2 + C) - 2 * 2^|y|, C in [0.6, 0.98]: expanding, in [-C, C]
//   SFU rsqrt           y = A - B / sqrt(|y| + 2): expanding, in [-1, q], q in [0.5, 0.95]
//   conversions         i += F2I(I2F(i) * r), r in [0.5, 0.9]: x -> (1 + r) x mod 2^32
//   tensor              D = A*B + D with two random A/B operand sets alternating
//   memory              loads of random words (summed); stores and atomics of an LCG's values
//   toggle sweep        words that differ from the previous one in 0, 25, 50 or 100% of their
//                       bits (ToggleWord, kernel_common.cuh)
// On zero-filled buffers every map stays at 0 (the LCG's increment is 0 too).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmark_device.h"
#include "kernel_common.cuh"
#include "memory_kernels.cuh"
#include "tensor_kernels.cuh"

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

// x = x*m + a (IMAD with a real addend): an LCG per chain, m = 1 mod 4 and a odd, so of full
// period 2^32; on zeros m = 1, a = 0 and x = 0 stays 0.
extern "C" __global__ void k_int_mad(KParams p) {
  uint32_t x[kChains], m[kChains], a[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    const uint32_t w = Word(p, c + 8);
    x[c] = Word(p, c), m[c] = (w & ~3u) | 1u, a[c] = (w ^ (w >> 16)) | (w != 0);
  }
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) x[c] = x[c] * m[c] + a[c];
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

// The toggle sweep's FMAs: x = x*1 + (-0) on kChains chains holding the eight words of a Gray
// cycle (ToggleWord, which the host made normal floats): every chain keeps its value, and the
// FFMAs of a warp, which take the chains in turn, read A operands (and write results) that
// differ from the previous FFMA's in exactly the toggle mask's bits. B and C stay constant.
__device__ __forceinline__ void ToggleFma(const KParams& p) {
  if (!LaneActive(p)) return;
  float x[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) x[k] = __uint_as_float(ToggleWord(p.toggle_base, p.toggle_mask, k));
  const float one = p.fma_one, zero = p.fma_zero;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) x[k] = fmaf(x[k], one, zero);
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= __float_as_uint(x[k]);
  Sink(p, s);
}

extern "C" __global__ void k_fp32_fma(KParams p) {
  if (p.toggle) {
    ToggleFma(p);
  } else {
    QuadraticMap<float>(p);
  }
}
extern "C" __global__ void k_fp64_fma(KParams p) { QuadraticMap<double>(p); }
extern "C" __global__ void k_fp16_hfma2(KParams p) { QuadraticMap<__half2>(p); }

// FP16 on the FMA pipe alone (suite_plan.h, "FP16 and the tensor pipe"): ptxas issues about half
// of k_fp16_hfma2's HFMA2s as HFMA2.MMA, on the tensor pipe; fma.rn.oob.f16x2 (sm_90 and later,
// the same result for operands that are not NaN) it issues as HFMA2.OOB only, on the FMA pipe.
// Without sm_90 code, plain fma.rn.f16x2 (split again).
struct FmaPipeHalf2 {
  uint32_t bits;
};
template <>
__device__ __forceinline__ FmaPipeHalf2 Fma(FmaPipeHalf2 a, FmaPipeHalf2 b, FmaPipeHalf2 c) {
  FmaPipeHalf2 d;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fma.rn.oob.f16x2 %0, %1, %2, %3;"
               : "=r"(d.bits)
               : "r"(a.bits), "r"(b.bits), "r"(c.bits));
#else
  asm volatile("fma.rn.f16x2 %0, %1, %2, %3;"
               : "=r"(d.bits)
               : "r"(a.bits), "r"(b.bits), "r"(c.bits));
#endif
  return d;
}
template <>
__device__ __forceinline__ FmaPipeHalf2 FromFloat(float f) {
  return {Bits<__half2>(FromFloat<__half2>(f))};
}
template <>
__device__ __forceinline__ uint32_t Bits(FmaPipeHalf2 v) {
  return v.bits;
}

extern "C" __global__ void k_fp16_hfma2_fma(KParams p) { QuadraticMap<FmaPipeHalf2>(p); }

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

// x = (x * r) * q, q = 1/r (FMUL, DMUL).
template <typename T>
__device__ __forceinline__ void Multiply(const KParams& p) {
  T x[kChains], r[kChains], q[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) {
    x[k] = Signed(Word(p, k));
    const uint32_t w = Word(p, k + 8);
    r[k] = 1.0f + (w >> 8) * 5.9604645e-08f * (w != 0);
    q[k] = T(1) / r[k];
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
  for (int k = 0; k < kChains; ++k) s ^= Bits<T>(x[k]);
  Sink(p, s);
}

extern "C" __global__ void k_fp32_mul(KParams p) { Multiply<float>(p); }
extern "C" __global__ void k_fp64_mul(KParams p) { Multiply<double>(p); }

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

// The SFU's fast paths, without the range handling of exp2f/rsqrtf (one MUFU each).
__device__ __forceinline__ float Ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float Rsqrt(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// y = (2 + C) - 2 * 2^|y| (MUFU.EX2 and an FFMA; |y| is an operand modifier): slope at least
// 2 ln 2 in magnitude everywhere, so chaotic, and [-C, C] maps into itself for C <= 1; C in
// [0.6, 0.98]. On zeros both constants are 0: y = 0 stays 0.
extern "C" __global__ void k_sfu_ex2(KParams p) {
  float y[kChains], a[kChains], s2[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) {
    const uint32_t w = Word(p, k + 8);
    y[k] = 0.5f * Signed(Word(p, k));
    a[k] = w == 0 ? 0.0f : 2.6f + 0.38f * Unit(w);
    s2[k] = w == 0 ? 0.0f : -2.0f;
  }
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) y[k] = fmaf(s2[k], Ex2(fabsf(y[k])), a[k]);
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= __float_as_uint(y[k]);
  Sink(p, s);
}

// y = A - B / sqrt(|y| + 2) (FADD, MUFU.RSQ, FFMA): f(0) = -1, f(+-1) = q in [0.5, 0.95], slope
// above 1 in magnitude on [-1, 1], so chaotic there. On zeros A = B = 0: y = 0 stays 0.
extern "C" __global__ void k_sfu_rsqrt(KParams p) {
  float y[kChains], a[kChains], b[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) {
    const uint32_t w = Word(p, k + 8);
    const float bk = (1.5f + 0.45f * Unit(w)) * 7.7067418f;  // (1 + q) / (1/sqrt(2) - 1/sqrt(3))
    y[k] = 0.5f * Signed(Word(p, k));
    b[k] = w == 0 ? 0.0f : -bk;
    a[k] = w == 0 ? 0.0f : bk * 0.70710678f - 1.0f;
  }
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) y[k] = fmaf(b[k], Rsqrt(fabsf(y[k]) + 2.0f), a[k]);
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s ^= __float_as_uint(y[k]);
  Sink(p, s);
}

// Conversions: i += F2I(I2F(i) * r) on half the chains and, through half precision,
// i += 65537 * H2I(F2H(I2F(i) * r / 65536)) on the other half, r in [0.5, 0.9]: the beta map
// x -> (1 + r) x mod 2^32, expanding, keeps about 13 of the 32 bits toggling per step. SASS:
// I2F (I2FP.F32.S32 on sm_90), F2I.NTZ, F2F.F16.F32 (F2FP.PACK_AB on sm_80+), F2I.F16.NTZ,
// and FMUL, IADD/IMAD. On zeros i = 0 stays 0.
extern "C" __global__ void k_convert(KParams p) {
  uint32_t i32[kChains / 2], i16[kChains / 2];  // unsigned: the additions wrap
  float r32[kChains / 2], r16[kChains / 2];
#pragma unroll
  for (int k = 0; k < kChains / 2; ++k) {
    i32[k] = Word(p, k), i16[k] = Word(p, k + 4);
    r32[k] = 0.5f + 0.4f * Unit(Word(p, k + 8));
    r16[k] = (0.5f + 0.4f * Unit(Word(p, k + 12))) * 1.52587890625e-05f;
  }
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll / 2; ++u) {
#pragma unroll
      for (int k = 0; k < kChains / 2; ++k) {
        const float f32 = __int2float_rn(static_cast<int>(i32[k])) * r32[k];
        const float f16 = __int2float_rn(static_cast<int>(i16[k])) * r16[k];
        i32[k] += static_cast<uint32_t>(__float2int_rn(f32));
        i16[k] += 65537u * static_cast<uint32_t>(__half2int_rn(__float2half_rn(f16)));
      }
    }
  }
  uint32_t s = 0;
#pragma unroll
  for (int k = 0; k < kChains / 2; ++k) s ^= i32[k] ^ i16[k];
  Sink(p, s);
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
    case KernelKind::kIntMad: return k_int_mad;
    case KernelKind::kFp64Mul: return k_fp64_mul;
    case KernelKind::kSfuEx2: return k_sfu_ex2;
    case KernelKind::kSfuRsqrt: return k_sfu_rsqrt;
    case KernelKind::kConvert: return k_convert;
    case KernelKind::kSharedConflict: return k_shared_conflict;
    case KernelKind::kL2Write: return k_l2_write;
    case KernelKind::kAtomicGlobal: return k_atomic_global;
    case KernelKind::kAtomicShared: return k_atomic_shared;
    case KernelKind::kTensorBf16: return k_tensor_bf16;
    case KernelKind::kTensorTf32: return k_tensor_tf32;
    case KernelKind::kTensorInt8: return k_tensor_int8;
    case KernelKind::kTensorFp64: return k_tensor_fp64_dmma;
    case KernelKind::kWgmmaFp16: return k_wgmma_fp16;
    case KernelKind::kWgmmaBf16: return k_wgmma_bf16;
    case KernelKind::kWgmmaFp8: return k_wgmma_fp8;
    case KernelKind::kFp16Hfma2Fma: return k_fp16_hfma2_fma;
  }
  return nullptr;
}

// The feature bits (tensor_kernels.cuh) a kernel's code needs.
unsigned FeaturesNeeded(KernelKind kind) {
  switch (kind) {
    case KernelKind::kTensorBf16:
    case KernelKind::kTensorTf32:
    case KernelKind::kTensorInt8:
    case KernelKind::kTensorFp64: return kFeatureMmaSm80;
    case KernelKind::kWgmmaFp16:
    case KernelKind::kWgmmaBf16:
    case KernelKind::kWgmmaFp8: return kFeatureWgmma;
    default: return 0;
  }
}

#ifndef WATTCAL_CUDA_ARCHS
#define WATTCAL_CUDA_ARCHS "?"
#endif

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}

// xorshift64*, the generator of the input words.
class Xorshift {
 public:
  explicit Xorshift(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {
    if (s_ == 0) s_ = 1;
  }
  uint32_t Next() {
    s_ ^= s_ >> 12, s_ ^= s_ << 25, s_ ^= s_ >> 27;
    return static_cast<uint32_t>((s_ * 0x2545F4914F6CDD1Dull) >> 32);
  }

 private:
  uint64_t s_;
};

// The toggle sweep: its percentages, and each one's mask (0, 8, 16 or 32 bits set).
constexpr int kTogglePcts[] = {0, 25, 50, 100};
constexpr int kToggleRegions = 4;
int ToggleIndex(int pct) {
  for (int i = 0; i < kToggleRegions; ++i) {
    if (kTogglePcts[i] == pct) return i;
  }
  return -1;
}
uint32_t ToggleMaskOf(int pct) {
  const int bits = 32 * pct / 100;
  return bits >= 32 ? ~0u : (1u << bits) - 1u;
}
bool IsNormalFloat(uint32_t w) {
  const uint32_t e = (w >> 23) & 0xffu;
  return e != 0 && e != 0xffu;
}
// A base word whose Gray cycle of k_fp32_fma's chains holds normal floats only (x*1 + -0 == x).
uint32_t ToggleBase(uint32_t mask, Xorshift& rng) {
  for (int tries = 0; tries < (1 << 20); ++tries) {
    const uint32_t c = rng.Next();
    bool ok = true;
    for (uint32_t j = 0; j < kChains; ++j) ok = ok && IsNormalFloat(ToggleWord(c, mask, j));
    if (ok) return c;
  }
  throw std::runtime_error("the toggle sweep found no base word of normal floats");
}

class CudaDevice : public BenchmarkDevice {
 public:
  CudaDevice(int index, DataMode data, uint64_t seed) : index_(index), data_(data) {
    Check(cudaSetDevice(index), "cudaSetDevice");
    // Block (rather than spin) while waiting for a launch: the host thread that waits shares
    // the CPU with the NVML sampler. Not essential: a refusal is ignored.
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) cudaGetLastError();
    Check(cudaGetDeviceProperties(&prop_, index), "cudaGetDeviceProperties");
    // Three buffers of up to 512 MiB (an eighth of the memory each on small GPUs): far beyond L2.
    unsigned long long words = 1ull << 27;
    while (words > (1ull << 20) && words * 4 * 8 > prop_.totalGlobalMem) words >>= 1;
    mask_ = words - 1;
    // The L2 region: at most a quarter of L2, a power of two.
    unsigned long long l2 = 1ull << 10;
    while (l2 * 2 * 4 * 4 <= static_cast<unsigned long long>(std::max(prop_.l2CacheSize, 4096))) l2 *= 2;
    l2_mask_ = l2 - 1;
    Check(cudaMalloc(&in_, words * 4), "cudaMalloc (input buffer)");
    Check(cudaMalloc(&out_, words * 4), "cudaMalloc (output buffer)");
    Check(cudaMalloc(&toggle_, words * 4), "cudaMalloc (toggle buffer)");
    Check(cudaMemset(out_, 0, words * 4), "cudaMemset");
    FillInput(words, seed);
    FillToggleRegions(words, seed);
    Check(cudaMemcpyFromSymbol(&features_, wattcal_kernel_features, sizeof features_), "cudaMemcpyFromSymbol");
    Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    for (cudaEvent_t& e : done_) Check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    Check(cudaEventCreate(&start_), "cudaEventCreate");
    Check(cudaEventCreate(&stop_), "cudaEventCreate");
    // One block per SM (the SM sweep, tensor_intensity): more dynamic shared memory than half an
    // SM holds, beside the kernel's own static shared memory (wgmma's 24 KB). Allowed per kernel
    // when its first such launch comes (Enqueue), so that no other launch sees the attribute.
    one_per_sm_smem_ =
        static_cast<int>(std::min<size_t>(prop_.sharedMemPerMultiprocessor / 2 + 1024,
                                          prop_.sharedMemPerBlockOptin - kWgmmaBlockBytes));
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
    cudaFree(toggle_);
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

  // A kernel compiled out of the code loaded for this GPU (a build without its architecture:
  // the driver then JIT-compiles the PTX of an older one, where it is empty).
  std::string Unavailable(const Benchmark& b) const override {
    const unsigned need = FeaturesNeeded(b.kernel);
    if ((features_ & need) == need) return "";
    return std::string(KernelName(b.kernel)) + " has no code for this GPU in this build (CUDA architectures " +
           WATTCAL_CUDA_ARCHS + "): rebuild with -DWATTCAL_CUDA_ARCHITECTURES=... naming " +
           (need == kFeatureWgmma ? "90a-real" : "80-real or 80-virtual");
  }

 private:
  // Input words: xorshift64* from the seed, generated on the host (no set-up kernel to show
  // up among the profiled launches), or zeros.
  void FillInput(unsigned long long words, uint64_t seed) {
    if (data_ == DataMode::kZeros) {
      Check(cudaMemset(in_, 0, words * 4), "cudaMemset");
      return;
    }
    std::vector<uint32_t> chunk(1u << 22);
    Xorshift rng(seed);
    for (unsigned long long at = 0; at < words; at += chunk.size()) {
      for (uint32_t& w : chunk) {
        w = rng.Next();
        if (w == 0) w = 1;  // 0 means "zero data" to the kernels' maps
      }
      Check(cudaMemcpy(in_ + at, chunk.data(), chunk.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
  }

  // The toggle sweep's read regions (a quarter of the toggle buffer each, still far beyond
  // L2), generated on the host like the input: word a = word a-1 XOR the mask rotated at
  // random, so consecutive words differ in exactly 0, 8, 16 or 32 bits. Also the base words
  // of k_dram_write's and k_fp32_fma's toggle words. Zeros on --data zeros.
  void FillToggleRegions(unsigned long long words, uint64_t seed) {
    const unsigned long long region = words / kToggleRegions;
    toggle_region_mask_ = region - 1;
    if (data_ == DataMode::kZeros) {
      Check(cudaMemset(toggle_, 0, words * 4), "cudaMemset");
      return;
    }
    Xorshift rng(seed ^ 0x746f67676c65ull);  // "toggle"
    std::vector<uint32_t> chunk(std::min<unsigned long long>(region, 1u << 22));
    for (int t = 0; t < kToggleRegions; ++t) {
      const uint32_t mask = ToggleMaskOf(kTogglePcts[t]);
      toggle_base_[t] = ToggleBase(mask, rng);
      uint32_t w = toggle_base_[t];
      for (unsigned long long at = 0; at < region; at += chunk.size()) {
        for (uint32_t& x : chunk) {
          x = w;
          w ^= RotateLeft(mask, static_cast<int>(rng.Next() & 31u));
        }
        Check(cudaMemcpy(toggle_ + t * region + at, chunk.data(), chunk.size() * 4, cudaMemcpyHostToDevice),
              "cudaMemcpy");
      }
    }
  }

  void Enqueue(const Benchmark& b, int64_t iters) {
    const bool zeros = data_ == DataMode::kZeros;
    KParams p;
    std::memset(&p, 0, sizeof p);
    p.in = in_;
    p.out = out_;
    p.mask = mask_;
    p.l2_mask = l2_mask_;
    p.iters = iters;
    p.lanes = b.lanes;
    p.sleep_ns = 1000;
    p.lcg_inc = zeros ? 0u : 1013904223u;
    p.n_fma = b.mix.fma, p.n_int = b.mix.int_ops, p.n_fp64 = b.mix.fp64, p.n_sfu = b.mix.sfu;
    p.n_shared = b.mix.shared, p.n_l2 = b.mix.l2, p.n_dram = b.mix.dram, p.n_mma = b.mix.mma;
    p.fma_one = zeros ? 0.0f : 1.0f;
    p.fma_zero = zeros ? 0.0f : -0.0f;
    if (b.toggle_pct >= 0) {
      const int t = ToggleIndex(b.toggle_pct);
      if (t < 0) throw std::runtime_error(b.name + ": the toggle sweep has no " + std::to_string(b.toggle_pct) + "%");
      p.toggle = 1;
      p.toggle_mask = zeros ? 0u : ToggleMaskOf(b.toggle_pct);
      p.toggle_base = zeros ? 0u : toggle_base_[t];
      if (b.kernel == KernelKind::kDramLd) {
        p.in = toggle_ + t * (toggle_region_mask_ + 1);
        p.mask = toggle_region_mask_;
      }
    }
    const size_t smem = b.one_block_per_sm ? one_per_sm_smem_ : 0;
    if (b.one_block_per_sm && one_per_sm_allowed_.insert(b.kernel).second) {
      Check(cudaFuncSetAttribute(Function(b.kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 one_per_sm_smem_),
            KernelName(b.kernel));
    }
    Function(b.kernel)<<<static_cast<unsigned>(b.blocks), b.threads, smem, stream_>>>(p);
    Check(cudaGetLastError(), KernelName(b.kernel));
  }

  int index_;
  DataMode data_;
  cudaDeviceProp prop_{};
  uint32_t* in_ = nullptr;
  uint32_t* out_ = nullptr;
  uint32_t* toggle_ = nullptr;
  unsigned long long mask_ = 0, l2_mask_ = 0, toggle_region_mask_ = 0;
  uint32_t toggle_base_[kToggleRegions] = {};
  unsigned features_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_[2] = {nullptr, nullptr};
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  int64_t next_ = 0;
  int one_per_sm_smem_ = 0;
  std::set<KernelKind> one_per_sm_allowed_;  // the kernels allowed one_per_sm_smem_ so far
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
