#!/usr/bin/env bash
# scripts/gpu-check.sh's presets without a GPU: fake opmeter, test binary, nvidia-smi and
# compute-sanitizer. A preset never outlasts its budget, a failing or stopped step never stops the
# next, the raw results come packed in one file, the sanitize step runs the command lines
# `opmeter check --sanitize` prints, in the results folder, a stopped test step keeps its log
# (line-buffered, each test named), a run stopped from outside packs what it finished, and check
# resumes what the same build checked before.
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
  "check --resume "*) [ -f "$3/refuse" ] && { echo "refused: another GPU" >&2; exit 2; }
                     echo "resumed $3" ;;
  "check --device cuda:0 --"*" -o "*) echo '{"cases": []}' > "$7/check.json"; echo "FAIL"; exit 1 ;;
  check*) echo "unexpected: $*"; exit 3 ;;
  *) echo "ran $*" ;;
esac
SH
cat > "$tmp/build/tests/opmeter_tests" <<'SH'
#!/bin/bash
# mltests: names its test, as GoogleTest does, through a program whose stdout is block-buffered
# into a file (grep) unless stdbuf makes it line-buffered, then runs past every budget.
case "$*" in *LinearCuda*) { echo "[ RUN      ] LinearCuda.Slow"; exec sleep 60; } | grep RUN; exit ;; esac
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
expect 'grep -q "RUN.*LinearCuda.Slow" "$tmp/res/triage/gpu-ml-tests.txt"'  # the test it was stopped in
expect '! grep -q -- "--gtest_brief" "$tmp/res/triage/gpu-tests.txt"'
expect 'grep -qP "^mltests-sweeps\tskipped\t" "$steps"'
expect 'grep -qP "^sanitize-commands\tskipped\t" "$steps"'
expect 'grep -qP "^graph-layernorm-cuda\tskipped\t" "$steps"'
expect '[ -f "$tmp/out/gpu-check-triage.tar.gz" ]'
expect 'tar -tzf "$tmp/out/gpu-check-triage.tar.gz" | grep -x "triage/steps.tsv" > /dev/null'
expect 'grep -qE -- "--gtest_repeat=1( |$)" "$tmp/res/triage/gpu-tests.txt"'  # the GPU-side tests once

# Stopped from outside (SIGTERM; SIGINT from a `timeout` is the same trap, but a script started
# with & here ignores SIGINT) in a step without a budget: the step is stopped at once, its log
# kept, and what was finished is packed (exit 124). The signal comes once mltests has named its
# test, not after a fixed time: a loaded machine can take seconds to start the script (it imports
# torch to find cuDNN).
PACK="$tmp/stopped.tar.gz" bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/stopped" \
  tests mltests quick > "$tmp/log-stopped" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "LinearCuda.Slow" "$tmp/res/stopped/gpu-ml-tests.txt" 2>/dev/null && break
  sleep 0.1
done
t0=$SECONDS
kill -TERM "$pid"
wait "$pid"
rc=$?
took=$((SECONDS - t0))
expect '[ "$rc" -eq 124 ] && [ "$took" -le 6 ]'
expect 'grep -qP "^tests\t0\t" "$tmp/res/stopped/steps.tsv" && grep -qP "^mltests\tstopped\t" "$tmp/res/stopped/steps.tsv"'
expect '! grep -q "^quick" "$tmp/res/stopped/steps.tsv"'
expect 'tar -xzOf "$tmp/stopped.tar.gz" stopped/gpu-ml-tests.txt | grep -q "RUN.*LinearCuda.Slow"'
expect 'tar -xzOf "$tmp/stopped.tar.gz" stopped/steps.tsv | grep -qP "^mltests\tstopped\t"'

# Old step names, no budget: sanitize runs each printed command line in the results folder.
PACK="$tmp/steps.tar.gz" bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/steps" sanitize quick > "$tmp/log2" 2>&1
rc=$?
expect '[ "$rc" -eq 0 ]'
expect '[ "$(wc -l < "$tmp/res/steps/sanitizer-ran.txt")" -eq 2 ]'
expect 'grep -q "racecheck" "$tmp/res/steps/sanitizer-ran.txt"'
expect 'grep -q "^ran run --suite quick" "$tmp/res/steps/quick.md"'
expect '[ -f "$tmp/steps.tar.gz" ]'
# check resumes OUT_DIR/check when the same build wrote it, starts afresh for another build (the old
# folder kept as check-previous) or when opmeter refuses to resume it, and CHECK_FROM seeds it.
run_check() { bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$1" check >> "$tmp/log3" 2>&1; }
c="$tmp/res/c"
run_check "$c"
expect '[ -f "$c/check/check.json" ] && [ -f "$c/check/build.sha256" ]'
expect 'grep -qF "check --device cuda:0 --exclude ^[^/]+/torch_compile -o $c/check" "$c/commands.txt"'
run_check "$c"
expect 'grep -qx "resumed $c/check" "$c/check.txt"'
expect 'grep -qP "^check\t0\t" "$c/steps.tsv"'
CHECK_FROM="$c/check" run_check "$tmp/res/d"
expect 'grep -qx "resumed $tmp/res/d/check" "$tmp/res/d/check.txt"'
echo "# another build" >> "$tmp/build/opmeter"
run_check "$c"
expect 'grep -qF "check --device cuda:0 --exclude ^[^/]+/torch_compile -o $c/check" "$c/commands.txt"'
expect '[ -f "$c/check-previous/check.json" ]'
touch "$c/check/refuse"
run_check "$c"
expect '[ "$(grep -cP "^check\t" "$c/steps.tsv")" -eq 2 ]'  # refused (2), then afresh (1: the fake finds a FAIL)
expect 'grep -qP "^check\t2\t" "$c/steps.tsv" && grep -qP "^check\t1\t" "$c/steps.tsv"'
expect '[ -f "$c/check-previous/refuse" ] && [ ! -f "$c/check/refuse" ]'
# torch.compile's impls, left out of triage's check, are checked by their own step, into their own folder.
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/e" check-compile >> "$tmp/log3" 2>&1
expect 'grep -qF "check --device cuda:0 --filter ^[^/]+/torch_compile -o $tmp/res/e/check-compile" "$tmp/res/e/commands.txt"'
expect '[ -f "$tmp/res/e/check-compile/check.json" ] && [ ! -d "$tmp/res/e/check" ]'
# PyTorch's cuDNN from the nvidia-cudnn wheel (a namespace package `nvidia`, as pip installs it)
# goes first in LD_LIBRARY_PATH, and the log says so.
mkdir -p "$tmp/py/nvidia/cudnn/lib" && touch "$tmp/py/nvidia/cudnn/lib/libcudnn.so.9"
PYTHONPATH="$tmp/py" bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/cudnn" tests > "$tmp/log-cudnn" 2>&1
expect 'grep -qF "gpu-check: cuDNN from $tmp/py/nvidia/cudnn/lib (first in LD_LIBRARY_PATH)" "$tmp/log-cudnn"'
# quant-ncu profiles each decode case under Nsight Compute, one step a case, through opmeter --profile.
cat > "$tmp/bin/ncu" <<'SH'
#!/bin/bash
echo "ncu $*"
SH
chmod +x "$tmp/bin/ncu"
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/n" quant-ncu >> "$tmp/log3" 2>&1
expect '[ "$(grep -cP "^quant-ncu-[0-9]\t0\t" "$tmp/res/n/steps.tsv")" -eq 8 ]'
expect 'grep -q "metrics smsp__inst_executed.sum,.*long_scoreboard_per_issue_active.ratio" "$tmp/res/n/quant-ncu-1.txt"'
expect 'grep -q "profile-from-start off.* run --profile --samples 10 --energy-window 0 --cooldown 0 --no-report --case linear/cuda_quant/" "$tmp/res/n/quant-ncu-1.txt"'
expect 'grep -q "^ncu --clock-control none " "$tmp/res/n/quant-ncu-1.txt"'  # the card's clocks are left alone
# quant-sass keeps each decode case's report and prints its SASS source page from it, then
# tinygemm's, its first launch in the worker. (With NCU_OLD set, the fake is an ncu that does not
# know --print-source.)
cat > "$tmp/bin/ncu" <<'SH'
#!/bin/bash
case "${NCU_OLD:-}$*" in 1*--print-source*) echo "unrecognised option '--print-source'" >&2; exit 1 ;; esac
echo "ncu $*"
prev=
for a in "$@"; do
  [ "$prev" = -o ] && echo report > "$a.ncu-rep"
  prev=$a
done
SH
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/sass" quant-sass >> "$tmp/log3" 2>&1
expect '[ "$(grep -cP "^quant-sass-[123]\t0\t" "$tmp/res/sass/steps.tsv")" -eq 3 ]'
expect '[ "$(grep -cP "^quant-sass-[123]-source\t0\t" "$tmp/res/sass/steps.tsv")" -eq 3 ]'
expect 'grep -q "section SourceCounters .*-o $tmp/res/sass/quant-sass-2 .*quant=int4wo-64" "$tmp/res/sass/quant-sass-2.txt"'
expect 'grep -q "target-processes all --kernel-name regex:tinygemm --launch-count 1 .*-o $tmp/res/sass/quant-sass-3 .*--case linear/torch_quant/.*quant=int4wo-64" "$tmp/res/sass/quant-sass-3.txt"'
expect 'grep -qx "ncu --import $tmp/res/sass/quant-sass-1.ncu-rep --page source --print-source sass --csv" "$tmp/res/sass/quant-sass-1.csv"'
expect '! grep -q "^quant-sass-1-page" "$tmp/res/sass/steps.tsv"'
# An ncu without --print-source: the source page in its default view.
NCU_OLD=1 bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/sass2" quant-sass >> "$tmp/log3" 2>&1
expect 'grep -qP "^quant-sass-1-source\t1\t" "$tmp/res/sass2/steps.tsv" && grep -qP "^quant-sass-2-page\t0\t" "$tmp/res/sass2/steps.tsv"'
expect 'grep -qx "ncu --import $tmp/res/sass2/quant-sass-2.ncu-rep --page source --csv" "$tmp/res/sass2/quant-sass-2-page.csv"'
# Where ncu cannot profile at all (gVisor), the first case says so and the others are skipped.
cat > "$tmp/bin/ncu" <<'SH'
#!/bin/bash
echo "==ERROR== Failed to initialize the profiler: LibraryNotLoaded"
SH
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/n2" quant-ncu >> "$tmp/log3" 2>&1
expect '[ "$(grep -c "^quant-ncu-" "$tmp/res/n2/steps.tsv")" -eq 1 ]'
expect 'grep -q "ncu cannot profile on this machine" "$tmp/res/n2/commands.txt"'
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/sass3" quant-sass >> "$tmp/log3" 2>&1
expect '[ "$(grep -c "^quant-sass-" "$tmp/res/sass3/steps.tsv")" -eq 1 ]'  # neither the second case nor tinygemm
# The same for compute-sanitizer: the first command line's refusal ends the sanitize step.
cat > "$tmp/bin/compute-sanitizer" <<'SH'
#!/bin/sh
echo "sanitizer $*" >> sanitizer-ran.txt
echo "========= Error: Device not supported"
SH
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/s2" sanitize >> "$tmp/log3" 2>&1
expect '[ "$(wc -l < "$tmp/res/s2/sanitizer-ran.txt")" -eq 1 ]'
expect 'grep -q "compute-sanitizer cannot run on this machine" "$tmp/res/s2/commands.txt"'
# quant-ksplit sweeps the decode kernel's split of K the same way.
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/q" quant-ksplit >> "$tmp/log3" 2>&1
expect 'grep -q "ran run bench/quant/gpu-llama-ksplit.yaml --energy-window 0 --cooldown 0 --out $tmp/res/q/quant-ksplit" "$tmp/res/q/quant-ksplit.md"'
# quant-graph runs without the energy window; a second call of the same build resumes its results.
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/q" quant-graph >> "$tmp/log3" 2>&1
expect 'grep -q "ran run bench/quant/gpu-llama-graph.yaml --energy-window 0 --cooldown 0 --out $tmp/res/q/quant-graph" "$tmp/res/q/quant-graph.md"'
mkdir -p "$tmp/res/q/quant-graph" && echo '{}' > "$tmp/res/q/quant-graph/results.jsonl"
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/q" quant-graph >> "$tmp/log3" 2>&1
expect 'grep -q "ran run bench/quant/gpu-llama-graph.yaml --energy-window 0 --cooldown 0 --resume $tmp/res/q/quant-graph" "$tmp/res/q/quant-graph.md"'
# cold-timing runs the bench where the build has it, and says so where it has not.
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/ct0" cold-timing >> "$tmp/log3" 2>&1
expect 'grep -q "cold-timing. skipped: no cuda_cold_timing" "$tmp/res/ct0/commands.txt"'
mkdir -p "$tmp/build/bench"  # where a build folder has it
printf '#!/bin/sh\necho "cold timing $*"\n' > "$tmp/build/bench/cuda_cold_timing"
chmod +x "$tmp/build/bench/cuda_cold_timing"
bash "$repo/scripts/gpu-check.sh" "$tmp/build" "$tmp/res/ct" cold-timing >> "$tmp/log3" 2>&1
expect 'grep -qP "^cold-timing\t0\t" "$tmp/res/ct/steps.tsv" && grep -q "cold timing 200" "$tmp/res/ct/cold-timing.txt"'
# A bundle (tar.xz) is unpacked once into a private folder named by its hash, and a later call
# reuses it; a link planted at that name is not followed.
mkdir -p "$tmp/bundle/opmeter/bin" "$tmp/bundle/opmeter/lib" "$tmp/tmpdir" "$tmp/elsewhere"
cp "$tmp/build/opmeter" "$tmp/bundle/opmeter/bin/"
tar -C "$tmp/bundle" -cJf "$tmp/b.tar.xz" opmeter
sum=$(sha256sum < "$tmp/b.tar.xz")
unpacked="$tmp/tmpdir/opmeter-bundle-${sum:0:16}"
TMPDIR="$tmp/tmpdir" bash "$repo/scripts/gpu-check.sh" "$tmp/b.tar.xz" "$tmp/res/b1" quick > "$tmp/log-b1" 2>&1
expect '[ -x "$unpacked/opmeter/bin/opmeter" ] && [ "$(stat -c %a "$unpacked")" = 700 ]'
expect 'grep -q "^ran run --suite quick" "$tmp/res/b1/quick.md"'
TMPDIR="$tmp/tmpdir" bash "$repo/scripts/gpu-check.sh" "$tmp/b.tar.xz" "$tmp/res/b2" quick > "$tmp/log-b2" 2>&1
expect 'grep -qF "the bundle unpacked in $unpacked by an earlier call" "$tmp/log-b2"'
expect 'grep -q "^ran run --suite quick" "$tmp/res/b2/quick.md"'
rm -rf "$unpacked" && ln -s "$tmp/elsewhere" "$unpacked"
TMPDIR="$tmp/tmpdir" bash "$repo/scripts/gpu-check.sh" "$tmp/b.tar.xz" "$tmp/res/b3" quick > "$tmp/log-b3" 2>&1
expect 'grep -qF "$unpacked is a link or another user'"'"'s: not used" "$tmp/log-b3"'
expect '[ -z "$(ls -A "$tmp/elsewhere")" ] && grep -q "^ran run --suite quick" "$tmp/res/b3/quick.md"'

[ "$fail" -eq 0 ] || { echo "--- triage log"; cat "$tmp/log"; echo "--- steps log"; cat "$tmp/log2"; echo "--- check log"; cat "$tmp/log3"; }
exit $fail
