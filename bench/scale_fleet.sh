#!/usr/bin/env bash
# The fleet reduce (wattcal-fleet, docs/fleet.md) over simulated fleets of one GPU model: N copies
# of the committed H100 suite (datasets/captures/h100/suite) with per-GPU variation in power
# (scripts/fleet_captures.py: each GPU's power scaled by ~N(1, 0.03) and offset by ~N(0, 6) W),
# only the first carrying counters (ncu_raw.csv), the others borrowing them. Wall time and peak
# RSS of the whole process from /usr/bin/time, on THREADS threads, at each size, to show how it
# grows; the captures live in a temporary folder (about 2.5 MB each) removed at the end.
#
#   bench/scale_fleet.sh [BUILD_DIR] [GPUS...]     (default: build 10 100 1000; THREADS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(10 100 1000)
THREADS=${THREADS:-2}
GPU=microbench_specs/gpus/h100_sxm.json
[[ -x /usr/bin/time ]] || { echo "scale_fleet.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

printf '%-6s %-8s %10s %10s %12s %s\n' gpus threads make_s wall_s peak_rss_mb exit
for n in "${SIZES[@]}"; do
  start=$(date +%s.%N)
  python3 scripts/fleet_captures.py datasets/captures/h100/suite "$WORK/fleet_$n" "$n" --seed "$n"
  made=$(echo "$(date +%s.%N) - $start" | bc)
  status=0
  /usr/bin/time -f "%e %M" -o "$WORK/time.log" "$BUILD/bin/wattcal-fleet" \
    --captures-from "$WORK/fleet_$n/captures.txt" --gpu "$GPU" --out "$WORK/out_$n" \
    --threads "$THREADS" -q 2> "$WORK/stderr.log" || status=$?
  read -r wall rss <<< "$(tail -n 1 "$WORK/time.log")"  # after "Command exited with ..." (exit 4)
  printf "%-6s %-8s %10.1f %10.2f %12.1f %s\n" "$n" "$THREADS" "$made" "$wall" "$(echo "$rss / 1024" | bc -l)" "$status"
  [[ $status -eq 0 ]] || tail -n 3 "$WORK/stderr.log" >&2
  rm -rf "$WORK/fleet_$n" "$WORK/out_$n"
done
