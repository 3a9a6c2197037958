#!/usr/bin/env bash
#SBATCH --job-name=wattcal-fleet-reduce
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
# The reduce of a fleet campaign (scripts/slurm/submit_fleet.sh submits it with
# --dependency=afterok on the array): every task's outcome, then the fleet report over the GPUs
# captured.
#
#   sbatch --dependency=afterok:ARRAY_JOB scripts/slurm/fleet_reduce.sh CAPTURES_ROOT [OUT]
#   scripts/slurm/fleet_reduce.sh CAPTURES_ROOT [OUT]      (the same, by hand, on any machine)
#
# OUT (default CAPTURES_ROOT/reports/<Slurm job id, else the time>; CAPTURES_ROOT/reports/latest
# links to the newest) receives
#   tasks.csv          one row per array task of the campaign (0..gpus-1): task, state (done,
#                      failed, duplicate, died: its status says running but Slurm no longer has
#                      it, missing: it never wrote a status), uuid, name, node, gpu, counters,
#                      exit_code, seconds, message
#   captures.txt       the capture folders, one per line (the GPUs captured)
#   tasks_report.txt   the counts and every task that captured nothing, named with its reason
#   fleet/             wattcal-fleet --captures-from captures.txt --gpu DESC... --out fleet/
#                      (fleet.csv, index.html), with the campaign's --fleet-args
# The campaign's settings (number of GPUs, descriptions) come from CAPTURES_ROOT/.campaign, which
# submit_fleet.sh writes. Exit status: 0 every GPU asked for is captured and the fleet report is
# written; 3 the report is written but GPUs are missing (named in tasks_report.txt) or were not
# reduced (their rows in fleet/fleet.csv say why); 2 no fleet report (no wattcal-fleet, or it
# failed); 1 bad arguments.
# WATTCAL_FLEET_OPTIONAL=1: without build/bin/wattcal-fleet, stop after tasks_report.txt (exit 0/3).
set -euo pipefail

die() { echo "fleet_reduce: error: $*" >&2; exit "${2:-1}"; }
[[ $# -ge 1 && $# -le 2 ]] || die "usage: fleet_reduce.sh CAPTURES_ROOT [OUT]"
[[ -d $1 ]] || die "CAPTURES_ROOT $1 is not a folder"
CAPROOT=$(cd "$1" && pwd)
CAMPAIGN=$CAPROOT/.campaign
[[ -f $CAMPAIGN ]] || die "$CAMPAIGN is missing: CAPTURES_ROOT was not set up by submit_fleet.sh"
setting() { sed -n "s/^$1=//p" "$CAMPAIGN" | tail -n 1; }
gpus=$(setting gpus)
[[ $gpus =~ ^[1-9][0-9]*$ ]] || die "$CAMPAIGN: gpus='$gpus' is not a positive number"
WROOT=${WATTCAL_ROOT:-$(setting wattcal_root)}
read -r -a descs <<< "$(setting descriptions)"
FLEET=${WATTCAL_FLEET:-$WROOT/build/bin/wattcal-fleet}

if [[ $# -eq 2 ]]; then
  OUT=$2
else
  OUT=$CAPROOT/reports/${SLURM_JOB_ID:-$(date +%Y%m%dT%H%M%S)}
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [[ $OUT == "$CAPROOT"/reports/* ]]; then ln -sfn "$OUT" "$CAPROOT/reports/latest"; fi

csv() { local v=${1//\"/\"\"}; printf '"%s"' "$v"; }
get() { sed -n "s/^$1=//p" "$2" | head -n 1; }
job_alive() {  # job_alive ARRAYJOB_TASK: Slurm still runs that array task
  command -v squeue > /dev/null &&
    squeue -h -j "${1%_*}" -t RUNNING,CONFIGURING,COMPLETING,SUSPENDED -o %i 2> /dev/null | grep -qFx "$1"
}

declare -A count=([done]=0 [failed]=0 [duplicate]=0 [died]=0 [missing]=0 [running]=0)
declare -A seen_uuid=()
problems=()
{
  echo "task,state,uuid,name,node,gpu,counters,exit_code,seconds,message"
  for ((t = 0; t < gpus; t++)); do
    f=$CAPROOT/.tasks/$t
    if [[ ! -f $f ]]; then
      state=missing uuid="" name="" node="" gpu="" counters="" rc="" secs=""
      msg="no status file: the task never started (still queued, cancelled, or its node could not write $CAPROOT/.tasks)"
    else
      state=$(get state "$f") uuid=$(get uuid "$f") name=$(get name "$f") node=$(get node "$f")
      gpu=$(get gpu "$f") counters=$(get counters "$f") rc=$(get exit_code "$f") secs=$(get seconds "$f")
      msg=$(get message "$f")
      if [[ $state == running ]]; then
        if job_alive "$(get job "$f")"; then
          msg="still running"
        else
          state=died msg="its status says running but Slurm no longer has job $(get job "$f"): killed without a trace (SIGKILL, node failure, out of memory)"
        fi
      fi
      if [[ $state == "done" && -n ${seen_uuid[$uuid]:-} ]]; then
        state=duplicate msg="GPU $uuid was captured by task ${seen_uuid[$uuid]} as well"
      fi
      if [[ $state == "done" ]]; then seen_uuid[$uuid]=$t; fi
    fi
    count[$state]=$((${count[$state]:-0} + 1))
    if [[ $state != "done" ]]; then problems+=("task $t: $state${uuid:+ (GPU $uuid${node:+ on $node})}: $msg"); fi
    printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$t" "$state" "$uuid" "$(csv "$name")" "$node" "$gpu" \
      "$counters" "$rc" "$secs" "$(csv "$msg")"
  done
} > "$OUT/tasks.csv.tmp"
mv -f "$OUT/tasks.csv.tmp" "$OUT/tasks.csv"

: > "$OUT/captures.txt.tmp"
for u in $(printf '%s\n' "${!seen_uuid[@]}" | sort); do
  if [[ -f $CAPROOT/$u/capture.json ]]; then echo "$CAPROOT/$u" >> "$OUT/captures.txt.tmp"; fi
done
mv -f "$OUT/captures.txt.tmp" "$OUT/captures.txt"
captured=$(wc -l < "$OUT/captures.txt")
counters_from=$(for d in "$CAPROOT"/.counters/*/; do
  if [[ -f $d/done ]]; then echo "$(basename "$d"): $(get uuid "$d/done")"; fi
done 2> /dev/null | paste -sd ';' -)

{
  echo "fleet campaign $CAPROOT: $gpus tasks: ${count[done]} captured, ${count[failed]} failed," \
    "${count[duplicate]} duplicate, ${count[died]} died, ${count[missing]} never started, ${count[running]} running"
  echo "GPUs captured: $captured of $gpus asked"
  echo "counters (one GPU per model): ${counters_from:-none}"
  if ((${#problems[@]})); then
    echo "tasks that captured nothing (scripts/slurm/submit_fleet.sh --captures-root $CAPROOT --rerun-failed reruns them):"
    printf '  %s\n' "${problems[@]}"
  fi
} > "$OUT/tasks_report.txt"
cat "$OUT/tasks_report.txt" >&2

status=0
((captured == gpus)) || status=3
if [[ ! -x $FLEET ]]; then
  if [[ ${WATTCAL_FLEET_OPTIONAL:-0} == 1 ]]; then
    echo "fleet_reduce: $FLEET is not built: no fleet report (WATTCAL_FLEET_OPTIONAL=1)" | tee -a "$OUT/tasks_report.txt" >&2
    exit "$status"
  fi
  die "$FLEET is not an executable: build it (cmake --build build --target wattcal-fleet)" 2
fi
((captured > 0)) || die "no GPU was captured: no fleet report (see $OUT/tasks_report.txt)" 2
gpu_args=()
for d in "${descs[@]}"; do gpu_args+=(--gpu "$d"); done
# The campaign's --fleet-args (WATTCAL_FLEET_ARGS when given).
fleet_args=()
eval "fleet_args=(${WATTCAL_FLEET_ARGS-$(setting fleet_args)})"
gpu_args+=("${fleet_args[@]}")
rm -rf "$OUT/fleet"
echo "fleet_reduce: $FLEET --captures-from $OUT/captures.txt ${gpu_args[*]} --out $OUT/fleet" >&2
set +e
"$FLEET" --captures-from "$OUT/captures.txt" "${gpu_args[@]}" --out "$OUT/fleet"
rc=$?
set -e
if ((rc != 0)); then
  if [[ -f $OUT/fleet/fleet.csv && -f $OUT/fleet/index.html ]]; then
    # The report is written; GPUs it could not reduce are rows with their status and message.
    echo "fleet_reduce: wattcal-fleet exited with status $rc: GPUs not reduced are named in $OUT/fleet/fleet.csv" |
      tee -a "$OUT/tasks_report.txt" >&2
    exit 3
  fi
  echo "fleet_reduce: wattcal-fleet failed (status $rc): no fleet report" | tee -a "$OUT/tasks_report.txt" >&2
  exit 2
fi
echo "fleet_reduce: fleet report $OUT/fleet/index.html ($captured GPUs)" >&2
exit "$status"
