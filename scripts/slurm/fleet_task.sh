#!/usr/bin/env bash
#SBATCH --job-name=wattcal-fleet
#SBATCH --gres=gpu:1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
# One task of a fleet campaign's job array (scripts/slurm/submit_fleet.sh submits it): the power
# suite on the one GPU Slurm gave this task, into CAPTURES_ROOT/<GPU UUID>/.
#
#   sbatch --array=0-63%8 [--partition P --account A ...] scripts/slurm/fleet_task.sh CAPTURES_ROOT
#
# CAPTURES_ROOT is a folder on a filesystem every node shares. The task
#   - finds its GPU from Slurm's environment (CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS,
#     SLURM_JOB_GPUS, GPU_DEVICE_ORDINAL; an index or a UUID) and its UUID and name (nvidia-smi);
#   - claims the UUID (mkdir CAPTURES_ROOT/.claims/UUID): a GPU already captured, or being captured
#     by another task, is not captured twice (state "duplicate");
#   - takes the counters (wattcal-capture --counters, Nsight Compute) only when it wins its model's
#     lock (mkdir CAPTURES_ROOT/.counters/MODEL): one GPU per model; a failed task releases the
#     lock so that a rerun takes it; the fleet reduce uses that GPU's counters for the others;
#   - records into CAPTURES_ROOT/.partial/ and renames the finished capture to CAPTURES_ROOT/UUID
#     (same filesystem: atomic), so that a UUID folder always holds a whole capture; what a failed
#     capture wrote is kept under CAPTURES_ROOT/.failed/ for reading;
#   - writes CAPTURES_ROOT/.tasks/<array task id> (key=value lines: state running|done|failed|
#     duplicate, uuid, name, node, gpu, counters, exit_code, start, end, seconds, message,
#     capture, job), so that the reduce and --rerun-failed see every task without sacct.
# A GPU that fails (driver, NVML, the capture) is recorded as "failed" and the task exits 0: it is
# data for the reduce (--dependency=afterok), not a reason to hold it back. The task exits non-zero
# only when it cannot record at all (no CAPTURES_ROOT, no binary).
#
# Environment (submit_fleet.sh exports it; all optional):
#   WATTCAL_ROOT          the wattcal checkout (default: SLURM_SUBMIT_DIR, the sbatch folder)
#   WATTCAL_CAPTURE       the binary (default WATTCAL_ROOT/build/bin/wattcal-capture)
#   GPU_DESCRIPTIONS      microbench_specs/gpus/*.json, space-separated, one per model: the one whose
#                         name (h100-sxm: "h100") the GPU's name holds gives the counters' metrics
#   WATTCAL_CAPTURE_ARGS  more wattcal-capture options (e.g. "--seconds 1 --only 'fp32_.*'")
#   WATTCAL_FIELDS        gpm: also --fields gpm; auto: where the GPU has GPM (compute capability
#                         9.0 or later); empty: power only (default)
#   NCU                   the ncu program (default ncu)
#   WATTCAL_SIMULATED_GPU=1  the test cluster (scripts/slurm/local_cluster.sh): the simulated device
#                         and stand-in NVML/ncu, each GPU index its own from WATTCAL_SIM_GPUS
#                         (default $WATTCAL_SLURM_DIR/sim_gpus.conf)
set -euo pipefail

ROOT_ARG=${1:-}
TASK=${SLURM_ARRAY_TASK_ID:-${WATTCAL_TASK_ID:-0}}
JOB=${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-local}}_${TASK}
NODE=${SLURMD_NODENAME:-$(hostname -s)}
fail_setup() { echo "fleet_task[$TASK]: error: $*" >&2; exit 2; }
[[ -n $ROOT_ARG ]] || fail_setup "usage: fleet_task.sh CAPTURES_ROOT"
[[ -d $ROOT_ARG ]] || fail_setup "CAPTURES_ROOT $ROOT_ARG is not a folder (it must exist on every node)"
CAPROOT=$(cd "$ROOT_ARG" && pwd)
WROOT=${WATTCAL_ROOT:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}}
BIN=${WATTCAL_CAPTURE:-$WROOT/build/bin/wattcal-capture}
mkdir -p "$CAPROOT/.tasks" "$CAPROOT/.claims" "$CAPROOT/.counters" "$CAPROOT/.partial" "$CAPROOT/.failed"
STATUS=$CAPROOT/.tasks/$TASK

declare -A st=([task]=$TASK [job]=$JOB [node]=$NODE [state]=running [start]=$(date +%s)
  [uuid]="" [name]="" [gpu]="" [counters]=0 [exit_code]="" [end]="" [seconds]="" [message]="" [capture]="")
write_status() {  # the status file, written aside and renamed: a reader never sees half of it
  local k tmp=$STATUS.$$.tmp
  for k in state task job node gpu uuid name counters exit_code start end seconds capture message; do
    printf '%s=%s\n' "$k" "${st[$k]//$'\n'/ }"
  done > "$tmp"
  mv -f "$tmp" "$STATUS"
}
say() { echo "[fleet_task $TASK $(date +%T)] $*" >&2; }

claim=""
counters_lock=""
partial=""
finish() {  # finish STATE EXIT_CODE MESSAGE: record, release what a failure must not keep
  st[state]=$1 st[exit_code]=$2 st[message]=$3 st[end]=$(date +%s)
  st[seconds]=$((st[end] - st[start]))
  if [[ $1 != "done" ]]; then
    if [[ -n $counters_lock ]]; then rm -rf "$counters_lock"; fi
    if [[ -n $claim ]]; then rm -rf "$claim"; fi
    if [[ -n $partial && -e $partial ]]; then
      mv "$partial" "$CAPROOT/.failed/$(basename "$partial")" 2> /dev/null || rm -rf "$partial"
      st[capture]=$CAPROOT/.failed/$(basename "$partial")
    fi
  fi
  counters_lock="" claim="" partial=""
  write_status
  say "$1: ${st[message]}"
}
# Killed (scancel, time limit: SIGTERM first) or stopped by an error of this script: recorded.
trap 'finish failed 143 "killed by a signal (scancel, time limit or node shutdown)"; exit 0' TERM INT
trap 'rc=$?; if [[ ${st[state]} == running ]]; then finish failed "$rc" "fleet_task.sh stopped (status $rc) before the capture finished"; fi' EXIT
write_status
[[ -x $BIN ]] || { finish failed 2 "$BIN is not an executable: build wattcal-capture first"; exit 0; }

# A lock whose task is gone (killed by SIGKILL, its node lost: no trap ran) is taken over.
lock_alive() {  # lock_alive DIR: the job that holds it is this one, or one Slurm still runs
  local job
  job=$(sed -n 's/^job=//p' "$1/owner" 2> /dev/null)
  [[ -n $job ]] || return 0  # being created: the owner file comes right after the mkdir
  [[ $job == "$JOB" ]] && return 0
  command -v squeue > /dev/null || return 0
  squeue -h -j "${job%_*}" -t RUNNING,CONFIGURING,COMPLETING,SUSPENDED -o %i 2> /dev/null | grep -qFx "$job"
}
take_lock() {  # take_lock DIR: mkdir, or take it over from a task that is gone
  local owner
  if mkdir "$1" 2> /dev/null; then printf '%s\n' "task=$TASK" "job=$JOB" > "$1/owner"; return 0; fi
  [[ -e $1/done ]] && return 1
  if ! lock_alive "$1"; then
    owner=$(sed -n 's/^task=//p' "$1/owner" 2> /dev/null)
    say "taking over $1 from task $owner (job $(sed -n 's/^job=//p' "$1/owner")), which is gone"
    rm -rf "$1"
    if mkdir "$1" 2> /dev/null; then printf '%s\n' "task=$TASK" "job=$JOB" > "$1/owner"; return 0; fi
  fi
  return 1
}

# The GPUs Slurm gave this task: the entries of the first variable set (one with --gres=gpu:1;
# all of its node's with --exclusive, as --rerun-failed submits).
alloc=()
for v in CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS SLURM_JOB_GPUS GPU_DEVICE_ORDINAL; do
  val=${!v:-}
  [[ -n $val && $val != NoDevFiles ]] || continue
  IFS=, read -r -a alloc <<< "$val"
  say "GPUs ${alloc[*]} (from $v=$val)"
  break
done
((${#alloc[@]})) || { finish failed 2 "no GPU in Slurm's environment (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, SLURM_JOB_GPUS unset): submit with --gres=gpu:1"; exit 0; }

simulated=0
if [[ ${WATTCAL_SIMULATED_GPU:-0} != 0 && -n ${WATTCAL_SIMULATED_GPU:-} ]]; then simulated=1; fi
sim=${WATTCAL_SIM_GPUS:-${WATTCAL_SLURM_DIR:-/tmp/wattcal-slurm}/sim_gpus.conf}
if ((!simulated)); then
  # nvidia-smi numbers GPUs in PCI bus order; CUDA does the same with this set, so that an index
  # in CUDA_VISIBLE_DEVICES names one GPU for both.
  export CUDA_DEVICE_ORDER=PCI_BUS_ID
  command -v nvidia-smi > /dev/null || { finish failed 2 "nvidia-smi is not on the PATH of node $NODE"; exit 0; }
fi
identify() {  # identify SEL: uuid, name, cc of the GPU Slurm names SEL (an index or a UUID)
  local q line
  if ((simulated)); then
    # The test cluster: this GPU index's line of sim_gpus.conf (index uuid idle_w load_w seed fault
    # [name]: the product name, the rest of the line; an H100 when there is none).
    line=$(awk -v i="$1" '$1 == i' "$sim" 2> /dev/null || true)
    [[ -n $line ]] || { echo "simulated GPU $1 is not in $sim"; return 1; }
    local sim_name
    read -r _ uuid _ _ _ _ sim_name <<< "$line"
    name=${sim_name:-${FAKE_NVML_NAME:-NVIDIA H100 80GB HBM3}} cc=9.0
    return 0
  fi
  q=$(nvidia-smi --query-gpu=uuid,name,compute_cap --format=csv,noheader 2>&1) || {
    echo "nvidia-smi failed on node $NODE: $(echo "$q" | tail -n 1)"; return 1; }
  # A task that sees its GPUs only (cgroups) and was given one: that one.
  if [[ $(echo "$q" | wc -l) -gt 1 || ${#alloc[@]} -gt 1 ]]; then
    q=$(nvidia-smi -i "$1" --query-gpu=uuid,name,compute_cap --format=csv,noheader 2>&1) || {
      echo "nvidia-smi -i $1 failed on node $NODE: $(echo "$q" | tail -n 1)"; return 1; }
  fi
  IFS=, read -r uuid name cc <<< "$q"
  uuid=${uuid// /} name=${name# } cc=${cc// /}
}

# Which GPU: a rerun's target (CAPTURES_ROOT/.rerun/TASK: the GPU this task failed on, written by
# submit_fleet.sh --rerun-failed), else the first one given that no task has captured or claimed.
# A GPU that Slurm gives to a second task (a throttle below the number of GPUs, a rerun) is not
# captured again: that task is a "duplicate".
target=$(sed -n 's/^uuid=//p' "$CAPROOT/.rerun/$TASK" 2> /dev/null || true)
gpu="" uuid="" name="" cc="" claim="" first_uuid="" why=""
for sel in "${alloc[@]}"; do
  err=$(identify "$sel") || { why=$err; continue; }
  identify "$sel"
  first_uuid=${first_uuid:-$uuid}
  if [[ -n $target && $uuid != "$target" ]]; then continue; fi
  if [[ -d $CAPROOT/$uuid ]]; then
    why="GPU $uuid was captured already ($CAPROOT/$uuid): Slurm gave this task a GPU that is done"
    continue
  fi
  # A GPU another task failed on is left to that task's rerun (which targets it).
  if [[ -z $target ]] && grep -lx "uuid=$uuid" "$CAPROOT"/.tasks/[0-9]* 2> /dev/null | grep -vx "$STATUS" |
    xargs -r grep -lx "state=failed" > /dev/null 2>&1; then
    why="GPU $uuid failed in another task: left to that task's rerun"
    continue
  fi
  if ! take_lock "$CAPROOT/.claims/$uuid"; then
    why="GPU $uuid is being captured by task $(sed -n 's/^task=//p' "$CAPROOT/.claims/$uuid/owner" 2> /dev/null || echo '?')"
    continue
  fi
  claim=$CAPROOT/.claims/$uuid gpu=$sel
  # What a task that died on this GPU left half written is moved aside.
  for stale in "$CAPROOT/.partial/$uuid".*; do
    if [[ -e $stale ]]; then mv "$stale" "$CAPROOT/.failed/" 2> /dev/null || rm -rf "$stale"; fi
  done
  break
done
if [[ -z $gpu ]]; then
  if [[ -n $target && -z $why ]]; then why="GPU $target (this task's rerun target) is not among those Slurm gave it (${alloc[*]})"; fi
  st[uuid]=$first_uuid st[gpu]=${alloc[0]}
  if [[ $why == *"captured already"* || $why == *"being captured"* || $why == *"failed in another task"* ]]; then
    finish duplicate 0 "$why"
  else
    finish failed 2 "$why"
  fi
  exit 0
fi
st[gpu]=$gpu st[uuid]=$uuid st[name]=$name
write_status
say "GPU $gpu on $NODE: $name ($uuid)"
export CUDA_VISIBLE_DEVICES=$gpu
capture_device=0

ncu=${NCU:-ncu}
if ((simulated)); then
  read -r _ _ idle_w load_w seed sim_fault _ <<< "$(awk -v i="$gpu" '$1 == i' "$sim")"
  export FAKE_NVML_UUID=$uuid FAKE_NVML_IDLE_W=$idle_w FAKE_NVML_LOAD_W=$load_w FAKE_NVML_SEED=$seed
  export FAKE_NVML_NAME=$name
  # The memory clock of the model it plays (the description's default: an H200's HBM3e runs at
  # 3201 MHz, an H100's HBM3 at 2619).
  case $name in *H200*) export FAKE_NVML_MEM_MHZ=3201 ;; esac
  export FAKE_NVML_LOAD_FILE=${TMPDIR:-/tmp}/wattcal-fleet-load.$JOB
  # The GPM weights (W at full use per metric) vary by a few per cent from GPU to GPU.
  export FAKE_NVML_GPM_W
  FAKE_NVML_GPM_W=$(awk -v s="$seed" 'BEGIN { f = 1 + ((s * 7919) % 11 - 5) / 100;
    printf "2:%.1f,4:%.1f,7:%.1f,9:%.1f,10:%.1f,11:%.1f,12:%.1f,13:%.1f", 60*f, 40*f, 250*f, 200*f, 110*f, 150*f, 120*f, 90*f }')
  export WATTCAL_NVML_LIBRARY=${WATTCAL_NVML_LIBRARY:-$WROOT/build/tests/libfake_nvml.so}
  if [[ $sim_fault == fail_init ]]; then export FAKE_NVML_FAIL_INIT=1; fi
  ncu=${NCU:-$WROOT/tests/fake_ncu.py}
fi

# The counters of this model: only the task that takes the model's lock, once.
model=$(echo "$name" | tr -c 'A-Za-z0-9._-' '_' | sed 's/_*$//')
counters_args=()
if take_lock "$CAPROOT/.counters/$model"; then
  counters_lock=$CAPROOT/.counters/$model
  echo "uuid=$uuid" >> "$counters_lock/owner"
  desc=""
  ncu_descs=()
  for d in ${GPU_DESCRIPTIONS:-}; do
    # A field set (microbench_specs/gpus/fields/: a "source" of GPM or DCGM fields) has no ncu metrics.
    grep -q '^ *"source":' "$d" 2> /dev/null || ncu_descs+=("$d")
  done
  for d in "${ncu_descs[@]}"; do
    key=$(sed -nE 's/^ *"name": *"([^"-]+).*/\1/p' "$d" | head -n 1)
    if [[ -n $key && ${name,,} == *"${key,,}"* ]]; then desc=$d; break; fi
  done
  if [[ -z $desc ]] && ((${#ncu_descs[@]} == 1)); then desc=${ncu_descs[0]}; fi
  counters_args=(--counters --ncu "$ncu")
  if [[ -n $desc ]]; then counters_args+=(--gpu-description "$desc"); fi
  st[counters]=1
  say "counters: this task takes them for model $model${desc:+ (metrics of $desc)}"
else
  say "counters: model $model's are taken by task $(sed -n 's/^task=//p' "$CAPROOT/.counters/$model/owner" 2> /dev/null || echo '?'): power only"
fi

fields_args=()
case ${WATTCAL_FIELDS:-} in
  gpm) fields_args=(--fields gpm) ;;
  auto) if awk -v c="$cc" 'BEGIN { exit !(c + 0 >= 9.0) }'; then fields_args=(--fields gpm); fi ;;
  "") ;;
  *) finish failed 1 "WATTCAL_FIELDS must be gpm, auto or empty, not '$WATTCAL_FIELDS'"; exit 0 ;;
esac

extra=()
eval "extra=(${WATTCAL_CAPTURE_ARGS:-})"
partial=$CAPROOT/.partial/$uuid.$JOB
log=$CAPROOT/.tasks/$TASK.log
say "capture: $BIN --out $partial ${counters_args[*]} ${fields_args[*]} ${extra[*]}"
set +e
"$BIN" --out "$partial" --device "$capture_device" "${counters_args[@]}" "${fields_args[@]}" "${extra[@]}" > "$log" 2>&1
rc=$?
set -e
rm -f "${FAKE_NVML_LOAD_FILE:-/nonexistent}"
if ((rc != 0)); then
  finish failed "$rc" "wattcal-capture exited with status $rc: $(grep -v '^\s*$' "$log" | tail -n 1)"
  exit 0
fi
got=$(sed -nE 's/^ *"uuid": *"([^"]*)".*/\1/p' "$partial/capture.json" 2> /dev/null | head -n 1)
if [[ $got != "$uuid" ]]; then
  finish failed 3 "the capture is of GPU '${got:-?}', not $uuid: CUDA and nvidia-smi number the GPUs differently on $NODE"
  exit 0
fi
mv -T "$partial" "$CAPROOT/$uuid"
partial=""
st[capture]=$CAPROOT/$uuid
if [[ -n $counters_lock ]]; then echo "uuid=$uuid" > "$counters_lock/done"; fi
finish "done" 0 "captured $name ($uuid) on $NODE GPU $gpu${counters_args:+ with the counters of its model}"
