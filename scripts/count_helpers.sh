#!/bin/bash
# Counts the hand-written helpers outside pipeline/util that issue 37 item 4 gave one home each:
# statistics, text helpers (and byte-order-mark literals), number-to-text functions, the
# `*error = ...` option rules and the string compares of the model's method, solver and loss.
# Usage: scripts/count_helpers.sh [REV]   (REV: a commit; none: the working tree)
set -euo pipefail
rev=${1:-}
g() { git grep -nE "$1" $rev -- pipeline ':!pipeline/util' || true; }
echo "statistics: $(g '^(static |inline )?(double|std::pair<double, double>) +(Mean|MeanSd|SampleStdDev|PopulationStdDev|Pearson|PearsonR|Median|Quantile|BootstrapPercentile)\(' | grep -vc '\.h:')"
echo "text: $(g '^(static |inline )?(bool|std::string|void) +(EqualsIgnoreCase|Printable|EscapeControlBytes|StripByteOrderMark|CsvField|CsvText)\(' | wc -l) + byte-order-mark literals $(g 'xEF.xBB.xBF' | wc -l)"
echo "number-to-text: $(g '^(static |inline )?std::string +(Number|NumberCell|Cell|Time|Exact)\(double' | wc -l)"
echo "option rules (*error = ...): $(g '\*error = ' | wc -l)"
echo "method/solver/loss string compares: $(g '(method|solver|loss) (==|!=) "|\.(method|solver|loss) = "' | wc -l)"
