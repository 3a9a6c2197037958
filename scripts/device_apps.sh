#!/usr/bin/env bash
# Real applications recorded on a GPU machine, in one prepared command:
#
#   scripts/device_apps.sh OUTDIR
#
# records each PyTorch application of scripts/device_apps.py with `wattcal-capture --app NAME
# --counters` (power of each marked window, then one profiled run under ncu) into OUTDIR/apps, an
# applications capture that `wattcal-predict --capture` and `make -f Makefile.runs gpu APPS=...`
# read. For a machine with the NVIDIA driver, ncu, PyTorch with CUDA and this checkout's prebuilt
# build/bin/wattcal-capture. Clocks and power settings are never changed.
#
# OUTDIR must be new or empty. It receives apps/ (the capture), apps.tar.gz (the same, packed),
# env/ (python and torch versions, the GPU) and device_apps.log (this script's output).
# Environment (all optional):
#   WATTCAL_CAPTURE   the binary (default: build/bin/wattcal-capture beside this script)
#   GPU_DESCRIPTION   microbench_specs/gpus/<gpu>.json (default: from the GPU's name)
#   APPS              the applications, space-separated (default: all of device_apps.py --list)
#   APP_SECONDS       seconds of each marked window (default 2)
#   REPEAT            power runs per application (default 2)
#   APP_PROGRAM       the program run for each NAME (default: python3 scripts/device_apps.py);
#                     it is given NAME and --seconds S, and must mark its window NAME
#   NCU               the ncu program (default: ncu on the PATH)
#   DEADLINE_EPOCH    date +%s after which no application is started (default: none)
#   APP_MIN_S         seconds an application needs at least, for DEADLINE_EPOCH (default 40)
#   COUNTERS          1 (default) or 0: power only, no ncu run. When ncu itself fails (it cannot load
#                     its library on some machines), that application is recorded again power only
#                     and COUNTERS becomes 0 for the rest.
# An application already in OUTDIR/apps (a resumed campaign) is not recorded again. When ncu profiles
# no kernel inside the marked window (an NVTX library that does not reach ncu), the application is
# recorded again with --all-kernels: every kernel of the run, warm-up included, the same mix.
# Exit status: 0 every application recorded, 1 bad arguments or OUTDIR not empty, 2 no binary,
# ncu or PyTorch, 3 some application failed (the others are kept, and packed).
set -uo pipefail

die() { echo "device_apps.sh: error: $*" >&2; exit "${2:-1}"; }
[[ $# -eq 1 ]] || die "usage: scripts/device_apps.sh OUTDIR" 1
OUT=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${WATTCAL_CAPTURE:-$ROOT/build/bin/wattcal-capture}
NCU=${NCU:-ncu}
PROGRAM=${APP_PROGRAM:-python3 $ROOT/scripts/device_apps.py}
SECONDS_PER_APP=${APP_SECONDS:-2}
REPEAT=${REPEAT:-2}
if [[ -e $OUT ]] && { [[ ! -d $OUT ]] || [[ -n $(ls -A "$OUT") ]]; } && [[ -z ${RESUME:-} ]]; then
  die "$OUT exists and is not an empty directory: give a new one (an earlier capture is never overwritten)" 1
fi
[[ -x $BIN ]] || die "$BIN is not an executable: build it first (cmake --build build --target wattcal-capture)" 2
command -v "$NCU" > /dev/null || die "'$NCU' is not on the PATH: the counters need Nsight Compute (or set NCU=...)" 2
mkdir -p "$OUT/env" || die "cannot create $OUT" 1
exec > >(tee -a "$OUT/device_apps.log") 2>&1
start=$(date +%s)
say() { printf '[device_apps %4ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }

if [[ -z ${APP_PROGRAM:-} ]]; then
  python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.is_available())' \
    > "$OUT/env/python_torch.txt" 2>&1
  read -r py torch cuda available < "$OUT/env/python_torch.txt"
  [[ ${available:-} == True ]] || die "PyTorch with CUDA is needed: $(tail -n 1 "$OUT/env/python_torch.txt")" 2
  say "python $py, torch $torch (CUDA $cuda)"
fi
name=""
if command -v nvidia-smi > /dev/null; then
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > "$OUT/env/gpu.csv" 2>&1
fi
if [[ -z ${GPU_DESCRIPTION:-} ]]; then
  case $name in
    *H200*) GPU_DESCRIPTION=$ROOT/microbench_specs/gpus/h200_sxm.json ;;
    *A100*) GPU_DESCRIPTION=$ROOT/microbench_specs/gpus/a100_pcie_40gb.json ;;
    *) GPU_DESCRIPTION=$ROOT/microbench_specs/gpus/h100_sxm.json ;;
  esac
fi
say "GPU: ${name:-unknown (no nvidia-smi)}; description: $GPU_DESCRIPTION"
if [[ -n ${APPS:-} ]]; then
  read -r -a apps <<< "$APPS"
else
  mapfile -t apps < <($PROGRAM --list)
fi
[[ ${#apps[@]} -gt 0 ]] || die "no applications to record" 1
say "${#apps[@]} applications x $REPEAT runs of a ${SECONDS_PER_APP} s window, then one counters run each: ${apps[*]}"

failed=()
record() {  # record APP [more wattcal-capture options]: its output in $OUT/env/APP.log as well
  local app=$1; shift
  # shellcheck disable=SC2086  # PROGRAM is a command line
  local counters=()
  [[ ${COUNTERS:-1} == 0 ]] || counters=(--counters --ncu "$NCU")
  "$BIN" --app "$app" --out "$OUT/apps" --repeat "$REPEAT" "${counters[@]}" \
    --gpu-description "$GPU_DESCRIPTION" "$@" -- $PROGRAM "$app" --seconds "$SECONDS_PER_APP" 2>&1 |
    tee "$OUT/env/$app.log"
}
for app in "${apps[@]}"; do
  if [[ -f $OUT/apps/ncu/$app.csv ]] || grep -q "^$app," "$OUT/apps/windows.csv" 2> /dev/null; then
    say "--- $app: recorded already"
    continue
  fi
  if [[ -n ${DEADLINE_EPOCH:-} ]] && (( $(date +%s) + ${APP_MIN_S:-40} > DEADLINE_EPOCH )); then
    say "--- $app: not started, the deadline is near"
    failed+=("$app(not started)")
    continue
  fi
  say "--- $app"
  if ! record "$app"; then
    if grep -q "profiled no kernel" "$OUT/env/$app.log"; then
      say "$app: no kernel inside the marked window reached ncu; again with --all-kernels"
      record "$app" --all-kernels && continue
    elif [[ ${COUNTERS:-1} != 0 ]] && grep -q -- "--counters: .*$(basename "$NCU")" "$OUT/env/$app.log"; then
      say "$app: ncu failed (see env/$app.log); power only from here on"
      COUNTERS=0
      record "$app" && continue
    fi
    failed+=("$app")
    say "$app failed (the others go on)"
  fi
done

tar czf "$OUT/apps.tar.gz" -C "$OUT" apps 2>/dev/null
say "packed $OUT/apps.tar.gz ($(du -h "$OUT/apps.tar.gz" | cut -f1)); the whole run took $(( $(date +%s) - start )) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  say "failed: ${failed[*]}"
  exit 3
fi
say "next: build/bin/wattcal-predict --model MODEL --capture $OUT/apps --gpu $GPU_DESCRIPTION --out apps_predictions.csv"
