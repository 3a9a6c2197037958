#!/usr/bin/env bash
# Fails (exit 1) when clang-format, with the repository's .clang-format, would change a C++ file
# of pipeline/, stages/ or tests/ (the enforced folders; CTest runs this as FormatEnforced, so CI
# fails on a difference), listing each such file with the number of lines it would change.
# Format a file with `clang-format -i FILE` (Debian 12's clang-format 14, which CI installs).
#
# Usage: scripts/check_format.sh [PATH...]   (default: every tracked *.cc and *.h under the
#        enforced folders)
# CLANG_FORMAT=clang-format-14 picks the binary (default: clang-format-14, else clang-format).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clang_format="${CLANG_FORMAT:-}"
if [[ -z $clang_format ]]; then
  clang_format=clang-format-14
  command -v "$clang_format" > /dev/null || clang_format=clang-format
fi
if ! command -v "$clang_format" > /dev/null; then
  echo "check_format.sh: $clang_format not found: install clang-format (apt-get install clang-format)" >&2
  exit 1
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'pipeline/*.cc' 'pipeline/*.h' 'stages/*.cc' 'stages/*.h' 'tests/*.cc' 'tests/*.h')
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
if [[ $differing -gt 0 ]]; then
  echo "$differing of ${#files[@]} files differ from .clang-format ($lines lines): run $clang_format -i on them" >&2
  exit 1
fi
echo "all ${#files[@]} files as .clang-format writes them ($("$clang_format" --version | head -1))"
