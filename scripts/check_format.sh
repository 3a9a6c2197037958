#!/usr/bin/env bash
# Lists the C++ files that clang-format (with the repository's .clang-format) would change, with
# the number of lines it would change in each, and a total. Informational only: it changes no
# file, always exits 0 and is not run by CI or CTest (the code base has not been reformatted;
# format the lines you touch with `clang-format -i FILE` or git clang-format).
#
# Usage: scripts/check_format.sh [PATH...]   (default: every tracked *.cc, *.h, *.cu, *.cuh)
# CLANG_FORMAT=clang-format-14 picks the binary (default: clang-format).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clang_format="${CLANG_FORMAT:-clang-format}"
if ! command -v "$clang_format" > /dev/null; then
  echo "check_format.sh: $clang_format not found (set CLANG_FORMAT)" >&2
  exit 0
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
fi
differing=0
lines=0
for f in "${files[@]}"; do
  n=$("$clang_format" --style=file --assume-filename="$f" < "$f" | diff "$f" - | grep -c '^[<>]' || true)
  if [[ "$n" -gt 0 ]]; then
    printf '%6d  %s\n' "$n" "$f"
    differing=$((differing + 1))
    lines=$((lines + n))
  fi
done
echo "$differing of ${#files[@]} files differ from .clang-format ($lines lines removed or added)"
