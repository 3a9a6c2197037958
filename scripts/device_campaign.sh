#!/usr/bin/env bash
# A whole wattcal campaign in one call of a lent GPU machine: the suite with counters
# (scripts/device_capture.sh), then real applications (scripts/device_apps.sh), inside a time limit,
# with what was measured packed into OUTDIR as it goes, so that a call stopped at its limit still
# brings back every finished phase.
#
#   scripts/device_campaign.sh WORKDIR OUTDIR [SECONDS]
#
# WORKDIR holds the runs (suite_run/, apps_run/); OUTDIR receives the packed results:
#   suite_run.tar.gz   scripts/device_capture.sh's output (suite/, env/, its log)
#   apps_run.tar.gz    scripts/device_apps.sh's output (apps/, env/, its log)
#   campaign.log       this script's output
# SECONDS (default 570) bounds the whole script. The suite gets what the applications leave
# (APPS_RESERVE_S, default 200); an application is not started within APP_MIN_S (default 40) of the
# end. Run again with the same WORKDIR (on a machine still warm) and it resumes: a finished suite is
# not run again, and recorded applications are kept. Clocks and power settings are never changed.
set -uo pipefail

die() { echo "device_campaign.sh: error: $*" >&2; exit 1; }
[[ $# -ge 2 && $# -le 3 ]] || die "usage: scripts/device_campaign.sh WORKDIR OUTDIR [SECONDS]"
WORK=$1
OUT=$2
LIMIT=${3:-570}
[[ $LIMIT =~ ^[0-9]+$ ]] && (( LIMIT >= 60 )) || die "SECONDS must be a whole number of at least 60, not '$LIMIT'"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$WORK" "$OUT" || die "cannot create $WORK or $OUT"
WORK=$(cd "$WORK" && pwd)
exec > >(tee -a "$OUT/campaign.log") 2>&1
start=$(date +%s)
end=$(( start + LIMIT ))
say() { printf '[campaign %4ds] %s\n' "$(( $(date +%s) - start ))" "$*"; }
left() { echo $(( end - $(date +%s) )); }
pack() {  # pack NAME: WORK/NAME into OUT/NAME.tar.gz
  tar czf "$OUT/$1.tar.gz" -C "$WORK" "$1" 2> /dev/null
  say "packed $1.tar.gz ($(du -h "$OUT/$1.tar.gz" | cut -f1))"
}

say "limit ${LIMIT} s; machine $(uname -srm); $(nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv,noheader 2>&1 | head -n 1)"

# 1. The suite, unless a finished one is here (resumed).
if [[ -f $WORK/suite_run/suite/capture.json && -f $WORK/suite_run/suite/ncu_raw.csv ]]; then
  say "suite: finished in an earlier call"
  [[ -f $OUT/suite_run.tar.gz ]] || pack suite_run
else
  rm -rf "$WORK/suite_run"
  budget=$(( $(left) - ${APPS_RESERVE_S:-200} - 10 ))
  say "suite: at most ${budget} s"
  # The first round's 216 benchmarks (plan 319 s with counters): the second round's (tensor_intensity,
  # fp16_hfma2_fma) run in scripts/device_suite2.sh's call of their own.
  WATTCAL_CAPTURE_ARGS=${WATTCAL_CAPTURE_ARGS:-"--only '(?!.*_sm[0-9]of8\$|fp16_hfma2_fma\$).*'"} \
    timeout --signal=TERM --kill-after=10 "$budget" "$ROOT/scripts/device_capture.sh" "$WORK/suite_run"
  say "suite: exit status $? ($( [[ -f $WORK/suite_run/suite/ncu_raw.csv ]] && echo with || echo WITHOUT) counters)"
  rm -f "$WORK/suite_run/suite.tar.gz"  # packed below with the logs
  pack suite_run
fi

# 2. The applications, until the end is near.
remaining=$(( $(left) - 10 ))
if (( remaining > ${APP_MIN_S:-40} )); then
  say "applications: at most ${remaining} s"
  RESUME=1 DEADLINE_EPOCH=$(( end - 10 )) REPEAT=${REPEAT:-1} \
    timeout --signal=TERM --kill-after=5 "$remaining" "$ROOT/scripts/device_apps.sh" "$WORK/apps_run"
  say "applications: exit status $?; recorded: $(ls "$WORK/apps_run/apps/ncu" 2> /dev/null | sed 's/\.csv$//' | tr '\n' ' ')"
  rm -f "$WORK/apps_run/apps.tar.gz"
  pack apps_run
else
  say "applications: no time left"
fi
say "done in $(( $(date +%s) - start )) s"
