#!/usr/bin/env bash
# The calibration suite with counters on a GPU machine, in one prepared command:
#
#   scripts/device_capture.sh OUTDIR
#
# for a machine that has only the NVIDIA driver, Nsight Compute (`ncu`) and this checkout with its
# prebuilt build/bin/wattcal-capture (CUDA runtime linked statically, NVML loaded at run time:
# `ldd` shows only system libraries). Clocks and power settings are never changed.
#
# OUTDIR must be new or empty. It receives:
#   suite/            the capture directory (wattcal-ingest --capture OUTDIR/suite --gpu DESC)
#   suite.tar.gz      the same, packed, to carry back
#   env/              what the machine was: nvidia-smi -q, ncu --version, the binary's ldd,
#                     ncu --query-metrics for the chip (to check the descriptions' metric names)
#   device_capture.log  this script's own output
#
# The suite's seconds per benchmark are chosen so that the power run takes about
# POWER_BUDGET_S (default 240 s; at the 0.6 s floor the 257 benchmarks of a 132-SM GPU, the 18
# that reach the power cap at their own 3.3 s, plan 299 s: `wattcal-capture --plan-seconds`, printed
# below; scripts/device_suite2.sh is the round-two script, with GPM fields) and the whole
# script, counters included (one profiled launch per benchmark; their time under ncu is not yet
# measured on silicon: the log times each phase), under 8 minutes.
# Environment (all optional):
#   WATTCAL_CAPTURE       the binary (default: build/bin/wattcal-capture beside this script)
#   GPU_DESCRIPTION       microbench_specs/gpus/<gpu>.json (default: from the GPU's name)
#   POWER_BUDGET_S        seconds for the power run (default 240)
#   WATTCAL_CAPTURE_ARGS  more wattcal-capture options, e.g. "--only 'fp32_.*|dram_.*'"
#   NCU                   the ncu program (default: ncu on the PATH)
# Exit status: 0 done, 1 bad arguments or OUTDIR not empty, 2 no binary / GPU / ncu,
# 3 the capture failed (what it wrote is packed anyway).
set -uo pipefail

die() { echo "device_capture.sh: error: $*" >&2; exit "${2:-1}"; }
[[ $# -eq 1 ]] || die "usage: scripts/device_capture.sh OUTDIR" 1
OUT=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${WATTCAL_CAPTURE:-$ROOT/build/bin/wattcal-capture}
NCU=${NCU:-ncu}
if [[ -e $OUT ]] && { [[ ! -d $OUT ]] || [[ -n $(ls -A "$OUT") ]]; }; then
  die "$OUT exists and is not an empty directory: give a new one (an earlier capture is never overwritten)" 1
fi
[[ -x $BIN ]] || die "$BIN is not an executable: build it first (cmake --build build --target wattcal-capture)" 2
command -v "$NCU" > /dev/null || die "'$NCU' is not on the PATH: the counters need Nsight Compute (or set NCU=...)" 2
mkdir -p "$OUT/env" || die "cannot create $OUT" 1
exec > >(tee "$OUT/device_capture.log") 2>&1
start=$(date +%s)
say() { printf '[device_capture %4ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }

say "machine: $(uname -srm), $(date -u +%FT%TZ)"
ldd "$BIN" > "$OUT/env/ldd.txt" 2>&1
say "binary: $BIN ($(grep -c '=>' "$OUT/env/ldd.txt") shared libraries: $(awk '/=>/{print $1}' "$OUT/env/ldd.txt" | tr '\n' ' '))"
"$NCU" --version > "$OUT/env/ncu_version.txt" 2>&1
say "ncu: $(tail -n 1 "$OUT/env/ncu_version.txt")"
name=""
if command -v nvidia-smi > /dev/null; then
  nvidia-smi -q > "$OUT/env/nvidia_smi_q.txt" 2>&1
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
fi
say "GPU: ${name:-unknown (no nvidia-smi)}"
if [[ -z ${GPU_DESCRIPTION:-} ]]; then
  case $name in
    *H200*) GPU_DESCRIPTION=$ROOT/microbench_specs/gpus/h200_sxm.json; chip=gh100 ;;
    *A100*) GPU_DESCRIPTION=$ROOT/microbench_specs/gpus/a100_pcie_40gb.json; chip=ga100 ;;
    *) GPU_DESCRIPTION=$ROOT/microbench_specs/gpus/h100_sxm.json; chip=gh100 ;;
  esac
fi
say "description: $GPU_DESCRIPTION"
if [[ -n ${chip:-} ]]; then
  timeout 60 "$NCU" --query-metrics --chip "$chip" > "$OUT/env/ncu_query_metrics_$chip.txt" 2>&1 ||
    say "ncu --query-metrics --chip $chip failed (kept in env/)"
fi

# Seconds per benchmark from the plan's size and the budget.
eval "extra=(${WATTCAL_CAPTURE_ARGS:-})"
benchmarks=$("$BIN" --list "${extra[@]}" 2>/dev/null | tail -n +2 | wc -l)
[[ $benchmarks -gt 0 ]] || benchmarks=$("$BIN" --list 2>/dev/null | tail -n +2 | wc -l)
budget=${POWER_BUDGET_S:-240}
seconds=$(awk -v b="$budget" -v n="$benchmarks" 'BEGIN { s = b / n - 0.45; if (s > 2) s = 2; if (s < 0.6) s = 0.6; printf "%.2f", s }')
say "plan: $benchmarks benchmarks x $seconds s (+0.3 s idle each; those that reach the power cap their own window)"
say "planned: $("$BIN" --plan-seconds --counters --seconds "$seconds" --gap-ms 300 "${extra[@]}" 2>&1)"

"$BIN" --out "$OUT/suite" --counters --ncu "$NCU" --gpu-description "$GPU_DESCRIPTION" \
  --seconds "$seconds" --gap-ms 300 "${extra[@]}"
status=$?
say "wattcal-capture exited with status $status"

tar czf "$OUT/suite.tar.gz" -C "$OUT" suite 2>/dev/null
say "packed $OUT/suite.tar.gz ($(du -h "$OUT/suite.tar.gz" | cut -f1)); the whole run took $(( $(date +%s) - start )) s"
if [[ $status -ne 0 ]]; then
  say "the capture failed: see above; OUTDIR holds what it wrote"
  exit 3
fi
say "next: build/bin/wattcal-ingest --capture $OUT/suite --gpu $GPU_DESCRIPTION --tidy measured.csv"
