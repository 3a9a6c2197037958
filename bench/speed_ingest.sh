#!/usr/bin/env bash
# Whole-process ingest speed beside its peers, measured in one run (issue 14, part 3).
#
#   bench/speed_ingest.sh [WATTCAL_INGEST_BINARY ...]
#
# Generates (once, kept in /tmp) a ~300 MB nvidia-smi power log by repeating the data lines of
# the real A100 sample (../shared/samples/nvidia-smi/a100-pcie_query-gpu_units_lms.csv; the
# datasets are never copied into the repository) with advancing timestamps, and a matching
# kernel windows file (20,000 windows of 50 ms spread over the log). Then times, median of 5
# whole-process wall times each:
#   wc -l LOG                       the byte-scanning floor
#   bench/lean_parse LOG            the lean C floor parser of the same log (built here with cc -O2)
#   wattcal-ingest --power-log LOG --windows W --out K --quiet, for each binary given (default
#                                   build/bin/wattcal-ingest)
# and prints a side-by-side table with MB/s, the ratio to wc -l and to the lean floor, the peak
# resident memory (/usr/bin/time -v) and the load (uptime) before and after. CPU time (user +
# system) is shown beside wall time: on a shared, loaded machine it is the steadier figure.
#
# Environment: WATTCAL_SPEED_LOG_MB (default 300), WATTCAL_SPEED_DIR (default /tmp/wattcal_speed),
# WATTCAL_SPEED_RUNS (default 5).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
shared=${WATTCAL_SHARED:-$repo/../shared}
sample=$shared/samples/nvidia-smi/a100-pcie_query-gpu_units_lms.csv
mb=${WATTCAL_SPEED_LOG_MB:-300}
dir=${WATTCAL_SPEED_DIR:-/tmp/wattcal_speed}
runs=${WATTCAL_SPEED_RUNS:-5}
log=$dir/smi_${mb}mb.csv
windows=$dir/smi_${mb}mb.windows.csv
mkdir -p "$dir"

if [[ $# -gt 0 ]]; then binaries=("$@"); else binaries=("$repo/build/bin/wattcal-ingest"); fi
for b in "${binaries[@]}"; do
  [[ -x $b ]] || { echo "speed_ingest.sh: no executable $b (build wattcal-ingest first)" >&2; exit 1; }
done
[[ -r $sample ]] || { echo "speed_ingest.sh: cannot read $sample" >&2; exit 1; }

if [[ ! -s $log || ! -s $windows ]]; then
  echo "generating $log (~$mb MB) from $sample ..." >&2
  python3 - "$sample" "$log" "$windows" "$mb" <<'PY'
import calendar, sys, time
sample, log_path, windows_path, mb = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
with open(sample, "rb") as f:
    lines = f.read().split(b"\n")
header, rows = lines[0], [l for l in lines[1:] if l.strip()]

def parse_ms(ts):  # b"2023/08/24 22:20:16.285" -> ms since the epoch (UTC)
    d, t = ts.split(b" ")
    whole = calendar.timegm(time.strptime((d + b" " + t[:8]).decode(), "%Y/%m/%d %H:%M:%S"))
    return whole * 1000 + int(t[9:12])

times = [parse_ms(r.split(b",", 1)[0]) for r in rows]
rests = [r.split(b",", 1)[1] for r in rows]
start_ms = times[0]
# Each repetition keeps the sample's own gaps and follows the last one 15 ms later.
period_ms = times[-1] - times[0] + 15
target = int(mb * 1e6)
out = open(log_path, "wb")
out.write(header + b"\n")
written = len(header) + 1
day_cache = {}
rep = 0
last_ms = start_ms
while written < target:
    chunk = []
    base = rep * period_ms
    for t, rest in zip(times, rests):
        ms = t + base
        sec, milli = divmod(ms, 1000)
        day = sec // 86400
        if day not in day_cache:
            day_cache[day] = time.strftime("%Y/%m/%d ", time.gmtime(day * 86400)).encode()
        s = sec % 86400
        line = b"%s%02d:%02d:%02d.%03d,%s\n" % (day_cache[day], s // 3600, s // 60 % 60, s % 60, milli, rest)
        chunk.append(line)
        last_ms = ms
    data = b"".join(chunk)
    out.write(data)
    written += len(data)
    rep += 1
out.close()
# 20,000 windows of 50 ms spread over the log, kernels k0..k6 (as bench/ingest_bench.cc).
count = 20000
span_ms = last_ms - start_ms - 1000
with open(windows_path, "w") as w:
    w.write("kernel,start_us,end_us\n")
    for i in range(count):
        s_us = (start_ms + 500) * 1000 + span_ms * 1000 * i // count
        w.write("k%d,%d,%d\n" % (i % 7, s_us, s_us + 50000))
PY
fi

lean=$dir/lean_parse
if [[ ! -x $lean || $repo/bench/lean_parse.c -nt $lean ]]; then
  cc -O2 -std=c11 -o "$lean" "$repo/bench/lean_parse.c"
fi

bytes=$(stat -c %s "$log")
out=$dir/out
mkdir -p "$out"

# median_run CMD...: runs CMD $runs times (stdout discarded), prints the median wall time (ns),
# the median CPU time (user + system, ns) and the largest peak RSS (KiB).
median_run() {
  local times=() cpus=() rss=0 i t0 t1 r
  for ((i = 0; i < runs; ++i)); do
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$dir/time.txt" "$@" > /dev/null
    t1=$(date +%s%N)
    times+=("$(( t1 - t0 ))")
    cpus+=("$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.0f", s * 1e9}' "$dir/time.txt")")
    r=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
    (( r > rss )) && rss=$r
  done
  local mid=$(( (runs + 1) / 2 ))
  echo "$(printf '%s\n' "${times[@]}" | sort -n | sed -n "${mid}p")" \
       "$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "${mid}p")" "$rss"
}

load_before=$(uptime)
declare -a names results
names+=("wc -l"); results+=("$(median_run wc -l "$log")")
names+=("lean C floor (bench/lean_parse.c)"); results+=("$(median_run "$lean" "$log")")
for b in "${binaries[@]}"; do
  names+=("wattcal-ingest ($b)")
  results+=("$(median_run "$b" --power-log "$log" --windows "$windows" --out "$out/kernels.csv" --quiet)")
done
load_after=$(uptime)

read -r wc_ns wc_cpu _ <<< "${results[0]}"
read -r lean_ns lean_cpu _ <<< "${results[1]}"
echo "log: $log ($bytes bytes, $(wc -l < "$log") lines); windows: $windows"
echo "median of $runs runs: whole-process wall time and CPU time (user + system); peak RSS: the largest"
printf '%-58s %9s %8s %8s %7s %9s %8s %8s %8s\n' "command" "wall_s" "MB/s" "x wc -l" "x lean" \
  "cpu_s" "x wc -l" "x lean" "RSS_MB"
for i in "${!names[@]}"; do
  read -r ns cpu rss <<< "${results[$i]}"
  awk -v n="${names[$i]}" -v ns="$ns" -v cpu="$cpu" -v b="$bytes" -v wc="$wc_ns" -v lean="$lean_ns" \
      -v wcc="$wc_cpu" -v leanc="$lean_cpu" -v rss="$rss" 'BEGIN {
    printf "%-58s %9.3f %8.0f %8.1f %7.2f %9.3f %8.1f %8.2f %8.1f\n", n, ns / 1e9,
           b / 1e6 / (ns / 1e9), ns / wc, ns / lean, cpu / 1e9, (wcc > 0 ? cpu / wcc : 0),
           (leanc > 0 ? cpu / leanc : 0), rss / 1024 }'
done
echo "load before: $load_before"
echo "load after:  $load_after"
