#!/usr/bin/env bash
# Times `opmeter report` and `opmeter compare` on two runs of 10,000 synthetic cases each
# (goal: <= 2 s each; report.html <= 3 MB plus its data). Usage: bench/report_speed.sh [build dir]
set -euo pipefail
build=${1:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bench/report_fixture" "$work" 10000
du -h "$work/base/results.json"
for i in 1 2 3; do
  /usr/bin/time -f "report: %e s wall, %M KiB peak RSS" "$build/opmeter" report "$work/base" -o "$work/report.html"
done
for i in 1 2 3; do
  /usr/bin/time -f "compare: %e s wall, %M KiB peak RSS" "$build/opmeter" compare "$work/base" "$work/new" -o "$work/compare.md" || true
done
ls -l "$work/report.html" "$work/report.md" "$work/compare.md"
# The page without its data: the libraries, styles and scripts.
"$build/bench/report_fixture" "$work/empty" 1 >/dev/null
"$build/opmeter" report "$work/empty/base" -o "$work/empty.html" 2>/dev/null
ls -l "$work/empty.html"
