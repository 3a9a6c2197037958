#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the tests and for trying the fleet scripts
# (scripts/slurm/) without a cluster: Debian's munge, slurmctld and slurmd, started directly (no
# systemd), with N simulated GPUs as a GRES.
#
#   scripts/slurm/local_cluster.sh start [N]   install what is missing, write the config, start
#                                              the daemons, wait until the node is idle (N GPUs,
#                                              default 4)
#   scripts/slurm/local_cluster.sh stop        stop the daemons this script started
#   scripts/slurm/local_cluster.sh status      exit 0 when the cluster answers and the node is up
#   scripts/slurm/local_cluster.sh env         print `export SLURM_CONF=...` for the clients
#
# Everything lives in $WATTCAL_SLURM_DIR (default /tmp/wattcal-slurm): slurm.conf, gres.conf, the
# munge key and socket, the daemons' logs, pid files and state, gpu0..gpuN-1 (device nodes backing
# the GRES: Slurm sets CUDA_VISIBLE_DEVICES and SLURM_JOB_GPUS from them) and sim_gpus.conf (one line
# per simulated GPU: index, UUID, idle W, load W, seed, fault; scripts/slurm/fleet_task.sh reads it
# when WATTCAL_SIMULATED_GPU=1, so that each GPU of the array is a different one). Clients find the
# cluster through SLURM_CONF=$WATTCAL_SLURM_DIR/slurm.conf (`eval "$(local_cluster.sh env)"`).
# Ports: $WATTCAL_SLURM_PORT (slurmctld; default 7000-8998, from the folder's name) and the next
# one (slurmd), away from a system Slurm's 6817/6818.
#
# Made for a root shell in a container: no cgroups (ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none), no accounting, select/cons_tres, the node declared with as many CPUs as
# GPUs (SlurmdParameters=config_overrides) so that every GPU can be busy on a 2-core machine.
set -euo pipefail

DIR=${WATTCAL_SLURM_DIR:-/tmp/wattcal-slurm}
# Two clusters on one machine (two checkouts' CI) differ in folder, hence in ports.
PORT=${WATTCAL_SLURM_PORT:-$((7000 + $(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 1000 * 2))}
NODE=$(hostname -s)
say() { echo "local_cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

packages=(munge slurmd slurmctld slurm-client)

install_packages() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ $(id -u) -eq 0 ]] || die "${missing[*]} missing and not root: install them (apt-get install ${missing[*]})"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" > "$DIR/apt.log" 2>&1 || {
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" > "$DIR/apt.log" 2>&1
  } || die "apt-get install ${missing[*]} failed (see $DIR/apt.log)"
}

# sim_gpus.conf: index uuid idle_w load_w seed fault. GPUs of one model differ in idle power (70 to
# 94 W, 6 W apart: the two real H100s differ by 45 W) and a few per cent in load power (made up,
# seeded by the index); fault is "-" or "fail_init" (the stand-in NVML fails to start: a GPU whose
# driver is broken).
write_sim_gpus() {
  local n=$1 i
  {
    echo "# index uuid idle_w load_w seed fault (scripts/slurm/local_cluster.sh)"
    for ((i = 0; i < n; i++)); do
      printf '%d GPU-5157a1ed-0000-4000-8000-%012d %.1f %.1f %d -\n' "$i" "$i" \
        "$(awk -v i="$i" 'BEGIN { print 70 + 6 * ((i * 37) % 5) }')" \
        "$(awk -v i="$i" 'BEGIN { print 290 + 20 * ((i * 53) % 7) / 6 }')" "$((1000 + i))"
    done
  } > "$DIR/sim_gpus.conf"
}

write_config() {
  local n=$1 i
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/munge"
  # Slurm's GPU plugin wants character devices (a plain file is refused: "not a valid character
  # or block device"): nodes of the NVIDIA driver's major number 195, made with mknod (root in a
  # container may); where mknod is refused (or WATTCAL_SLURM_NO_MKNOD is set), links to /dev/null,
  # which Slurm accepts as well (tried: it still numbers the GPUs 0..N-1 by gres.conf's order).
  for ((i = 0; i < n; i++)); do
    if [[ ! -c $DIR/gpu$i ]]; then
      rm -f "$DIR/gpu$i"
      if [[ -n ${WATTCAL_SLURM_NO_MKNOD:-} ]] || ! mknod "$DIR/gpu$i" c 195 "$i" 2> /dev/null; then ln -s /dev/null "$DIR/gpu$i"; fi
    fi
  done
  cat > "$DIR/slurm.conf" << EOF
# Written by scripts/slurm/local_cluster.sh: a single-node test cluster, no cgroups, no accounting.
ClusterName=wattcal-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
MpiDefault=none
SchedulerParameters=sched_interval=1,bf_interval=1
MessageTimeout=20
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(( n > $(nproc) ? n : $(nproc) )) Gres=gpu:$n State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  {
    echo "# Written by scripts/slurm/local_cluster.sh: plain files stand for the GPUs' device files."
    echo "AutoDetect=off"
    for ((i = 0; i < n; i++)); do echo "NodeName=$NODE Name=gpu File=$DIR/gpu$i"; done
  } > "$DIR/gres.conf"
  [[ -f $DIR/sim_gpus.conf && $(grep -vc '^#' "$DIR/sim_gpus.conf") -eq $n ]] || write_sim_gpus "$n"
  if [[ ! -s $DIR/munge/munge.key ]]; then
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 700 "$DIR/munge"
  chmod 400 "$DIR/munge/munge.key"
}

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2> /dev/null; }

export SLURM_CONF=$DIR/slurm.conf

node_idle() {
  local state
  state=$(sinfo -h -N -n "$NODE" -o '%T' 2> /dev/null | head -n 1) || return 1
  [[ $state == idle* || $state == mixed* || $state == allocated* ]]
}

start() {
  local n=${1:-4} t
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive whole number of GPUs, not '$n'"
  mkdir -p "$DIR"
  # munged's socket path must fit a Unix socket's 108 bytes.
  ((${#DIR} <= 80)) || die "WATTCAL_SLURM_DIR $DIR is too long for munge's socket (80 characters at most)"
  if alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid" && node_idle; then
    say "already running ($DIR, $(sinfo -h -o '%D node, %G, %T'))"
    return 0
  fi
  install_packages
  write_config "$n"
  if ! alive "$DIR/munged.pid"; then
    # --force: the key lives under /tmp and the container's root owns everything.
    munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
      --pid-file="$DIR/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed"
  fi
  if ! alive "$DIR/slurmctld.pid"; then
    # -i: ignore state a previous start left behind that this config contradicts.
    slurmctld -i -f "$DIR/slurm.conf"
  fi
  if ! alive "$DIR/slurmd.pid"; then
    slurmd -f "$DIR/slurm.conf" -N "$NODE"
  fi
  for ((t = 0; t < 300; t++)); do
    if node_idle; then
      say "up: $(sinfo -h -o '%P %D node %N, %G, %T') (SLURM_CONF=$DIR/slurm.conf)"
      return 0
    fi
    # A node left DOWN or DRAINED by an earlier run is brought back.
    if ((t % 20 == 19)); then scontrol update NodeName="$NODE" State=RESUME 2> /dev/null || true; fi
    sleep 0.2
  done
  say "the node did not become idle within 60 s: $(sinfo -N -o '%N %T %E' 2>&1 | tail -n +2)"
  tail -n 5 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
  exit 1
}

stop_daemons() {  # stop_daemons NAME...: TERM them all at once, then KILL what is left after 10 s
  local name pidfile pids=() pid t
  for name in "$@"; do
    pidfile=$DIR/$name.pid
    if alive "$pidfile"; then
      pid=$(cat "$pidfile")
      pids+=("$pid")
      kill "$pid" 2> /dev/null || true
    fi
    rm -f "$pidfile"
  done
  for pid in "${pids[@]}"; do
    for ((t = 0; t < 100; t++)); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2> /dev/null; then kill -9 "$pid" 2> /dev/null || true; fi
  done
}

stop() {
  [[ -d $DIR ]] || { say "not started ($DIR absent)"; return 0; }
  # Jobs still running are cancelled first, so that no simulated capture outlives the cluster.
  if alive "$DIR/slurmctld.pid"; then scancel --full --quiet --partition=gpu 2> /dev/null || true; fi
  stop_daemons slurmd slurmctld
  stop_daemons munged
  say "stopped ($DIR kept: logs under $DIR/log)"
}

status() {
  if alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid" && node_idle; then
    sinfo -h -o 'local_cluster: %P %D node %N, %G, %T' >&2
    return 0
  fi
  say "not running (WATTCAL_SLURM_DIR=$DIR)"
  return 1
}

case ${1:-} in
  start) start "${2:-4}" ;;
  stop) stop ;;
  status) status ;;
  env) echo "export SLURM_CONF=$(printf '%q' "$DIR/slurm.conf")" ;;
  *) die "usage: scripts/slurm/local_cluster.sh start [N] | stop | status | env" ;;
esac
