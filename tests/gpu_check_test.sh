#!/usr/bin/env bash
# scripts/gpu-check.sh's presets without a GPU: fake opmeter, test binary, nvidia-smi and
# compute-sanitizer. A preset never outlasts its budget, a failing or stopped step never stops the
# next, the raw results come packed in one file, and the sanitize step runs the command lines
# `opmeter check --sanitize` prints, in the results folder.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/build/tests"
cat > "$tmp/bin/nvidia-smi" <<'SH'
#!/bin/sh
echo "Fake GPU"
SH
cat > "$tmp/bin/compute-sanitizer" <<'SH'
#!/bin/sh
echo "sanitizer $*" >> sanitizer-ran.txt
SH
cat > "$tmp/build/opmeter" <<'SH'
#!/bin/bash
case "$*" in
  "check --sanitize") echo "# a comment line"
                      echo "compute-sanitizer --tool memcheck $0 check --device cuda:0 --filter 'a' -o sanitize/a"
                      echo "compute-sanitizer --tool racecheck $0 check --device cuda:0 --filter 'b' -o sanitize/b" ;;
  check*) echo "FAIL"; exit 1 ;;
  *) echo "ran $*" ;;
esac
SH
cat > "$tmp/build/tests/opmeter_tests" <<'SH'
#!/bin/bash
case "$*" in *ActivationCuda*) exec sleep 60 ;; esac   # mltests: runs past every budget
echo "tests $*"
SH
chmod +x "$tmp"/bin/* "$tmp/build/opmeter" "$tmp/build/tests/opmeter_tests"
export PATH="$tmp/bin:$PATH"
fail=0
expect() { if ! eval "$1"; then echo "FAILED: $1"; fail=1; fi; }

# The triage preset with a 4 s budget: check fails, tests pass, mltests is stopped, the rest skipped.
t0=$SECONDS
OUT="$tmp/out" PRESET_BUDGET_S=4 bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/triage" triage > "$tmp/log" 2>&1
rc=$?
took=$((SECONDS - t0))
steps="$tmp/res/triage/steps.tsv"
expect '[ "$rc" -eq 1 ]'
expect '[ "$took" -le 20 ]'  # 4 s of budget, 10 s of grace after SIGINT at most
expect 'grep -qP "^check\t1\t" "$steps"'
expect 'grep -qP "^tests\t0\t" "$steps"'
expect 'grep -qP "^mltests\t124\t" "$steps"'
expect 'grep -qP "^sanitize-commands\tskipped\t" "$steps"'
expect 'grep -qP "^graph-layernorm-cuda\tskipped\t" "$steps"'
expect '[ -f "$tmp/out/gpu-check-triage.tar.gz" ]'
expect 'tar -tzf "$tmp/out/gpu-check-triage.tar.gz" | grep -x "triage/steps.tsv" > /dev/null'
expect 'grep -q -- "--gtest_repeat=1 " "$tmp/res/triage/gpu-tests.txt"'  # the GPU-side tests once

# Old step names, no budget: sanitize runs each printed command line in the results folder.
PACK="$tmp/steps.tar.gz" bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/steps" sanitize quick > "$tmp/log2" 2>&1
rc=$?
expect '[ "$rc" -eq 0 ]'
expect '[ "$(wc -l < "$tmp/res/steps/sanitizer-ran.txt")" -eq 2 ]'
expect 'grep -q "racecheck" "$tmp/res/steps/sanitizer-ran.txt"'
expect 'grep -q "^ran run --suite quick" "$tmp/res/steps/quick.md"'
expect '[ -f "$tmp/steps.tar.gz" ]'
[ "$fail" -eq 0 ] || { echo "--- triage log"; cat "$tmp/log"; echo "--- steps log"; cat "$tmp/log2"; }
exit $fail
