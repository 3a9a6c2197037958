#!/usr/bin/env bash
# Calibration time and peak memory against the number of rows, beside the scipy stand-in at the
# same sizes: the GTX Titan X training corpus (6528 rows, 64 V-F pairs) repeated with seeded
# jitter (utilisations x (1 +- 0.2%), power x (1 +- 1%): every row distinct, as in a long
# campaign) to 10^4, 10^5 and 10^6 rows, each fitted once by wattcal-calibrate (the default
# DVFS fit: joint, Huber, two starts) and by bench/scipy_calibrate.py (plain L2), whole
# process, wall seconds and peak RSS from /usr/bin/time. The last column says how the time grew
# per row from the size before (1.0 = linear).
#
#   bench/scale_calibrate.sh [BUILD_DIR] [SIZES...]     (default: build 10000 100000 1000000)
#
# Reads ../shared/datasets (or $WATTCAL_DATASETS). The scipy rows are skipped when python3
# cannot import scipy; scipy is stopped after 600 s at a size.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(10000 100000 1000000)
DATASETS=${WATTCAL_DATASETS:-../shared/datasets}
TRAIN=$DATASETS/gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv
[[ -f $TRAIN ]] || { echo "scale_calibrate.sh: $TRAIN not found (../shared/datasets beside the checkout)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "scale_calibrate.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
have_scipy=0
OPENBLAS_NUM_THREADS=1 python3 -c "import scipy, numpy" 2> /dev/null && have_scipy=1

make_corpus() {  # rows out
  python3 - "$TRAIN" "$1" "$2" <<'EOF'
import random, sys
src, rows, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(src).read().splitlines()
head, body = lines[:4], [l.split(",") for l in lines[4:] if l.strip()]
rng = random.Random(20261127)
with open(out, "w") as f:
    f.write("\n".join(head) + "\n")
    for k in range(rows):
        r = body[k % len(body)]
        p = float(r[0]) * (1 + rng.uniform(-0.01, 0.01))
        u = [float(v) * (1 + rng.uniform(-0.002, 0.002)) for v in r[3:]]
        f.write("%.6f,%s,%s,%s\n" % (p, r[1], r[2], ",".join("%.7g" % v for v in u)))
EOF
}

measure() {  # command... -> "wall_s rss_mb"
  local log=$WORK/time.log
  if ! /usr/bin/time -f "%e %M" -o "$log" timeout 600 "$@" > /dev/null 2> "$WORK/stderr.log"; then
    echo "failed"
    return
  fi
  awk '{printf "%.3f %.1f", $1, $2 / 1024}' "$log"
}

printf '%-10s %-22s %10s %12s %14s\n' rows program wall_s peak_rss_mb time_per_row_x
prev_w=""; prev_s=""; prev_n=""
for n in "${SIZES[@]}"; do
  corpus=$WORK/train_$n.csv
  make_corpus "$n" "$corpus"
  read -r w rss <<< "$(measure "$BUILD/bin/wattcal-calibrate" --train "$corpus" --out "$WORK/model_$n.json" -q)"
  growth=""
  if [[ -n $prev_w && $w != failed ]]; then growth=$(awk -v a="$w" -v b="$prev_w" -v n="$n" -v m="$prev_n" 'BEGIN{printf "%.2f", (a / n) / (b / m)}'); fi
  printf '%-10s %-22s %10s %12s %14s\n' "$n" wattcal-calibrate "$w" "${rss:-}" "$growth"
  if [[ $have_scipy == 1 ]]; then
    read -r sw srss <<< "$(OPENBLAS_NUM_THREADS=1 measure python3 bench/scipy_calibrate.py "$corpus")"
    sgrowth=""
    if [[ -n $prev_s && $sw != failed && $prev_s != failed ]]; then sgrowth=$(awk -v a="$sw" -v b="$prev_s" -v n="$n" -v m="$prev_n" 'BEGIN{printf "%.2f", (a / n) / (b / m)}'); fi
    printf '%-10s %-22s %10s %12s %14s\n' "$n" scipy_calibrate.py "$sw" "${srss:-}" "$sgrowth"
    prev_s=$sw
  fi
  prev_w=$w; prev_n=$n
done
[[ $have_scipy == 1 ]] || echo "(scipy is not importable: its rows are left out; pip install scipy numpy)"
