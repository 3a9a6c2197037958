#!/usr/bin/env bash
# Submits a fleet campaign to Slurm: a job array with one task per GPU (scripts/slurm/fleet_task.sh:
# the power suite on its GPU into CAPTURES_ROOT/<UUID>/, the counters once per GPU model), then the
# reduce (scripts/slurm/fleet_reduce.sh) with --dependency=afterok on the array. docs/slurm.md.
#
#   scripts/slurm/submit_fleet.sh --captures-root DIR --gpus N [options]
#   scripts/slurm/submit_fleet.sh --captures-root DIR --rerun-failed [options]
#
# Options:
#   --captures-root DIR  where the captures go, on a filesystem every node shares (required)
#   --gpus N             array tasks, one per GPU (0..N-1)
#   --throttle K         at most K tasks at once (--array=0-(N-1)%K); see docs/slurm.md on what a
#                        throttle below N does to the GPUs Slurm hands out
#   --partition P, --account A, --time T (default 01:00:00 per task), --qos Q
#   --gpu DESC.json      a GPU description per model (repeatable): the counters' metrics, and
#                        the reduce's --gpu
#   --fields gpm|auto    also record NVML GPM fields (auto: where the GPU has them)
#   --capture-args "..." more wattcal-capture options for every task
#   --fleet-args "..."   more wattcal-fleet options for the reduce, e.g. "--threads 8"
#   --sbatch ARG         one more sbatch option for both jobs (repeatable), e.g. --sbatch=--constraint=h100
#   --reduce-after ok|any  the reduce's dependency on the array: afterok (default: a task that
#                        Slurm itself killed, scancel or time limit, holds the reduce back until
#                        --rerun-failed) or afterany (the reduce runs anyway and reports it "died")
#   --rerun-failed       resubmit only the tasks that captured nothing (failed, died, never started;
#                        duplicates while GPUs are missing), read from CAPTURES_ROOT/.tasks, with
#                        the campaign's settings, and a new reduce after them: a failed task on the
#                        node and GPU it failed on (whole node: --exclusive --nodelist), the others
#                        on a node with a GPU not captured yet
#   --dry-run            print the sbatch commands instead of running them
# Prints the job ids: "array JOBID TASKS [OPTIONS]" (one line per array) and "reduce JOBID"; the campaign's settings and jobs are
# kept in CAPTURES_ROOT/.campaign. Exit status: 0 submitted, 1 bad arguments, 2 sbatch failed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "submit_fleet: error: $*" >&2; exit "${2:-1}"; }
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }

caproot="" gpus="" throttle="" reduce_after=ok partition="" account="" time_limit="" qos="" fields="" capture_args=""
fleet_args="" rerun=0 dry=0 capture_args_set=0 fields_set=0 fleet_args_set=0
descs=() sbatch_extra=()
while (($#)); do
  arg=$1
  case $arg in
    --*=*) set -- "${arg%%=*}" "${arg#*=}" "${@:2}"; continue ;;
  esac
  need() { [[ $# -ge 2 ]] || die "$1 needs a value"; }
  case $arg in
    --captures-root) need "$@"; caproot=$2; shift 2 ;;
    --gpus) need "$@"; gpus=$2; shift 2 ;;
    --throttle) need "$@"; throttle=$2; shift 2 ;;
    --partition) need "$@"; partition=$2; shift 2 ;;
    --account) need "$@"; account=$2; shift 2 ;;
    --time) need "$@"; time_limit=$2; shift 2 ;;
    --qos) need "$@"; qos=$2; shift 2 ;;
    --gpu) need "$@"; descs+=("$2"); shift 2 ;;
    --fields) need "$@"; fields=$2; fields_set=1; shift 2 ;;
    --capture-args) need "$@"; capture_args=$2; capture_args_set=1; shift 2 ;;
    --fleet-args) need "$@"; fleet_args=$2; fleet_args_set=1; shift 2 ;;
    --sbatch) need "$@"; sbatch_extra+=("$2"); shift 2 ;;
    --reduce-after) need "$@"; reduce_after=$2; shift 2 ;;
    --rerun-failed) rerun=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$arg' (--help lists them)" ;;
  esac
done

[[ -n $caproot ]] || die "--captures-root DIR is required (a folder every node shares)"
[[ -z $throttle || $throttle =~ ^[1-9][0-9]*$ ]] || die "--throttle must be a positive whole number, not '$throttle'"
[[ -z $fields || $fields == gpm || $fields == auto ]] || die "--fields must be gpm or auto, not '$fields'"
[[ $reduce_after == ok || $reduce_after == any ]] || die "--reduce-after must be ok or any, not '$reduce_after'"
command -v sbatch > /dev/null || ((dry)) || die "sbatch is not on the PATH: run this on a Slurm login node" 2
mkdir -p "$caproot" || die "cannot create $caproot"
caproot=$(cd "$caproot" && pwd)
CAMPAIGN=$caproot/.campaign
setting() { sed -n "s/^$1=//p" "$CAMPAIGN" 2> /dev/null | tail -n 1; }
LIVE=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED

if ((rerun)); then
  [[ -f $CAMPAIGN ]] || die "$CAMPAIGN is missing: --rerun-failed needs a campaign submitted before into $caproot"
  [[ -z $gpus ]] || die "--rerun-failed takes the campaign's --gpus ($(setting gpus)); leave --gpus out"
  gpus=$(setting gpus)
  ((${#descs[@]})) || read -r -a descs <<< "$(setting descriptions)"
  ((fields_set)) || fields=$(setting fields)
  ((capture_args_set)) || capture_args=$(setting capture_args)
  ((fleet_args_set)) || fleet_args=$(setting fleet_args)
  # Jobs of the campaign still queued or running: rerunning now would run a task twice.
  for j in $(setting jobs); do
    if [[ -n $(squeue -h -j "$j" -t "$LIVE" -o %i 2> /dev/null || true) ]]; then
      die "job $j of this campaign is still queued or running (squeue -j $j): wait for it, or scancel it" 1
    fi
  done
else
  [[ -n $gpus ]] || die "--gpus N (the number of GPUs, one array task each) is required"
  [[ $gpus =~ ^[1-9][0-9]*$ ]] || die "--gpus must be a positive whole number (one array task per GPU), not '$gpus'"
  if [[ -f $CAMPAIGN ]]; then
    die "$caproot holds a campaign already ($CAMPAIGN): give a new --captures-root, or --rerun-failed"
  fi
fi
for i in "${!descs[@]}"; do
  [[ -f ${descs[$i]} ]] || die "--gpu ${descs[$i]}: no such file"
  descs[i]=$(cd "$(dirname "${descs[$i]}")" && pwd)/$(basename "${descs[$i]}")
  # The tasks receive the descriptions as one space-separated variable (GPU_DESCRIPTIONS).
  [[ ${descs[$i]} != *[[:space:]]* ]] || die "--gpu '${descs[$i]}': a path with a space or tab is not supported; copy the description to a path without one"
done

# The tasks to run: all, or those the status files say captured nothing. Slurm hands a task the
# lowest free GPU of the node it picks, so a rerun with --gres=gpu:1 would mostly land on a GPU
# already captured: a rerun task takes its node whole (--exclusive: every GPU of it visible) and
# captures the GPU it failed on (CAPTURES_ROOT/.rerun/TASK; pinned to that node with -w), or,
# where that is not known (duplicates, tasks that never started), the first GPU of its node that
# nobody captured, on a node that still has one (--exclude the nodes whose GPUs are all captured).
declare -A groups=()  # node ("*" = any node) -> task ids, comma-separated
exclude=""
if ((rerun)); then
  declare -A captured_uuid=() captured_on=()
  for ((t = 0; t < gpus; t++)); do
    f=$caproot/.tasks/$t
    if [[ -f $f && $(sed -n 's/^state=//p' "$f") == "done" ]]; then
      u=$(sed -n 's/^uuid=//p' "$f") n=$(sed -n 's/^node=//p' "$f")
      [[ -n ${captured_uuid[$u]:-} ]] || captured_on[${n:-?}]=$((${captured_on[${n:-?}]:-0} + 1))
      captured_uuid[$u]=1
    fi
  done
  captured=${#captured_uuid[@]}
  mkdir -p "$caproot/.rerun"
  for ((t = 0; t < gpus; t++)); do
    f=$caproot/.tasks/$t
    state=$(sed -n 's/^state=//p' "$f" 2> /dev/null || true)
    u=$(sed -n 's/^uuid=//p' "$f" 2> /dev/null || true)
    n=$(sed -n 's/^node=//p' "$f" 2> /dev/null || true)
    rm -f "$caproot/.rerun/$t"
    case $state in
      "done") continue ;;
      duplicate) ((captured < gpus)) || continue; n="*" ;;
      *) if [[ -n $u && -n $n && -z ${captured_uuid[$u]:-} ]]; then echo "uuid=$u" > "$caproot/.rerun/$t"; else n="*"; fi ;;
    esac
    groups[$n]=${groups[$n]:+${groups[$n]},}$t
  done
  if ((${#groups[@]} == 0)); then
    echo "submit_fleet: every task of $caproot captured its GPU ($captured of $gpus): nothing to rerun" >&2
    exit 0
  fi
  for n in "${!captured_on[@]}"; do
    g=$(scontrol show node -o "$n" 2> /dev/null | grep -oE 'Gres=[^ ]*' | grep -oE 'gpu(:[^:(,]+)?:[0-9]+' | head -n 1 | grep -oE '[0-9]+$' || true)
    if [[ -n $g ]] && ((captured_on[$n] >= g)); then exclude=${exclude:+$exclude,}$n; fi
  done
else
  groups["*"]=0-$((gpus - 1))
fi

common=(--parsable --export=ALL)
[[ -z $partition ]] || common+=(--partition="$partition")
[[ -z $account ]] || common+=(--account="$account")
[[ -z $qos ]] || common+=(--qos="$qos")
common+=("${sbatch_extra[@]}")
logs=$caproot/.logs
mkdir -p "$logs" "$caproot/.tasks"

if ! ((rerun || dry)); then
  {
    echo "# wattcal fleet campaign (scripts/slurm/submit_fleet.sh), $(date -u +%FT%TZ)"
    echo "gpus=$gpus"
    echo "descriptions=${descs[*]}"
    echo "fields=$fields"
    echo "capture_args=$capture_args"
    echo "fleet_args=$fleet_args"
    echo "wattcal_root=$ROOT"
  } > "$CAMPAIGN"
fi

export WATTCAL_ROOT=$ROOT
export GPU_DESCRIPTIONS="${descs[*]}"
export WATTCAL_FIELDS=$fields
export WATTCAL_CAPTURE_ARGS=$capture_args
export WATTCAL_FLEET_ARGS=$fleet_args

run() {
  if ((dry)); then
    printf '%q ' "$@" >&2
    echo >&2
    echo "DRY"
  else
    "$@"
  fi
}

# The previous reduce, if it still waits on an array with a failed or killed task, never runs.
for j in $(setting reduce_jobs); do
  if [[ -n $(squeue -h -j "$j" -t PENDING -o %i 2> /dev/null || true) ]]; then
    if run scancel "$j" > /dev/null; then echo "submit_fleet: cancelled reduce $j, which was still waiting" >&2; fi
  fi
done

array_jobs=()
for n in "${!groups[@]}"; do
  spec=${groups[$n]}${throttle:+%$throttle}
  where=()
  if ((rerun)); then
    where=(--exclusive)
    if [[ $n != "*" ]]; then where+=(--nodelist="$n"); elif [[ -n $exclude ]]; then where+=(--exclude="$exclude"); fi
  fi
  job=$(run sbatch "${common[@]}" "${where[@]}" --array="$spec" --time="${time_limit:-01:00:00}" \
    --output="$logs/task_%a.%A.out" "$ROOT/scripts/slurm/fleet_task.sh" "$caproot") ||
    die "sbatch of the array failed" 2
  job=${job%%;*}
  array_jobs+=("$job")
  echo "array $job $spec${where[*]:+ ${where[*]}}"
done
deps=$(printf ':%s' "${array_jobs[@]}")
reduce_job=$(run sbatch "${common[@]}" --dependency="after$reduce_after$deps" --kill-on-invalid-dep=no \
  --time="${time_limit:-01:00:00}" --output="$logs/reduce.%j.out" \
  "$ROOT/scripts/slurm/fleet_reduce.sh" "$caproot") || die "sbatch of the reduce failed" 2
reduce_job=${reduce_job%%;*}
if ! ((dry)); then
  { echo "jobs=$(setting jobs) ${array_jobs[*]}"; echo "reduce_jobs=$reduce_job"; } >> "$CAMPAIGN"
fi
echo "reduce $reduce_job"
echo "submit_fleet: reduce $reduce_job after array ${array_jobs[*]}; status: ls $caproot/.tasks," \
  "squeue -j $(printf '%s,' "${array_jobs[@]}")$reduce_job; report: $caproot/reports/$reduce_job/" >&2
