#!/usr/bin/env bash
# Fails when an equation reference in a comment does not name its paper (STYLE.md: cite
# equations with their paper, "TPDS Eq. 4", "AccelWattch Eq. 12", "CRISP Eq. 3",
# "Arafa Eq. 1").
#
# An equation reference is "Eq. N" / "Eqs. N" / "Eq N". It is tagged when the words just
# before it on the same line name a paper: TPDS, AccelWattch, CRISP, Arafa, MICRO'21,
# MICRO'15 (optionally possessive, with a year or venue, and with section, figure or table
# references between: "AccelWattch (MICRO'21 §4.6, Eqs. 6-8)", "TPDS'19 §4.6, Fig. 12, Eq. 11").
# Text inside double-quoted string literals is skipped: it is program output (help texts,
# report text, error messages), which this check does not change.
#
# Usage: scripts/check_equation_tags.sh [--count] [DIR|FILE...]   (default: pipeline stages
# tests microbench, relative to the repository root; in a directory the C++ sources are read, a
# file named is read whatever its extension). Prints FILE:LINE: text for every untagged
# reference and exits 1 when there is one; --count prints the tagged/untagged totals instead
# (always exits 0). CTest runs it as EquationTags (tests/CMakeLists.txt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
count=0
if [[ "${1:-}" == "--count" ]]; then
  count=1
  shift
fi
dirs=("$@")
if [[ ${#dirs[@]} -eq 0 ]]; then dirs=(pipeline stages tests microbench); fi
cd "$root"
files=()
for d in "${dirs[@]}"; do
  if [[ -f "$d" ]]; then
    files+=("$d")
    continue
  fi
  while IFS= read -r -d '' f; do files+=("$f"); done < <(
    find "$d" -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \
      -o -name '*.cpp' \) -print0 | sort -z)
done
COUNT="$count" perl -CSD -e '
  use strict;
  use utf8;
  my $paper = qr/(?:TPDS|AccelWattch|CRISP|Arafa|MICRO\x2721|MICRO\x2715)(?:\x27s|\x27\d\d)?/;
  my $venue = qr/(?:\s+\(?(?:MICRO\x27\d\d|TPDS(?:\x27\d\d)?|\d{4})\)?)?/;
  my $between = qr/(?:[,:;]?\s+(?:§\s?[\d.]+(?:[-–][\d.]+)?|Fig\.\s?\d+|Table\s?\d+))*/;
  my $tagged_before = qr/$paper$venue$between[,:;]?\s+\(?$/;
  my ($tagged, $untagged) = (0, 0);
  for my $f (@ARGV) {
    open my $fh, "<:encoding(UTF-8)", $f or die "$f: $!";
    while (my $l = <$fh>) {
      chomp $l;
      (my $code = $l) =~ s/"(?:[^"\\]|\\.)*"/""/g;   # string literals are output: skipped
      while ($code =~ /\bEqs?(?:\.\s?|\s)\(?\d+\b/g) {
        my $before = substr($code, 0, $-[0]);
        if ($before =~ $tagged_before) { ++$tagged; next; }
        ++$untagged;
        print "$f:$.: $l\n" unless $ENV{COUNT};
      }
    }
  }
  if ($ENV{COUNT}) {
    my $all = $tagged + $untagged;
    printf "equation references: %d, tagged: %d (%.0f%%), untagged: %d\n", $all, $tagged,
        $all ? 100.0 * $tagged / $all : 100.0, $untagged;
    exit 0;
  }
  if ($untagged) {
    print STDERR "$untagged equation reference(s) without their paper (write \"TPDS Eq. 4\", \"AccelWattch Eq. 12\", \"CRISP Eq. 3\", \"Arafa Eq. 1\")\n";
    exit 1;
  }
' "${files[@]}"
