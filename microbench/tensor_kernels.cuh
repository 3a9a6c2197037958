// The tensor-core kernels of the suite (suite_plan.h: groups unit, tensor, occupancy), included
// by kernels.cu after kernel_common.cuh. Each family runs on random operands (16-bit values in
// [-1, 1), TF32/FP64 values in [-1, 1), random INT8 bytes, FP8 E4M3 bytes below 2 in
// magnitude: never Inf or NaN, which would freeze the accumulators) and accumulates
// D = A*B + D, so that accumulator bits keep toggling; on zeros everything stays 0.
//
//   kernel              instruction                                  SASS      needs
//   k_tensor_hmma       mma.sync m16n8k16 f32.f16 (wmma on sm_75)     HMMA      sm_75
//   k_tensor_bf16       mma.sync m16n8k16 f32.bf16                   HMMA      sm_80
//   k_tensor_tf32       mma.sync m16n8k8 f32.tf32                    HMMA      sm_80
//   k_tensor_int8       mma.sync m16n8k32 s32.s8.s8.s32              IMMA      sm_80
//   k_tensor_fp64_dmma  mma.sync m8n8k4 f64                          DMMA      sm_80
//   k_wgmma_fp16        wgmma.mma_async m64n128k16 f32.f16           HGMMA     sm_90a
//   k_wgmma_bf16        wgmma.mma_async m64n128k16 f32.bf16          HGMMA     sm_90a
//   k_wgmma_fp8         wgmma.mma_async m64n128k32 f32.e4m3.e4m3     QGMMA     sm_90a
//
// Code an architecture lacks is compiled out (an empty kernel); the host never launches it
// there: the plan's min/max compute capability (suite_plan.h) and the feature word below,
// which says what the code loaded for the running GPU holds (a build without sm_90a code, or
// PTX of an older architecture JIT-compiled for a newer GPU, leaves those kernels empty).
#pragma once

#include <cuda_bf16.h>
#include <mma.h>

#include <cstring>

#include "kernel_common.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WATTCAL_MMA_SM80 1
#else
#define WATTCAL_MMA_SM80 0
#endif
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WATTCAL_WGMMA 1
#else
#define WATTCAL_WGMMA 0
#endif

// Bits of the feature word.
constexpr unsigned kFeatureMmaSm80 = 1u;  // k_tensor_bf16/tf32/int8/fp64_dmma have their code
constexpr unsigned kFeatureWgmma = 2u;    // k_wgmma_* have their code (sm_90a)

// What the code loaded for this GPU holds; the host reads it with cudaMemcpyFromSymbol (no
// kernel launch, so nothing shows up among the profiled kernels).
__device__ unsigned wattcal_kernel_features =
    (WATTCAL_MMA_SM80 ? kFeatureMmaSm80 : 0u) | (WATTCAL_WGMMA ? kFeatureWgmma : 0u);

#if WATTCAL_MMA_SM80
// Two 16-bit halves in [-1, 1) from a word (0 -> 0, 0).
__device__ __forceinline__ uint32_t HalfPair(uint32_t w) {
  const __half2 h = __floats2half2_rn(static_cast<int16_t>(w & 0xffff) * 3.0517578e-05f,
                                      static_cast<int16_t>(w >> 16) * 3.0517578e-05f);
  uint32_t b;
  memcpy(&b, &h, sizeof b);
  return b;
}
// The same as two bfloat16.
__device__ __forceinline__ uint32_t Bf16Pair(uint32_t w) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(static_cast<int16_t>(w & 0xffff) * 3.0517578e-05f,
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

// Two accumulators x two operand sets, in the order k_tensor_hmma has always used.
template <class State>
__device__ __forceinline__ void TensorLoop(const KParams& p) {
  State t;
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

extern "C" __global__ void k_tensor_hmma(KParams p) { TensorLoop<TensorState>(p); }

#if WATTCAL_MMA_SM80
// The sm_80 mma.sync families, each with TensorState's shape: fragments a[set], b[set],
// accumulators d[acc].

// BF16: m16n8k16, A four and B two registers of bf16 pairs, f32 accumulators (HMMA.16816.F32.BF16).
struct Bf16Mma {
  uint32_t a[2][4], b[2][2];
  float d[2][4];
  __device__ void Init(const KParams& p) {
    for (int s = 0; s < 2; ++s) {
      for (int k = 0; k < 4; ++k) a[s][k] = Bf16Pair(Word(p, s * 6 + k)), d[s][k] = 0.0f;
      for (int k = 0; k < 2; ++k) b[s][k] = Bf16Pair(Word(p, s * 6 + 4 + k));
    }
  }
  __device__ __forceinline__ void Step(int acc, int set) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[acc][0]), "+f"(d[acc][1]), "+f"(d[acc][2]), "+f"(d[acc][3])
        : "r"(a[set][0]), "r"(a[set][1]), "r"(a[set][2]), "r"(a[set][3]), "r"(b[set][0]),
          "r"(b[set][1]));
  }
  __device__ uint32_t Digest() const { return __float_as_uint(d[0][0] + d[1][3]); }
};

// TF32: m16n8k8, one FP32 value in [-1, 1) per register (the unit reads its top 19 bits),
// f32 accumulators (HMMA.1688.F32.TF32).
struct Tf32Mma {
  uint32_t a[2][4], b[2][2];
  float d[2][4];
  __device__ void Init(const KParams& p) {
    for (int s = 0; s < 2; ++s) {
      for (int k = 0; k < 4; ++k) a[s][k] = __float_as_uint(Signed(Word(p, s * 6 + k))), d[s][k] = 0.0f;
      for (int k = 0; k < 2; ++k) b[s][k] = __float_as_uint(Signed(Word(p, s * 6 + 4 + k)));
    }
  }
  __device__ __forceinline__ void Step(int acc, int set) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[acc][0]), "+f"(d[acc][1]), "+f"(d[acc][2]), "+f"(d[acc][3])
        : "r"(a[set][0]), "r"(a[set][1]), "r"(a[set][2]), "r"(a[set][3]), "r"(b[set][0]),
          "r"(b[set][1]));
  }
  __device__ uint32_t Digest() const { return __float_as_uint(d[0][0] + d[1][3]); }
};

// INT8: m16n8k32, four random s8 per register, s32 accumulators that wrap (IMMA.16832.S8.S8).
struct Int8Mma {
  uint32_t a[2][4], b[2][2];
  int d[2][4];
  __device__ void Init(const KParams& p) {
    for (int s = 0; s < 2; ++s) {
      for (int k = 0; k < 4; ++k) a[s][k] = Word(p, s * 6 + k), d[s][k] = 0;
      for (int k = 0; k < 2; ++k) b[s][k] = Word(p, s * 6 + 4 + k);
    }
  }
  __device__ __forceinline__ void Step(int acc, int set) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(d[acc][0]), "+r"(d[acc][1]), "+r"(d[acc][2]), "+r"(d[acc][3])
        : "r"(a[set][0]), "r"(a[set][1]), "r"(a[set][2]), "r"(a[set][3]), "r"(b[set][0]),
          "r"(b[set][1]));
  }
  __device__ uint32_t Digest() const { return static_cast<uint32_t>(d[0][0] ^ d[1][3]); }
};

// FP64: m8n8k4, one double in [-1, 1) of A and of B per thread, two f64 accumulators (DMMA.884).
struct Fp64Mma {
  double a[2], b[2];
  double d[2][2];
  __device__ void Init(const KParams& p) {
    for (int s = 0; s < 2; ++s) {
      a[s] = Signed(Word(p, s * 4)), b[s] = Signed(Word(p, s * 4 + 1));
      d[s][0] = d[s][1] = 0.0;
    }
  }
  __device__ __forceinline__ void Step(int acc, int set) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(d[acc][0]), "+d"(d[acc][1])
                 : "d"(a[set]), "d"(b[set]));
  }
  __device__ uint32_t Digest() const {
    const unsigned long long bits = __double_as_longlong(d[0][0] + d[1][1]);
    return static_cast<uint32_t>(bits ^ (bits >> 32));
  }
};
#endif  // WATTCAL_MMA_SM80

// Never launched where the code is compiled out (see the top of this file).
#if WATTCAL_MMA_SM80
#define WATTCAL_SM80_KERNEL(name, State) \
  extern "C" __global__ void name(KParams p) { TensorLoop<State>(p); }
#else
#define WATTCAL_SM80_KERNEL(name, State) \
  extern "C" __global__ void name(KParams p) { (void)p; }
#endif
WATTCAL_SM80_KERNEL(k_tensor_bf16, Bf16Mma)
WATTCAL_SM80_KERNEL(k_tensor_tf32, Tf32Mma)
WATTCAL_SM80_KERNEL(k_tensor_int8, Int8Mma)
WATTCAL_SM80_KERNEL(k_tensor_fp64_dmma, Fp64Mma)
#undef WATTCAL_SM80_KERNEL

// --- Hopper warpgroup MMAs (sm_90a) ----------------------------------------------------------
//
// Each warpgroup (128 threads; a block of 256 holds two) owns two operand sets in shared
// memory, A 64 x K and B 128 x K, K-major, no swizzle: 8-row x 16-byte core matrices of 128
// contiguous bytes, the two along K 128 bytes apart (leading byte offset), successive 8-row
// groups 256 bytes apart (stride byte offset); 32 bytes of K per row (k16 of 16-bit values,
// k32 of FP8), so A is 2 KB and B 4 KB. The accumulator, 64 x 128 FP32, is 64 registers per
// thread. Per iteration: wgmma.fence, four MMAs alternating the sets, commit, wait.

constexpr int kWgmmaABytes = 64 * 32;
constexpr int kWgmmaBBytes = 128 * 32;
constexpr int kWgmmaSetBytes = kWgmmaABytes + kWgmmaBBytes;
constexpr int kWgmmaBlockBytes = 2 * 2 * kWgmmaSetBytes;  // 2 warpgroups x 2 sets: 24 KB

enum class WgmmaType { kF16, kBf16, kE4m3 };

#if WATTCAL_WGMMA
// A shared-memory matrix descriptor: start address, leading and stride byte offsets (each
// >> 4), base offset 0, no swizzle (bits 62-63 = 0).
__device__ __forceinline__ uint64_t WgmmaDescriptor(const void* smem) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(128 >> 4) << 16) |
         (static_cast<uint64_t>(256 >> 4) << 32);
}

// An operand word in the type's encoding (pairs of 16-bit values in [-1, 1); four E4M3 bytes
// with the top exponent bit cleared: below 2 in magnitude, never NaN).
template <WgmmaType T>
__device__ __forceinline__ uint32_t WgmmaWord(uint32_t w) {
  if constexpr (T == WgmmaType::kF16) {
    return HalfPair(w);
  } else if constexpr (T == WgmmaType::kBf16) {
    return Bf16Pair(w);
  } else {
    return w & 0xBFBFBFBFu;
  }
}

#define WATTCAL_WGMMA_D                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "  \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "   \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WATTCAL_D8(i)                                                                        \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define WATTCAL_D64                                                                     \
  WATTCAL_D8(0), WATTCAL_D8(8), WATTCAL_D8(16), WATTCAL_D8(24), WATTCAL_D8(32), WATTCAL_D8(40), \
      WATTCAL_D8(48), WATTCAL_D8(56)

// One warpgroup MMA, D = A*B + D (scale-d 1, no negation, no transposition).
template <WgmmaType T>
__device__ __forceinline__ void WgmmaStep(float (&d)[64], uint64_t da, uint64_t db) {
  if constexpr (T == WgmmaType::kF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " WATTCAL_WGMMA_D
                 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WATTCAL_D64
                 : "l"(da), "l"(db), "r"(1));
  } else if constexpr (T == WgmmaType::kBf16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WATTCAL_WGMMA_D
                 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WATTCAL_D64
                 : "l"(da), "l"(db), "r"(1));
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " WATTCAL_WGMMA_D
                 ", %64, %65, p, 1, 1;\n}\n"
                 : WATTCAL_D64
                 : "l"(da), "l"(db), "r"(1));
  }
}
#undef WATTCAL_D64
#undef WATTCAL_D8
#undef WATTCAL_WGMMA_D

template <WgmmaType T>
__device__ __forceinline__ void WgmmaLoop(const KParams& p) {
  __shared__ __align__(1024) uint32_t sh[kWgmmaBlockBytes / 4];
  for (int k = threadIdx.x; k < kWgmmaBlockBytes / 4; k += blockDim.x) {
    sh[k] = WgmmaWord<T>(p.in[(static_cast<unsigned long long>(blockIdx.x) * (kWgmmaBlockBytes / 4) + k) & p.mask]);
  }
  // The generic-proxy writes, made visible to the tensor cores' async proxy.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  // The warpgroup's index through a shuffle, so that the compiler knows it (and the
  // descriptors) to be warp-uniform and keeps them in uniform registers.
  const int group = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const char* mine = reinterpret_cast<const char*>(sh) + group * 2 * kWgmmaSetBytes;
  const uint64_t da[2] = {WgmmaDescriptor(mine), WgmmaDescriptor(mine + kWgmmaSetBytes)};
  const uint64_t db[2] = {WgmmaDescriptor(mine + kWgmmaABytes),
                          WgmmaDescriptor(mine + kWgmmaSetBytes + kWgmmaABytes)};
  float d[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) d[k] = 0.0f;
  for (long long i = 0; i < p.iters; ++i) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int u = 0; u < 4; ++u) WgmmaStep<T>(d, da[u & 1], db[u & 1]);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  Sink(p, __float_as_uint(d[0] + d[33] + d[63]));
}
#define WATTCAL_WGMMA_KERNEL(name, T) \
  extern "C" __global__ void name(KParams p) { WgmmaLoop<T>(p); }
#else
#define WATTCAL_WGMMA_KERNEL(name, T) \
  extern "C" __global__ void name(KParams p) { (void)p; }
#endif  // WATTCAL_WGMMA
WATTCAL_WGMMA_KERNEL(k_wgmma_fp16, WgmmaType::kF16)
WATTCAL_WGMMA_KERNEL(k_wgmma_bf16, WgmmaType::kBf16)
WATTCAL_WGMMA_KERNEL(k_wgmma_fp8, WgmmaType::kE4m3)
#undef WATTCAL_WGMMA_KERNEL
