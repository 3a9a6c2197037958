#!/usr/bin/env python3
"""Real applications for a GPU machine's wattcal campaign: PyTorch programs a GPU user runs, each
with its steady part inside one marked window (python/wattcal_marks.py), so that imports, set-up
and warm-up are not measured.

    python3 scripts/device_apps.py NAME [--seconds S]     (run under wattcal-capture --app NAME)
    python3 scripts/device_apps.py --list

The window holds as many steps as fill about S seconds (default 2), timed in the warm-up. In the
counters run (wattcal-capture sets WATTCAL_PROFILING=1 there) the window holds 2 steps: ncu replays
every kernel launch inside the window, and the utilisations are a ratio of summed counters, so two
steps give the same mix as many. Needs PyTorch with CUDA; exits 2 without it.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import wattcal_marks  # noqa: E402


def workloads(torch):
    """name -> (set-up, step): set-up returns the step's state, step(state) does one unit of work."""
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1234)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device=dev, generator=g, dtype=torch.float32).to(dtype)

    def gemm(dtype, n):
        def setup():
            return randn(n, n, dtype=dtype), randn(n, n, dtype=dtype)
        return setup, lambda s: torch.matmul(s[0], s[1])

    def conv():
        x, w = randn(32, 128, 56, 56, dtype=torch.float16), randn(128, 128, 3, 3, dtype=torch.float16)
        return x, w

    def attention():
        q = randn(16, 16, 2048, 64, dtype=torch.bfloat16)
        return q, randn(16, 16, 2048, 64, dtype=torch.bfloat16), randn(16, 16, 2048, 64, dtype=torch.bfloat16)

    big = 1 << 27  # 128 Mi elements: 512 MiB of FP32, far beyond L2
    return {
        "gemm_fp16": gemm(torch.float16, 8192),
        "gemm_bf16": gemm(torch.bfloat16, 8192),
        "gemm_fp32": gemm(torch.float32, 8192),  # TF32 off: FP32 FMA (set in main)
        "gemm_fp64": gemm(torch.float64, 4096),
        "conv2d_fp16": (conv, lambda s: torch.nn.functional.conv2d(s[0], s[1], padding=1)),
        "attention_bf16": (attention, lambda s: torch.nn.functional.scaled_dot_product_attention(*s)),
        "reduction": (lambda: randn(big), lambda x: x.sum()),
        "sort": (lambda: randn(1 << 26), lambda x: torch.sort(x)),
        "fft": (lambda: randn(64, 1 << 20), lambda x: torch.fft.rfft(x)),
        "random": (lambda: torch.empty(big, device=dev), lambda x: x.uniform_(generator=g)),
        "elementwise": (lambda: (randn(big), randn(big)), lambda s: torch.addcmul(s[0], s[0], s[1], value=0.5)),
    }


NAMES = ["gemm_fp16", "gemm_bf16", "gemm_fp32", "gemm_fp64", "conv2d_fp16", "attention_bf16", "reduction", "sort",
         "fft", "random", "elementwise"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="the application: " + ", ".join(NAMES))
    parser.add_argument("--seconds", type=float, default=2.0, help="length of the marked window (default 2)")
    parser.add_argument("--list", action="store_true", help="print the applications and exit")
    a = parser.parse_args()
    if a.list:
        print("\n".join(NAMES))
        return 0
    if a.name not in NAMES:
        parser.error("unknown application %r: one of %s" % (a.name, ", ".join(NAMES)))
    if not 0.1 <= a.seconds <= 600:
        parser.error("--seconds %g: give 0.1 to 600" % a.seconds)
    try:
        import torch
    except ImportError:
        sys.stderr.write("device_apps.py: PyTorch is not importable here\n")
        return 2
    if not torch.cuda.is_available():
        sys.stderr.write("device_apps.py: PyTorch sees no CUDA GPU\n")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    setup, step = workloads(torch)[a.name]
    state = setup()
    torch.cuda.synchronize()
    for _ in range(3):  # warm-up: cuBLAS/cuDNN heuristics, allocator
        step(state)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        step(state)
    torch.cuda.synchronize()
    per_step = max((time.perf_counter() - t0) / 5, 1e-6)
    profiling = os.environ.get("WATTCAL_PROFILING", "") not in ("", "0")
    steps = 2 if profiling else max(1, int(round(a.seconds / per_step)))
    with wattcal_marks.window(a.name, steps=steps):  # one window around the loop, with its steps
        for _ in range(steps):
            step(state)
    print("%s: %d steps of %.3f ms in the window%s" % (a.name, steps, 1e3 * per_step,
                                                        " (counters run)" if profiling else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
