// What every kernel of the suite shares: the launch parameters (KParams), the data helpers and
// the toggle sweep's words. Included by kernels.cu only (one translation unit, so that one
// fatbinary entry holds every kernel); tensor_kernels.cuh and memory_kernels.cuh build on it.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

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
  // The toggle sweep (group toggle): k_dram_write and k_fp32_fma take their words from
  // ToggleWord(toggle_base, toggle_mask, j) when `toggle` is set; k_dram_ld reads a region the
  // host filled the same way. toggle_mask has 0, 8, 16 or 32 bits set (0, 25, 50, 100%);
  // on --data zeros it and toggle_base are 0, and so are fma_one / fma_zero.
  int toggle;
  unsigned toggle_mask;
  unsigned toggle_base;
  float fma_one, fma_zero;  // 1 and -0 (x*1 + -0 == x exactly); 0 and 0 on zeros
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
// A word as a fraction in [0, 1) (0 -> 0).
__device__ __forceinline__ float Unit(uint32_t w) { return (w >> 8) * 5.9604645e-08f; }
__device__ __forceinline__ bool LaneActive(const KParams& p) { return (threadIdx.x & 31) < p.lanes; }
// Keeps a result alive: one store per thread at the end.
__device__ __forceinline__ void Sink(const KParams& p, uint32_t v) { p.out[Gid() & p.mask] = v; }

// The toggle sweep's words. Word j of a cycle is the base XOR the columns selected by the Gray
// code of j, column i being the toggle mask rotated left by 11*i: words j and j+1 (and the
// last and first of a cycle of 2^m) differ in exactly the mask's bits of one column, i.e. in
// 0, 8, 16 or 32 of their 32 bits. The host uses the same function to check its choices.
__host__ __device__ inline uint32_t RotateLeft(uint32_t x, int r) {
  r &= 31;
  return r == 0 ? x : (x << r) | (x >> (32 - r));
}
__host__ __device__ inline uint32_t ToggleWord(uint32_t base, uint32_t mask, uint32_t j) {
  uint32_t w = base;
  for (uint32_t g = j ^ (j >> 1), i = 0; g != 0; g >>= 1, ++i) {
    if (g & 1u) w ^= RotateLeft(mask, static_cast<int>(11 * i));
  }
  return w;
}
