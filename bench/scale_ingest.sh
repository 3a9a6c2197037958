#!/usr/bin/env bash
# Ingest of one application's counter export with many launches (a whole training step: 10^5
# kernel launches), time and peak memory, beside `wc -l` over the same file. The export is an
# Nsight Compute raw page as ncu 2025.3 writes it (tool lines, header, units row, grouped
# digits), with the H100 description's metrics and 250 more columns (ncu's raw page carries
# ~300 whatever is asked), in LAUNCHES rows cycling over 8 kernels of different grid sizes.
# Two ways in: an applications capture read by `wattcal-ingest --capture` (one window, a
# short NVML log, the export summed per launch) and the export alone through `wattcal-ingest
# --counters --activity` (per kernel name). Whole process, wall seconds and peak RSS from
# /usr/bin/time; memory should not grow with the launches.
#
#   bench/scale_ingest.sh [BUILD_DIR] [LAUNCHES...]     (default: build 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(10000 100000)
GPU=microbench_specs/gpus/h100_sxm.json
[[ -x /usr/bin/time ]] || { echo "scale_ingest.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

make_capture() {  # launches dir
  python3 - "$GPU" "$1" "$2" <<'EOF'
import json, os, sys
gpu, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(open(gpu))
metrics = [d["active_cycles_metric"], d["duration_metric"]]
for c in d["components"]:
    for key in ("thread_metrics", "warp_metrics", "byte_metrics", "access_metrics"):
        for m in c.get(key, []):
            if m not in metrics:
                metrics.append(m)
metrics += ["extra__metric_%03d.sum" % k for k in range(250)]
def unit(m):
    if "time_duration" in m: return "nsecond"
    if "cycles" in m: return "cycle"
    if "bytes" in m: return "byte"
    return "inst"
os.makedirs(os.path.join(out, "ncu"))
q = lambda s: '"%s"' % s
with open(os.path.join(out, "ncu", "train_step.csv"), "w") as f:
    f.write("==PROF== Connected to process 4242 (python3)\n")
    f.write(",".join(q(c) for c in ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                                      "Block Size", "Grid Size", "Device", "CC"] + metrics) + "\n")
    f.write(",".join([q("")] * 11 + [q(unit(m)) for m in metrics]) + "\n")
    for i in range(n):
        k = i % 8
        lead = [str(i), "4242", "python3", "127.0.0.1", "kernel_%d(float*, int)" % k, "1", "7", "(256, 1, 1)",
                "(%d, 1, 1)" % (132 * (k + 1)), "0", "9.0"]
        vals = []
        for j, m in enumerate(metrics):
            if "time_duration" in m: v = 20000 + 1000 * k
            elif "cycles" in m: v = 39600 + 1980 * k if not m.endswith(".sum") else (39600 + 1980 * k) * 132
            else: v = 1000 * (1 + (i + 7 * j) % 50)
            vals.append("{:,}".format(v))
        f.write(",".join(q(c) for c in lead + vals) + "\n")
    f.write("==PROF== Disconnected from process 4242\n")
t0 = 1795519848000000
with open(os.path.join(out, "windows.csv"), "w") as f:
    f.write("kernel,start_us,end_us\ntrain_step,%d,%d\n" % (t0 + 500000, t0 + 2500000))
with open(os.path.join(out, "nvml_power.csv"), "w") as f:
    f.write("timestamp_us,power_mw,power_instant_mw,energy_mj,sm_clock_mhz,mem_clock_mhz,temperature_c\n")
    for k in range(601):
        f.write("%d,400000,400000,%d,1980,2619,40\n" % (t0 + 5000 * k, 3000000 + 2 * k * 1000))
EOF
}

measure() {  # command... -> "wall_s rss_mb"
  if ! /usr/bin/time -f "%e %M" -o "$WORK/time.log" "$@" > /dev/null 2> "$WORK/stderr.log"; then
    echo "failed: $(tail -n 2 "$WORK/stderr.log")" >&2
    echo "failed -"
    return
  fi
  awk '{printf "%.3f %.1f", $1, $2 / 1024}' "$WORK/time.log"
}

printf '%-9s %-9s %-44s %9s %12s\n' launches file_mb command wall_s peak_rss_mb
for n in "${SIZES[@]}"; do
  dir=$WORK/apps_$n
  make_capture "$n" "$dir"
  export_csv=$dir/ncu/train_step.csv
  mb=$(du -m "$export_csv" | cut -f1)
  read -r w r <<< "$(measure wc -l "$export_csv")"
  printf '%-9s %-9s %-44s %9s %12s\n' "$n" "$mb" "wc -l" "$w" "$r"
  read -r w r <<< "$(measure "$BUILD/bin/wattcal-ingest" --capture "$dir" --gpu "$GPU" --tidy "$WORK/t_$n.csv" -q)"
  printf '%-9s %-9s %-44s %9s %12s\n' "$n" "$mb" "wattcal-ingest --capture (summed per launch)" "$w" "$r"
  read -r w r <<< "$(measure "$BUILD/bin/wattcal-ingest" --counters "$export_csv" --gpu "$GPU" --activity "$WORK/a_$n.csv" -q)"
  printf '%-9s %-9s %-44s %9s %12s\n' "$n" "$mb" "wattcal-ingest --counters --activity" "$w" "$r"
  rm -rf "$dir"
done
