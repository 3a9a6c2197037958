#!/usr/bin/env bash
# The fleet campaign through a real Slurm (ctest -L slurm): scripts/slurm/submit_fleet.sh on the
# single-node cluster of scripts/slurm/local_cluster.sh (4 simulated GPUs), a throttle of 2, one
# GPU whose NVML fails, the reduce, then --rerun-failed once the fault is cleared.
#
#   tests/slurm_fleet_test.sh SOURCE_DIR BUILD_DIR
#
# Skips (exit 77) when no cluster is running; .ci/run starts one before ctest, so there it runs.
# WATTCAL_SLURM_TEST_NO_FLEET=1: without build/bin/wattcal-fleet, check everything but the fleet
# report (for a branch that does not have the fleet stage yet).
set -euo pipefail
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
SLURM=$SRC/scripts/slurm
start=$(date +%s)
say() { printf '[slurm_fleet_test %3ds] %s\n' "$(($(date +%s) - start))" "$*"; }
fail() {
  say "FAIL: $*" >&2
  if [[ -n ${root:-} && -d $root/.logs ]]; then tail -n 20 "$root"/.logs/reduce.*.out >&2 || true; fi
  exit 1
}

if ! "$SLURM/local_cluster.sh" status 2> /dev/null; then
  echo "SKIP: no local Slurm cluster is running (scripts/slurm/local_cluster.sh start; .ci/run starts it)"
  exit 77
fi
eval "$("$SLURM/local_cluster.sh" env)"
ngpu=$(sinfo -h -o %G | grep -oE 'gpu:[0-9]+' | head -n 1 | cut -d: -f2)
[[ ${ngpu:-0} -ge 4 ]] || fail "the cluster has ${ngpu:-no} GPUs; the test needs 4 (local_cluster.sh start 4)"
fleet=$BUILD/bin/wattcal-fleet
if [[ ! -x $fleet ]]; then
  [[ ${WATTCAL_SLURM_TEST_NO_FLEET:-0} == 1 ]] || fail "$fleet is not built: the reduce needs it"
  export WATTCAL_FLEET_OPTIONAL=1
  say "no $fleet: the fleet report is not checked (WATTCAL_SLURM_TEST_NO_FLEET=1)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/wattcal-slurm-test.XXXXXX")
jobs_submitted=()
cleanup() {
  local j
  for j in "${jobs_submitted[@]}"; do scancel "$j" 2> /dev/null || true; done
  if [[ ${KEEP_SLURM_TEST:-0} == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# This test's own simulated GPUs (the cluster's first 4), GPU 1's NVML failing to start, GPU 3 an
# H200 (a second model in the array: its counters are taken too, by its own task).
sim_conf=${WATTCAL_SLURM_DIR:-/tmp/wattcal-slurm}/sim_gpus.conf
grep -v '^#' "$sim_conf" | head -n 4 > "$work/sim_gpus.conf"
awk '$1 == 1 { $6 = "fail_init" } $1 == 3 { $7 = "NVIDIA H200" } { print }' "$work/sim_gpus.conf" > "$work/sim.tmp" && mv "$work/sim.tmp" "$work/sim_gpus.conf"
mapfile -t uuids < <(awk '{ print $2 }' "$work/sim_gpus.conf")
bad_uuid=${uuids[1]}
export WATTCAL_SIMULATED_GPU=1 WATTCAL_SIM_GPUS=$work/sim_gpus.conf WATTCAL_ROOT=$SRC
export WATTCAL_CAPTURE=$BUILD/bin/wattcal-capture WATTCAL_NVML_LIBRARY=$BUILD/tests/libfake_nvml.so
export WATTCAL_FLEET=$fleet
root=$work/captures
# A short suite whose benchmarks vary every GPM component (tests/gpm_capture_test.cc's kSuite).
suite='^(idle_sleep|int_add|fp32_fma|fp32_add|fp64_fma|fp16_hfma2|tensor_fp16|tensor_int8|dram_ld|dram_write|sm_sweep_int_add_0(33|66|99)|mix_int_fp32|mix_fp64_dram|mix_tensor_dram)$'

# wait_jobs JOB...: until Slurm has none of them queued or running (at most 240 s); prints the
# most array tasks seen running at once.
wait_jobs() {
  local ids most=0 n t out
  ids=$(IFS=,; echo "$*")
  for ((t = 0; t < 960; t++)); do
    n=$(squeue -h -j "$ids" -t RUNNING,COMPLETING -o '%i' 2> /dev/null | grep -c '_' || true)
    ((n > most)) && most=$n
    # Done when squeue answers (a busy slurmctld may not: then it prints nothing but fails) with none.
    if out=$(squeue -h -j "$ids" -t PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED -o %i 2> /dev/null) &&
      [[ -z $out ]] && ! scontrol show job -o "$ids" 2> /dev/null | grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING)'; then
      echo "$most"
      return 0
    fi
    sleep 0.25
  done
  squeue >&2
  fail "jobs $ids still queued or running after 240 s"
}

# submit ARGS...: submit_fleet.sh; sets $reduce and appends every job to jobs_submitted.
submit() {
  local out
  out=$("$SLURM/submit_fleet.sh" --captures-root "$root" "$@") || fail "submit_fleet.sh $* failed"
  echo "$out"
  arrays=()
  while read -r kind id _; do
    case $kind in
      array) arrays+=("$id"); jobs_submitted+=("$id") ;;
      reduce) reduce=$id; jobs_submitted+=("$id") ;;
    esac
  done <<< "$out"
  if ((${#arrays[@]} == 0)) || [[ -z ${reduce:-} ]]; then fail "submit_fleet.sh printed no job ids: $out"; fi
}
state_of() { sed -n 's/^state=//p' "$root/.tasks/$1"; }

# 1. The campaign: 4 tasks, 2 at once, GPU 1 broken.
say "campaign: 4 GPUs (3 H100s, an H200), throttle 2, GPU 1 ($bad_uuid) fails to start NVML"
# The reduce takes the first description that describes a GPU: the GPM field set (the simulated
# GPUs' fields follow their simulated load; the stand-in ncu's counters are made up). The ncu
# description gives the counters run its metrics.
submit --gpus 4 --throttle 2 --gpu "$SRC/microbench_specs/gpus/fields/h100_sxm_gpm.json" \
  --gpu "$SRC/microbench_specs/gpus/h100_sxm.json" --gpu "$SRC/microbench_specs/gpus/fields/h200_sxm_gpm.json" \
  --gpu "$SRC/microbench_specs/gpus/h200_sxm.json" --fields gpm --time 00:10:00 \
  --fleet-args '--settle-ms 50 --bootstrap 10' \
  --capture-args "--seconds 0.3 --gap-ms 60 --idle-s 0.3 --sample-ms 5 --only '$suite'"
most=$(wait_jobs "${arrays[@]}" "$reduce")
say "campaign finished: at most $most tasks ran at once"
((most <= 2)) || fail "the throttle of 2 let $most tasks run at once"
failed=() done_tasks=()
for t in 0 1 2 3; do
  [[ -f $root/.tasks/$t ]] || fail "task $t wrote no status file"
  s=$(state_of "$t")
  say "task $t: $s: $(sed -n 's/^message=//p' "$root/.tasks/$t")"
  case $s in
    failed) failed+=("$t") ;;
    "done") done_tasks+=("$t") ;;
    duplicate) ;;
    *) fail "task $t ended in state '$s'" ;;
  esac
done
((${#failed[@]} == 1)) || fail "expected one failed task (the GPU whose NVML fails), got ${#failed[@]}: ${failed[*]}"
bad_task=${failed[0]}
grep -qx "uuid=$bad_uuid" "$root/.tasks/$bad_task" || fail "the failed task $bad_task is not on GPU $bad_uuid"
grep -q '^message=.*nvmlInit' "$root/.tasks/$bad_task" || fail "the failed task's message does not say why: $(cat "$root/.tasks/$bad_task")"
for t in "${done_tasks[@]}"; do
  u=$(sed -n 's/^uuid=//p' "$root/.tasks/$t")
  grep -q "\"uuid\": \"$u\"" "$root/$u/capture.json" || fail "task $t's capture $root/$u/capture.json is not of GPU $u"
done
report=$root/reports/$reduce/tasks_report.txt
[[ -f $report ]] || fail "the reduce (job $reduce) wrote no $report"
grep -q "task $bad_task: failed (GPU $bad_uuid" "$report" || fail "the reduce's report does not name the failed task: $(cat "$report")"
grep -q "GPUs captured: ${#done_tasks[@]} of 4 asked" "$report" || fail "the report's count is wrong: $(cat "$report")"
say "the reduce names it: $(grep "task $bad_task:" "$report")"

# 2. The fault cleared, --rerun-failed: the failed task on its GPU, the duplicates on the others.
awk '{ $6 = "-"; print }' "$work/sim_gpus.conf" > "$work/sim.tmp" && mv "$work/sim.tmp" "$work/sim_gpus.conf"
rerun_start=$(date +%s)
submit --rerun-failed
wait_jobs "${arrays[@]}" "$reduce" > /dev/null
say "rerun finished in $(($(date +%s) - rerun_start)) s"
for u in "${uuids[@]}"; do
  [[ -f $root/$u/capture.json ]] || fail "GPU $u has no capture after the rerun: $(cat "$root/reports/$reduce/tasks_report.txt" 2> /dev/null)"
done
with_counters=$(find "$root" -maxdepth 2 -name ncu_raw.csv -path "$root/GPU-*" | wc -l)
((with_counters == 2)) || fail "$with_counters captures hold counters: one GPU per model (H100, H200) should"
grep -q '"name": "NVIDIA H200"' "$root/${uuids[3]}/capture.json" || fail "GPU 3 was not captured as an H200"
[[ -f $root/${uuids[3]}/ncu_raw.csv ]] || fail "the H200, the one GPU of its model, has no counters"
[[ -z $(ls -A "$root/.partial") ]] || fail "a half capture is left in $root/.partial: $(ls "$root/.partial")"
report=$root/reports/$reduce/tasks_report.txt
grep -q "GPUs captured: 4 of 4 asked" "$report" || fail "after the rerun: $(cat "$report")"
if [[ -x $fleet ]]; then
  csv=$root/reports/$reduce/fleet/fleet.csv
  [[ -f $csv && -f $root/reports/$reduce/fleet/index.html ]] || fail "no fleet report: $(cat "$root"/.logs/reduce."$reduce".out)"
  for u in "${uuids[@]}"; do grep -q "^$u," "$csv" || fail "$csv has no row for GPU $u"; done
  # Every GPU reduced, each with the idle power its simulated GPU draws (sim_gpus.conf: 70 to 94 W,
  # 6 W apart). The stand-in NVML integrates its energy at the moments it is asked, so a loaded
  # machine moves an idle window's mean either way (-0.36 to +0.76 W seen with four busy loops on
  # 2 cores): each is held within 2 W of its own power, nearer it than to any other GPU's.
  # Each GPU read through its own model's field set (the first --gpu that describes it), so its
  # activity is its own GPM fields: counters_from is itself (ncu's counters, taken once per model
  # above, are what the ncu descriptions would read).
  idles=""
  while read -r _ u idle_w _ _ _ sim_name; do
    got=$(awk -F, -v u="$u" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      $1 == u { print $col["status"], $col["idle_w"], $col["model"], $col["counters_from"] }' "$csv")
    read -r status got_idle model counters_from <<< "$got"
    [[ $status == ok ]] || fail "GPU $u was not reduced ($status): $(grep "^$u," "$csv")"
    awk -v a="$got_idle" -v b="$idle_w" 'BEGIN { exit !(a - b > -2 && a - b < 2) }' ||
      fail "GPU $u: idle_w $got_idle in fleet.csv, its simulated GPU draws $idle_w W"
    want=h100_sxm_gpm
    [[ $sim_name == *H200* ]] && want=h200_sxm_gpm
    [[ $model == "$want" && $counters_from == "$u" ]] ||
      fail "GPU $u ($sim_name): model '$model', counters from '$counters_from' ($want and its own expected)"
    idles+="${u: -1}: $got_idle W (draws $idle_w); "
  done < "$work/sim_gpus.conf"
  say "fleet.csv: every GPU ok, each of its model, idle ${idles%; }"
fi
out=$("$SLURM/submit_fleet.sh" --captures-root "$root" --rerun-failed 2>&1)
[[ $out == *"nothing to rerun"* ]] || fail "a third --rerun-failed should have nothing to do: $out"
say "passed: 4 GPUs captured, counters from one per model, the failed GPU reported then rerun ($(($(date +%s) - start)) s)"
