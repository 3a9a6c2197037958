#!/usr/bin/env bash
# Runs every fuzz target briefly: run_fuzzers.sh BUILD_DIR SECONDS_EACH [TARGET...]
# Seeds: fuzz/seeds/<target>/ in the repo, plus ../shared/samples when present. New inputs go
# to a scratch corpus (the repo's seeds are never modified). Exits non-zero on any finding.
set -euo pipefail
build=$1; seconds=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
samples="$here/../../shared/samples"
targets=("$@")
if ((${#targets[@]} == 0)); then
  for t in "$build"/fuzz_*; do [[ -x $t && ! -d $t ]] && targets+=("$(basename "$t")"); done
fi
if ((${#targets[@]} == 0)); then
  echo "run_fuzzers.sh: error: no fuzz target in $build (fuzz_*): the fuzzers were not built, so nothing was fuzzed" >&2
  exit 1
fi
status=0
for t in "${targets[@]}"; do
  [[ -x $build/$t ]] || { echo "run_fuzzers.sh: error: $build/$t is not a built fuzz target" >&2; exit 1; }
  scratch=$(mktemp -d)
  seeds=("$scratch")
  [[ -d $here/seeds/$t ]] && seeds+=("$here/seeds/$t")
  if [[ -d $samples ]]; then
    case $t in
      fuzz_corpus|fuzz_model) seeds+=("$samples/gpmtool") ;;
      fuzz_power_log) seeds+=("$samples/nvidia-smi") ;;
      fuzz_counters) seeds+=("$samples/ncu" "$samples/nvprof" "$samples/accelwattch") ;;
      fuzz_accelwattch) seeds+=("$samples/accelwattch") ;;
    esac
  fi
  echo "== $t for ${seconds}s (seeds: ${seeds[*]:1})"
  if ! "$build/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$scratch/" "${seeds[@]}" > "$scratch/log.txt" 2>&1; then
    echo "FINDING in $t:"; tail -40 "$scratch/log.txt"; ls "$scratch"/crash-* "$scratch"/leak-* 2>/dev/null || true
    status=1
  else
    grep -E "^Done|DONE" "$scratch/log.txt" | tail -1
  fi
  rm -rf "$scratch"
done
exit $status
