#!/usr/bin/env bash
# Silicon, round two (issue 41): the calibration suite with counters AND GPM fields in one pass,
# on one lent GPU machine, in one prepared command of at most 8 minutes:
#
#   scripts/device_suite2.sh h100|h200 OUTDIR
#
# for a machine that has only the NVIDIA driver, Nsight Compute (`ncu`) and this checkout with its
# prebuilt build/bin/wattcal-capture (carried over: CUDA runtime linked statically, NVML loaded at
# run time, nothing of the fitting stack; nothing is built there). Clocks and power settings are
# never changed: no --lock-clocks, no nvidia-smi setting.
#
# The suite (wattcal-capture --list; microbench/suite_plan.h) holds the first campaign's 216
# benchmarks, FP16 on the FMA pipe alone (fp16_hfma2_fma) and every tensor family on 1/8 ... 5/8
# of the SMs (group tensor_intensity: below the 700 W cap); the 18 that reach the cap at full use
# run their own 3.3-s windows (window_s), the others SECONDS (default 0.6). Before anything runs,
# `wattcal-capture --plan-seconds` prints the planned wall time; a plan over PLAN_LIMIT_S (default
# 420 s) is refused. The capture is stopped at CAPTURE_LIMIT_S (default 450 s) whatever happens, and
# what it wrote is packed anyway.
#
# OUTDIR (new or empty; on the device machine, $OUT) receives two files:
#   suite2_GPU.tar.gz   unpack in datasets/captures/GPU/: suite2/ (the capture, with
#                       gpm_fields.csv beside nvml_power.csv and ncu_raw.csv, and its README.md:
#                       GPU, UUID, driver, what ran, what failed), env/suite2/ (nvidia-smi -q, ncu
#                       --version and --query-metrics, the binary's ldd), logs/device_suite2.log
#   device_suite2.log   this script's output, to read without unpacking
# The run itself goes to WORKDIR (default: a new folder under ${TMPDIR:-/tmp}).
#
# Environment (all optional):
#   WATTCAL_CAPTURE       the binary (default: build/bin/wattcal-capture beside this script)
#   NCU                   the ncu program (default: ncu on the PATH, else /usr/local/cuda/bin/ncu)
#   SECONDS_PER_WINDOW    --seconds of the windows without their own (default 0.6)
#   PLAN_LIMIT_S          the planned wall time this script accepts (default 420)
#   CAPTURE_LIMIT_S       the capture is stopped after this long (default 450)
#   WORKDIR               where the run is written before packing
#   WATTCAL_CAPTURE_ARGS  more wattcal-capture options (rehearsals: "--only ... --window-scale 0.1")
# Exit status: 0 done, 1 bad arguments or OUTDIR not empty, 2 no binary / ncu / the wrong GPU,
# 3 the capture failed or was stopped (what it wrote is packed anyway, its README says what).
set -uo pipefail

die() { echo "device_suite2.sh: error: $1" >&2; exit "${2:-1}"; }
[[ $# -eq 2 ]] || die "usage: scripts/device_suite2.sh h100|h200 OUTDIR" 1
GPU=$1
OUT=$2
case $GPU in
  h100) want="H100"; DESC_NAME=h100_sxm.json ;;
  h200) want="H200"; DESC_NAME=h200_sxm.json ;;
  *) die "the GPU is h100 or h200, not '$GPU'" 1 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${WATTCAL_CAPTURE:-$ROOT/build/bin/wattcal-capture}
NCU=${NCU:-ncu}
if ! command -v "$NCU" > /dev/null && [[ $NCU == ncu && -x /usr/local/cuda/bin/ncu ]]; then NCU=/usr/local/cuda/bin/ncu; fi
DESC=$ROOT/microbench_specs/gpus/$DESC_NAME
SECONDS_PER_WINDOW=${SECONDS_PER_WINDOW:-0.6}
PLAN_LIMIT_S=${PLAN_LIMIT_S:-420}
CAPTURE_LIMIT_S=${CAPTURE_LIMIT_S:-450}
if [[ -e $OUT ]] && { [[ ! -d $OUT ]] || [[ -n $(ls -A "$OUT") ]]; }; then
  die "$OUT exists and is not an empty directory: give a new one (an earlier capture is never overwritten)" 1
fi
[[ ${WATTCAL_CAPTURE_ARGS:-} != *lock-clocks* ]] || die "WATTCAL_CAPTURE_ARGS: this script never locks clocks" 1
[[ -x $BIN ]] || die "$BIN is not an executable: build it where CUDA is (cmake --build build --target wattcal-capture) and carry it" 2
command -v "$NCU" > /dev/null || die "'$NCU' is not on the PATH: the counters need Nsight Compute (or set NCU=...)" 2
[[ -f $DESC ]] || die "$DESC is missing" 2
WORK=${WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/wattcal_suite2_$GPU.XXXXXX")}
mkdir -p "$OUT" "$WORK/env/suite2" "$WORK/logs" || die "cannot create $OUT or $WORK" 1
[[ -z $(ls -A "$WORK/env/suite2") && ! -e $WORK/suite2 ]] || die "WORKDIR $WORK holds an earlier run: give a new one" 1
OUT=$(cd "$OUT" && pwd)
LOG=$WORK/logs/device_suite2.log
exec > >(tee "$LOG") 2>&1
start=$(date +%s)
say() { printf '[device_suite2 %4ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }
pack() { tar czf "$OUT/suite2_$GPU.tar.gz" -C "$WORK" suite2 env logs 2> /dev/null; }

say "machine: $(uname -srm), $(date -u +%FT%TZ); GPU asked: $GPU"
ldd "$BIN" > "$WORK/env/suite2/ldd.txt" 2>&1
say "binary: $BIN ($(grep -c '=>' "$WORK/env/suite2/ldd.txt") shared libraries)"
"$NCU" --version > "$WORK/env/suite2/ncu_version.txt" 2>&1
say "ncu: $(tail -n 1 "$WORK/env/suite2/ncu_version.txt")"
name="" uuid="" driver="" limit=""
if command -v nvidia-smi > /dev/null; then
  nvidia-smi -q > "$WORK/env/suite2/nvidia_smi_q.txt" 2>&1
  IFS=, read -r name uuid driver limit < <(nvidia-smi --query-gpu=name,uuid,driver_version,power.limit \
    --format=csv,noheader 2> /dev/null | head -n 1 | sed 's/, /,/g')
  say "GPU: $name ($uuid), driver $driver, power limit $limit"
  [[ $name == *"$want"* ]] || die "this machine's GPU is '$name', not an $want: run scripts/device_suite2.sh with its name" 2
else
  say "GPU: no nvidia-smi here (its name is checked from the capture)"
fi
timeout 60 "$NCU" --query-metrics --chip gh100 > "$WORK/env/suite2/ncu_query_metrics_gh100.txt" 2>&1 ||
  say "ncu --query-metrics --chip gh100 failed (kept in env/suite2/)"
gzip -f "$WORK/env/suite2/ncu_query_metrics_gh100.txt"

eval "extra=(${WATTCAL_CAPTURE_ARGS:-})"
common=(--seconds "$SECONDS_PER_WINDOW" --gap-ms 300 "${extra[@]}")
plan=$("$BIN" --plan-seconds --counters "${common[@]}") || die "wattcal-capture --plan-seconds failed: $plan" 1
say "plan: $plan"
planned=$(sed -n 's/.* \([0-9][0-9]*\) s in all$/\1/p' <<< "$plan")
[[ -n $planned && $planned -le $PLAN_LIMIT_S ]] ||
  die "the plan takes ${planned:-?} s, over PLAN_LIMIT_S=$PLAN_LIMIT_S: it would not fit one device call" 1
"$BIN" --list "${common[@]}" > "$WORK/env/suite2/plan.csv"
say "groups: $(tail -n +2 "$WORK/env/suite2/plan.csv" | cut -d, -f2 | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')"

# The capture: power, GPM fields and counters in one pass. A GPU or driver without GPM is refused
# before anything is written (exit 2): then once more without the fields, so the call is not lost.
fields="gpm"
run_capture() {
  timeout --signal=TERM --kill-after=10 "$1" "$BIN" --out "$WORK/suite2" --counters --ncu "$NCU" \
    --gpu-description "$DESC" ${fields:+--fields "$fields"} "${common[@]}"
}
run_capture "$CAPTURE_LIMIT_S"
status=$?
if [[ $status -eq 2 && ! -e $WORK/suite2 ]]; then
  say "wattcal-capture refused --fields gpm (exit 2, nothing written): once more without the GPM fields"
  fields=""
  run_capture $(( CAPTURE_LIMIT_S - ($(date +%s) - start) ))
  status=$?
fi
say "wattcal-capture exited with status $status$( [[ $status -eq 124 ]] && echo ' (stopped at CAPTURE_LIMIT_S)')"
[[ -d $WORK/suite2 ]] || mkdir -p "$WORK/suite2"

# What the capture says it was, and what came out.
json_field() { sed -n "s/^ *\"$1\": \"\\{0,1\\}\\([^\",]*\\)\"\\{0,1\\},\\{0,1\\}$/\\1/p" "$WORK/suite2/capture.json" 2> /dev/null | head -n 1; }
cap_name=$(json_field name)
cap_uuid=$(json_field uuid)
if [[ -n $cap_name && $cap_name != *"$want"* ]]; then
  say "the capture's GPU is '$cap_name', not an $want"
  status=3
fi
planned_n=$(tail -n +2 "$WORK/env/suite2/plan.csv" | wc -l)
windows=$(( $(wc -l < "$WORK/suite2/windows.csv" 2> /dev/null || echo 1) - 1 ))
profiled=$(grep -c '^"[0-9]' "$WORK/suite2/ncu_raw.csv" 2> /dev/null || true)
samples=$(( $(wc -l < "$WORK/suite2/nvml_power.csv" 2> /dev/null || echo 1) - 1 ))
gpm=$(( $(wc -l < "$WORK/suite2/gpm_fields.csv" 2> /dev/null || echo 1) - 1 ))
not_run=$(grep -h '^.*not run: ' "$LOG" | sed 's/.*not run: //' | head -n 20)
left_out=$(grep -h 'left out of the counters' "$LOG" | sed 's/^.*warning: //' | head -n 20)
elapsed=$(( $(date +%s) - start ))
say "windows $windows of $planned_n planned, profiled launches ${profiled:-0}, NVML samples $samples, GPM samples $gpm"

cat > "$WORK/suite2/README.md" <<EOF
# datasets/captures/$GPU/suite2: the calibration suite, round two (issue 41)

Recorded by \`scripts/device_suite2.sh $GPU\` on $(date -u +%F) (UTC): power (NVML, every 5 ms),
$( [[ -n $fields ]] && echo "NVML GPM fields (\`--fields gpm\`, gpm_fields.csv) and " || echo "NO GPM fields (refused by this GPU or driver) and ")Nsight Compute
counters (ncu_raw.csv, one profiled launch per window) in one pass. Clocks and power settings were
left as they were.

| | |
| --- | --- |
| GPU | ${cap_name:-${name:-unknown}} |
| UUID | ${cap_uuid:-${uuid:-unknown}} |
| driver | ${driver:-unknown (no nvidia-smi)} |
| power limit | ${limit:-unknown} |
| ncu | $(tail -n 1 "$WORK/env/suite2/ncu_version.txt") |
| binary | $(basename "$BIN"), $(grep -c '=>' "$WORK/env/suite2/ldd.txt") shared libraries (env/suite2/ldd.txt) |
| plan | $plan |
| options | --seconds $SECONDS_PER_WINDOW --gap-ms 300 --counters ${fields:+--fields gpm} ${WATTCAL_CAPTURE_ARGS:-} |
| ran | $windows windows of $planned_n planned; ${profiled:-0} profiled launches; $samples NVML samples; $gpm GPM samples |
| wattcal-capture | exit status $status$( [[ $status -eq 124 ]] && echo ' (stopped at its limit)') |
| wall time | $elapsed s for the whole script |

## What was not run or left out
${not_run:-Every planned benchmark ran on this GPU.}

${left_out:-No metric was left out of the counters.}

## What failed (and was fixed)
$( [[ $status -eq 0 ]] && echo "Nothing failed." || echo "wattcal-capture exited with status $status: see logs/device_suite2.log.")
(Edit this section when committing: what went wrong on the machine and what was changed.)

Use: \`wattcal-ingest --capture datasets/captures/$GPU/suite2 --gpu microbench_specs/gpus/$DESC_NAME\`, or
\`make -f Makefile.runs $GPU-own\` (it uses this folder when present).
EOF
say "packed into $OUT/suite2_$GPU.tar.gz; the whole run took $elapsed s"
pack
say "size: $(du -h "$OUT/suite2_$GPU.tar.gz" | cut -f1)"
cp "$LOG" "$OUT/device_suite2.log"
[[ $status -eq 0 ]] || exit 3
