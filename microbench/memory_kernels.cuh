// The memory kernels of the suite (suite_plan.h: groups unit, atomic, occupancy, toggle),
// included by kernels.cu after kernel_common.cuh: shared memory (loads, stores, bank conflicts,
// atomics), L1, L2 (loads, stores), DRAM (loads, stores, copies) and global atomics. Loads
// read random words (summed); stores and atomics write an LCG's values (its increment is 0
// on zeros, where every word stays 0).
#pragma once

#include "kernel_common.cuh"

__device__ __forceinline__ void FillShared(const KParams& p, uint32_t* sh) {
  for (int k = threadIdx.x; k < kSharedWords; k += blockDim.x) {
    sh[k] = p.in[(static_cast<unsigned long long>(blockIdx.x) * kSharedWords + k) & p.mask];
  }
  __syncthreads();
}

// Shared loads, each lane its own bank (LDS).
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

// Shared loads with a stride of 32 words between lanes: all 32 lanes of a warp hit one bank
// at different addresses, a 32-way bank conflict (LDS replayed over 32 wavefronts).
extern "C" __global__ void k_shared_conflict(KParams p) {
  __shared__ uint32_t sh[kSharedWords];
  FillShared(p, sh);
  uint32_t acc[4] = {0, 0, 0, 0};
  uint32_t base = (threadIdx.x & 31) * 32 + (threadIdx.x >> 5);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll / 4; ++u) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[c] += sh[(base + u * 4 + c) & (kSharedWords - 1)];
    }
    base += 19;
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

// atomicAdd on shared memory, the lanes of a warp on distinct consecutive words (ATOMS.ADD).
extern "C" __global__ void k_atomic_shared(KParams p) {
  __shared__ uint32_t sh[kSharedWords];
  FillShared(p, sh);
  uint32_t v = Word(p, 0);
  uint32_t base = threadIdx.x;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) atomicAdd(&sh[(base + u * 32) & (kSharedWords - 1)], v ^ u);
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

// Coalesced loads streaming over a region (L2-resident or larger than L2). k_dram_ld also
// reads the toggle sweep's regions: the host points `in` and `mask` at one of them.
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

// Coalesced stores of an LCG's values streaming over a region: the L2-resident one, cached
// in L2 (STG.E.STRONG.GPU via st.global.cg: the dirty lines stay in L2), or the whole output
// buffer, evict-first (st.global.cs), which L2 writes back to DRAM.
template <bool kL2>
__device__ __forceinline__ void StreamStore(const KParams& p) {
  const unsigned long long mask = kL2 ? p.l2_mask : p.mask;
  const unsigned long long n = Threads();
  unsigned long long idx = Gid();
  uint32_t v = Word(p, 0);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      uint32_t* a = p.out + ((idx + u * n) & mask);
      if (kL2) {
        __stcg(a, v ^ u);
      } else {
        __stcs(a, v ^ u);
      }
    }
    v = v * 1664525u + p.lcg_inc;
    idx += 16 * n;
  }
}

// The toggle sweep's stores. At step s a thread stores w ^ c_s: w = ToggleWord(base, mask,
// Gid() mod 256) (a Gray cycle of 256 words: the address of each store is Gid() mod 256 too,
// the grid being a multiple of 256 threads, so neighbouring words in memory, stored by
// neighbouring threads in the same step, differ in exactly the mask's bits), and c_{s+1} =
// c_s ^ (the mask rotated): a thread's successive stores differ in as many bits.
__device__ __forceinline__ void ToggleStore(const KParams& p) {
  const unsigned long long n = Threads();
  unsigned long long idx = Gid();
  const uint32_t w = ToggleWord(p.toggle_base, p.toggle_mask, static_cast<uint32_t>(idx & 255));
  uint32_t c = 0;
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      __stcs(p.out + ((idx + u * n) & p.mask), w ^ c);
      c ^= RotateLeft(p.toggle_mask, 7 * u + 3);
    }
    idx += 16 * n;
  }
}

extern "C" __global__ void k_l2_write(KParams p) { StreamStore<true>(p); }
extern "C" __global__ void k_dram_write(KParams p) {
  if (p.toggle) {
    ToggleStore(p);
  } else {
    StreamStore<false>(p);
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

// atomicAdd on global memory, spread over the L2-resident region of the output buffer (where
// L2 executes them), the lanes of a warp on distinct consecutive words; the old values are
// not used, so they compile to reductions (RED.E.ADD).
extern "C" __global__ void k_atomic_global(KParams p) {
  const unsigned long long n = Threads();
  unsigned long long idx = Gid();
  uint32_t v = Word(p, 0);
  for (long long i = 0; i < p.iters; ++i) {
#pragma unroll
    for (int u = 0; u < 8; ++u) atomicAdd(p.out + ((idx + u * n) & p.l2_mask), v ^ u);
    v = v * 1664525u + p.lcg_inc;
    idx += 8 * n;
  }
}
