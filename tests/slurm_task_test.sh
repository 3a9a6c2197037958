#!/usr/bin/env bash
# scripts/slurm/fleet_task.sh on "real" GPUs without Slurm or a GPU (ctest -L slurm): a stand-in
# nvidia-smi with two GPUs of two models and a stand-in wattcal-capture that writes the capture.json
# of the GPU it was given. Checks what the simulated cluster cannot: the GPU named by index or by
# UUID in CUDA_VISIBLE_DEVICES, nvidia-smi's UUID and name, the counters once per model with that
# model's ncu description (a field set skipped), --fields auto only on compute capability 9.0 or
# later, a second task on a captured GPU a duplicate, a capture of another GPU than nvidia-smi
# named refused, and a task without a GPU failed with the reason.
#
#   tests/slurm_task_test.sh SOURCE_DIR
set -euo pipefail
SRC=$(cd "$1" && pwd)
TASK_SCRIPT=$SRC/scripts/slurm/fleet_task.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/wattcal-slurm-task-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/bin"
cat > "$work/bin/nvidia-smi" << 'EOF'
#!/usr/bin/env bash
a='GPU-aaaa0000-0000-4000-8000-000000000000, NVIDIA H100 80GB HBM3, 9.0'
b='GPU-bbbb0000-0000-4000-8000-000000000001, NVIDIA A100-SXM4-40GB, 8.0'
if [[ ${1:-} == -i ]]; then
  case $2 in
    0 | GPU-aaaa*) echo "$a" ;;
    1 | GPU-bbbb*) echo "$b" ;;
    *) echo "No devices were found"; exit 6 ;;
  esac
else
  printf '%s\n%s\n' "$a" "$b"
fi
EOF
# The capture: its arguments into args.txt, and the UUID of CUDA_VISIBLE_DEVICES's GPU (or of
# $WRONG_UUID) into capture.json, as wattcal-capture writes it.
cat > "$work/bin/wattcal-capture" << 'EOF'
#!/usr/bin/env bash
out=""
for ((i = 1; i <= $#; i++)); do if [[ ${!i} == --out ]]; then j=$((i + 1)); out=${!j}; fi; done
mkdir -p "$out"
echo "$*" > "$out/args.txt"
u=${WRONG_UUID:-$(nvidia-smi -i "$CUDA_VISIBLE_DEVICES" | cut -d, -f1)}
printf '{\n  "gpu": {\n    "name": "x",\n    "uuid": "%s"\n  }\n}\n' "$u" > "$out/capture.json"
EOF
chmod +x "$work/bin/"*
root=$work/captures
mkdir -p "$root"
h100=$SRC/microbench_specs/gpus/h100_sxm.json
a100=$SRC/microbench_specs/gpus/a100_pcie_40gb.json
gpm=$SRC/microbench_specs/gpus/fields/h100_sxm_gpm.json
task() {  # task ID GPU [VAR=VALUE...]: one array task, outside Slurm
  local id=$1 gpu=$2
  shift 2
  env -u WATTCAL_SIMULATED_GPU PATH="$work/bin:$PATH" WATTCAL_TASK_ID="$id" CUDA_VISIBLE_DEVICES="$gpu" \
    WATTCAL_CAPTURE="$work/bin/wattcal-capture" GPU_DESCRIPTIONS="$gpm $h100 $a100" WATTCAL_FIELDS=auto \
    "$@" "$TASK_SCRIPT" "$root" 2> "$work/task_$id.err" || fail "task $id exited non-zero: $(cat "$work/task_$id.err")"
}
field() { sed -n "s/^$2=//p" "$root/.tasks/$1"; }
uuid_a=GPU-aaaa0000-0000-4000-8000-000000000000
uuid_b=GPU-bbbb0000-0000-4000-8000-000000000001

task 0 0 WRONG_UUID=GPU-cccc0000-0000-4000-8000-000000000002  # the H100, a capture of another GPU
[[ $(field 0 state) == failed && $(field 0 message) == *"GPU-cccc"*"not $uuid_a"* ]] || fail "task 0: $(cat "$root/.tasks/0")"
[[ ! -e $root/GPU-cccc0000-0000-4000-8000-000000000002 && ! -e $root/$uuid_a && -z $(ls -A "$root/.partial") ]] ||
  fail "task 0 left a capture under a UUID or in .partial/"
[[ -n $(ls -A "$root/.failed") ]] || fail "task 0's capture was not kept under .failed/"
[[ ! -e $root/.counters/NVIDIA_H100_80GB_HBM3 && ! -e $root/.claims/$uuid_a ]] || fail "task 0 kept its locks"
task 1 1                  # the A100, by index
task 2 "$uuid_a"          # the H100, by UUID: task 0 failed on it, left to task 0's rerun
task 0 "$uuid_a"          # task 0's rerun
task 3 1                  # the A100 again: captured already
task 4 ""                 # no GPU at all

[[ $(field 0 state) == "done" && $(field 0 uuid) == "$uuid_a" ]] || fail "task 0's rerun: $(cat "$root/.tasks/0")"
[[ $(field 1 state) == "done" && $(field 1 uuid) == "$uuid_b" ]] || fail "task 1: $(cat "$root/.tasks/1")"
[[ $(field 1 name) == "NVIDIA A100-SXM4-40GB" ]] || fail "task 1's name: $(field 1 name)"
args_b=$(cat "$root/$uuid_b/args.txt")
args_a=$(cat "$root/$uuid_a/args.txt")
[[ $args_b == *"--counters"*"--gpu-description $a100"* ]] || fail "the A100's counters did not use its description: $args_b"
[[ $args_a == *"--counters"*"--gpu-description $h100"* ]] || fail "the H100's counters did not use its ncu description: $args_a"
[[ $args_a == *"--fields gpm"* && $args_b != *"--fields"* ]] || fail "--fields auto: H100 '$args_a', A100 '$args_b'"
[[ $(field 2 state) == duplicate && $(field 2 message) == *"failed in another task"* ]] || fail "task 2: $(cat "$root/.tasks/2")"
[[ $(field 3 state) == duplicate && $(field 3 message) == *"captured already"* ]] || fail "task 3: $(cat "$root/.tasks/3")"
[[ $(field 4 state) == failed && $(field 4 message) == *"no GPU in Slurm's environment"* ]] || fail "task 4: $(cat "$root/.tasks/4")"
[[ $(find "$root/.counters" -name "done" | wc -l) -eq 2 ]] || fail "expected the counters of 2 models: $(ls "$root/.counters")"

# submit_fleet.sh as a user first runs it: --dry-run prints the sbatch lines (no Slurm needed),
# a relative --captures-root made absolute for the jobs; bad options refused with the reason.
SUBMIT=$SRC/scripts/slurm/submit_fleet.sh
out=$(cd "$work" && "$SUBMIT" --captures-root rel/caps --gpus 3 --throttle 2 --gpu "$h100" --dry-run 2>&1) ||
  fail "submit_fleet.sh --dry-run failed: $out"
[[ $out == *"--array=0-2%2"*"$work/rel/caps"* && $out == *"--dependency=afterok:"* ]] ||
  fail "submit_fleet.sh --dry-run printed: $out"
refused() {  # refused MESSAGE ARGS...: submit_fleet.sh exits 1 saying MESSAGE
  local want=$1 got
  shift
  if got=$("$SUBMIT" --captures-root "$work/caps" --dry-run "$@" 2>&1); then fail "submit_fleet.sh $* was accepted: $got"; fi
  [[ $got == *"$want"* ]] || fail "submit_fleet.sh $*: '$got' does not say '$want'"
}
refused "--gpus N (the number of GPUs, one array task each) is required"
refused "--gpus must be a positive whole number" --gpus 0
refused "--throttle must be a positive whole number" --gpus 2 --throttle x
refused "no such file" --gpus 2 --gpu "$work/none.json"
mkdir -p "$work/with space" && cp "$h100" "$work/with space/"
refused "a path with a space or tab is not supported" --gpus 2 --gpu "$work/with space/$(basename "$h100")"
echo "passed: 2 models by index and by UUID, counters once each, a capture of the wrong GPU refused and rerun, duplicates, no GPU; submit_fleet.sh's dry run and refusals"
